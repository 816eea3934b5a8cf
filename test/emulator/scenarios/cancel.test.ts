// Stopping a scenario run: POST /v1/scenarios/:id/cancel, and POST /v1/reset stopping every run.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { ManualClock, SystemClock, type Clock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { Timing } from '../../../src/emulator/engine/timing.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { caller } from '../../support/control.js';

async function start(clock: Clock) {
  const engine = new Engine({ clock, timing: new Timing(1), fleet: [{ name: 'vm0' }] });
  const app = buildControlServer({ engine, clock, faults: new FaultRegistry(), rateLimiter: new RateLimiter(5) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  after(() => app.close());
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const call = caller(base);
  return { engine, call };
}

/** Realistic timing on the system clock: a freeze at 0, then a step 15 minutes on that the test never waits for. */
const slow = {
  scenario: {
    name: 'slow',
    fleet: { vms: [{ name: 'app0' }] },
    steps: [
      { at: '0', operation: { type: 'freeze', vms: ['app0'] }, as: 'f' },
      { at: '15m', expect: { vm: 'app0', events: [{ ref: 'f', status: 'Started' }] } },
    ],
  },
};

async function waitForSteps(call: Awaited<ReturnType<typeof start>>['call'], run: string, n: number) {
  for (let i = 0; i < 200; i++) {
    const got = await call('GET', `/v1/scenarios/${run}`);
    if (got.json.report.steps.length >= n) return got;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`run ${run} did not reach ${n} steps`);
}

describe('stopping scenario runs', () => {
  test('POST /v1/scenarios/ID/cancel stops a running run at once; it ends aborted and keeps its events', async () => {
    const { engine, call } = await start(new SystemClock());
    const res = await call('POST', '/v1/scenarios', slow);
    assert.equal(res.status, 202, JSON.stringify(res.json));
    await waitForSteps(call, res.json.run, 1);
    const cancelled = await call('POST', `/v1/scenarios/${res.json.run.toUpperCase()}/cancel`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.json));
    assert.equal(cancelled.json.status, 'aborted');
    assert.equal(cancelled.json.report.aborted, true);
    assert.equal(cancelled.json.report.passed, false);
    assert.equal(cancelled.json.report.steps.length, 1);
    assert.notEqual(cancelled.json.report.finishedAt, null);
    assert.deepEqual((await call('GET', `/v1/scenarios/${res.json.run}`)).json, cancelled.json);
    assert.equal(engine.events().length, 1, 'the freeze it created stays');

    const again = await call('POST', `/v1/scenarios/${res.json.run}/cancel`);
    assert.equal(again.status, 409);
    assert.match(again.json.error, /already ended: aborted/);
  });

  test('cancel of an unknown run is 404, and of a finished manual-clock run 409', async () => {
    const { call } = await start(new ManualClock(Date.UTC(2026, 0, 5)));
    const missing = await call('POST', '/v1/scenarios/00000000-0000-0000-0000-000000000000/cancel');
    assert.equal(missing.status, 404);
    assert.match(missing.json.error, /no scenario run with id 00000000-/);
    const done = await call('POST', '/v1/scenarios', { name: 'live-migration' });
    assert.equal(done.json.status, 'passed');
    const late = await call('POST', `/v1/scenarios/${done.json.run}/cancel`);
    assert.equal(late.status, 409);
    assert.match(late.json.error, /already ended: passed/);
  });

  test('POST /v1/reset stops a running run before it resets the fleet', async () => {
    const { engine, call } = await start(new SystemClock());
    const res = await call('POST', '/v1/scenarios', slow);
    await waitForSteps(call, res.json.run, 1);
    const reset = await call('POST', '/v1/reset');
    assert.equal(reset.status, 200);
    const after = await call('GET', `/v1/scenarios/${res.json.run}`);
    assert.equal(after.json.status, 'aborted');
    assert.deepEqual([...engine.fleet.vms.keys()], ['vm0'], 'the emulator is back to its own fleet');
    assert.equal(engine.events().length, 0);
  });
});
