// POST /v1/scenarios and GET /v1/scenarios/:id on the control API.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { ManualClock, SystemClock, type Clock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { Timing } from '../../../src/emulator/engine/timing.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';

const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);

async function start(clock: Clock, factor = 1) {
  const engine = new Engine({ clock, timing: new Timing(factor), fleet: [{ name: 'vm0' }, { name: 'stale' }] });
  const faults = new FaultRegistry();
  faults.add({ status: 500 });
  const app = buildControlServer({ engine, clock, faults, rateLimiter: new RateLimiter(5) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  after(() => app.close());
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
    });
    const text = await res.text();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return { status: res.status, headers: res.headers, json: (text === '' ? undefined : JSON.parse(text)) as any };
  };
  return { engine, faults, call };
}

const inline = (steps: unknown[], fleet: unknown = { vms: [{ name: 'app0' }] }) => ({ scenario: { name: 'inline', fleet, steps } });

describe('POST /v1/scenarios on a manual clock', () => {
  test('runs a built-in to the end, answers its passing report, and has replaced the fleet', async () => {
    const { engine, faults, call } = await start(new ManualClock(T0));
    const res = await call('POST', '/v1/scenarios', { name: 'rolling-host-update' });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.json.status, 'passed');
    assert.equal(res.json.report.name, 'rolling-host-update');
    assert.equal(res.json.report.passed, true);
    assert.equal(res.json.report.clock, 'manual');
    assert.equal(res.json.report.steps.length, 13);
    const fleet = await call('GET', '/v1/fleet');
    assert.deepEqual(
      fleet.json.vms.map((vm: { name: string }) => vm.name),
      ['web0', 'web1', 'web2'],
    );
    assert.deepEqual(
      fleet.json.tenants.map((t: { name: string; faultDomainCount: number }) => [t.name, t.faultDomainCount]),
      [['web', 3]],
    );
    assert.equal(faults.size, 0, 'a scenario starts without the faults injected before it');
    // The emulator's own clock moved through the whole story.
    assert.ok(engine.now() >= T0 + 15 * 60_000);
    const again = await call('GET', `/v1/scenarios/${res.json.run}`);
    assert.deepEqual(again.json, res.json);
  });

  test('runs an inline scenario, and a failing one answers 200 with the failure in its report', async () => {
    const { call } = await start(new ManualClock(T0));
    const res = await call(
      'POST',
      '/v1/scenarios',
      inline([
        { at: 0, operation: { type: 'restart', vms: ['app0'] }, as: 'r' },
        { at: '15m', expect: { vm: 'app0', events: [{ ref: 'r', status: 'Scheduled' }] } },
      ]),
    );
    assert.equal(res.status, 200);
    assert.equal(res.json.status, 'failed');
    assert.match(res.json.report.steps[1].message, /status expected "Scheduled", got "Started"/);
  });

  test('an unknown name is 404, naming the built-ins', async () => {
    const { call } = await start(new ManualClock(T0));
    const res = await call('POST', '/v1/scenarios', { name: 'meteor-strike' });
    assert.equal(res.status, 404);
    assert.match(res.json.error, /no built-in scenario named 'meteor-strike'; built-ins: cancelled-maintenance, /);
  });

  test('a bad inline scenario is 400 naming the path and problem, and changes nothing', async () => {
    const { engine, call } = await start(new ManualClock(T0));
    const cases: [unknown, RegExp][] = [
      [inline([{ at: 0, reboot: { vm: 'app0' } }]), /^scenario\.steps\[0\]\.reboot: unknown action "reboot"/],
      [
        inline([
          { at: '10m', expect: { vm: 'app0', events: [] } },
          { at: '5m', expect: { vm: 'app0', events: [] } },
        ]),
        /^scenario\.steps\[1\]\.at: at 5m is earlier/,
      ],
      [inline([{ at: 0, cancel: 'nope' }]), /^scenario\.steps\[0\]\.cancel: unknown reference "nope"/],
      [
        inline([{ at: 0, expect: { vm: 'app0', events: [] } }], { vms: [{ name: 'app0', faultDomain: -1 }] }),
        /^scenario\.fleet\.vms\[0\]\.faultDomain: /,
      ],
      [{ scenario: 'not an object' }, /^scenario: /],
      [{}, /exactly one of "name" .* or "scenario"/],
      [{ name: 'live-migration', colour: 'red' }, /unknown field "colour"/],
    ];
    for (const [body, message] of cases) {
      const res = await call('POST', '/v1/scenarios', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.json.error, message);
    }
    assert.deepEqual([...engine.fleet.vms.keys()], ['vm0', 'stale']);
  });

  test('a timing other than the emulator’s is 409', async () => {
    const { call } = await start(new ManualClock(T0));
    const res = await call('POST', '/v1/scenarios', { name: 'live-migration', timing: 'dev' });
    assert.equal(res.status, 409);
    assert.match(res.json.error, /runs at timing x1, not x60/);
    assert.equal((await call('POST', '/v1/scenarios', { name: 'live-migration', timing: 'realistic' })).status, 200);
  });

  test('an unknown run id is 404', async () => {
    const { call } = await start(new ManualClock(T0));
    const res = await call('GET', '/v1/scenarios/00000000-0000-0000-0000-000000000000');
    assert.equal(res.status, 404);
    assert.match(res.json.error, /no scenario run/);
  });
});

describe('POST /v1/scenarios on the system clock', () => {
  test('answers 202 at once; the report fills in at GET /v1/scenarios/:id until it has passed', async () => {
    const { call } = await start(new SystemClock(), 600);
    const res = await call(
      'POST',
      '/v1/scenarios',
      inline([
        { at: 0, operation: { type: 'restart', vms: ['app0'] }, as: 'r' },
        { at: 0, expect: { vm: 'app0', events: [{ ref: 'r', status: 'Scheduled', notBefore: '+15m' }] } },
        // At x600 a simulated second is 10 nominal minutes, and NotBefore rounds up to one: look at 25m.
        { at: '25m', expect: { vm: 'app0', incarnation: 'changed', events: [{ ref: 'r', status: 'Started' }] } },
      ]),
    );
    assert.equal(res.status, 202, JSON.stringify(res.json));
    assert.equal(res.json.status, 'running');
    assert.equal(res.headers.get('location'), `/v1/scenarios/${res.json.run}`);
    assert.equal(res.json.report.clock, 'system');
    // The fleet is the scenario's from the moment it is accepted.
    assert.deepEqual(
      (await call('GET', '/v1/fleet')).json.vms.map((vm: { name: string }) => vm.name),
      ['app0'],
    );
    let run = res.json;
    for (let i = 0; i < 100 && run.status === 'running'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = (await call('GET', `/v1/scenarios/${res.json.run}`)).json;
    }
    assert.equal(run.status, 'passed', JSON.stringify(run.report.steps));
    assert.equal(run.report.steps.length, 3);
    assert.equal(run.report.steps[0].line, 0, 'an inline scenario has no lines');
  });

  test('a new scenario stops the one still running', async () => {
    const { call } = await start(new SystemClock(), 60);
    const first = await call('POST', '/v1/scenarios', { name: 'degraded-hardware' });
    assert.equal(first.status, 202);
    const second = await call('POST', '/v1/scenarios', inline([{ at: 0, expect: { vm: 'app0', events: [] } }]));
    assert.equal(second.status, 202);
    let run = first.json;
    for (let i = 0; i < 50 && run.status === 'running'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      run = (await call('GET', `/v1/scenarios/${first.json.run}`)).json;
    }
    assert.equal(run.status, 'aborted');
    assert.equal(run.report.aborted, true);
  });
});
