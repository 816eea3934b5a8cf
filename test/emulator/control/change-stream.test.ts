// GET /v1/stream?include=changes: a coalesced `changed` frame naming what moved, for views that refetch.
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { StreamChanged } from '../../../src/emulator/control/schemas.js';
import { ManualClock, SystemClock, type Clock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { Timing } from '../../../src/emulator/engine/timing.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { caller, type Call } from '../../support/control.js';
import { openSse, type SseMessage, type SseReader } from '../../support/sse.js';

const T0 = Date.parse('2024-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
/**
 * A stream counts as settled once no frame has come for this long. Frames of a change leave on the
 * next turn of the server's event loop, so on loopback they follow within a few ms.
 */
const QUIET_MS = 80;

/** Host h carries two customers, a and b: a job on it is shared. */
const FLEET: VmSpec[] = [
  { name: 'a0', tenant: 'a', tenantKind: 'availabilitySet', host: 'h' },
  { name: 'b0', tenant: 'b', tenantKind: 'availabilitySet', host: 'h' },
  { name: 'solo', host: 'other' },
];

interface Harness {
  engine: Engine;
  faults: FaultRegistry;
  base: string;
  /** Live engine mutation subscriptions, to see a stream let go of the engine. */
  mutationListeners: () => number;
  /** Engine mutations so far. */
  mutations: () => number;
  call: Call;
  /** Opens a stream, reads its hello, and closes it when the test ends. */
  stream(query?: string): Promise<{ sse: SseReader; abort: () => void }>;
}

async function start(t: TestContext, clock: Clock = new ManualClock(T0), factor = 1): Promise<Harness> {
  const engine = new Engine({ clock, timing: new Timing(factor), fleet: FLEET });
  let listeners = 0;
  let mutations = 0;
  engine.onMutation(() => void mutations++);
  const onMutation = engine.onMutation.bind(engine);
  engine.onMutation = (listener: () => void) => {
    listeners += 1;
    const off = onMutation(listener);
    return () => {
      listeners -= 1;
      return off();
    };
  };
  const faults = new FaultRegistry();
  const app = buildControlServer({ engine, clock, faults, rateLimiter: new RateLimiter() }, { streamKeepAliveMs: 60_000 });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.after(() => app.close());
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    engine,
    faults,
    base,
    mutationListeners: () => listeners,
    mutations: () => mutations,
    call: caller(base),
    async stream(query = '?include=changes') {
      const opened = await openSse(`${base}/v1/stream${query}`);
      t.after(opened.abort);
      const hello = await opened.sse.nextEvent();
      assert.equal(hello.event, 'hello');
      return opened;
    },
  };
}

const changed = (frames: SseMessage[]) => frames.filter((f) => f.event === 'changed');
const topicsOf = (frames: SseMessage[]) => changed(frames).map((f) => f.data.topics);

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('changed frames', () => {
  test('an idle stream sends nothing after hello', async (t) => {
    const h = await start(t);
    const { sse } = await h.stream();
    assert.deepEqual(await sse.settle(QUIET_MS), []);
  });

  test('an operation: its documents, then one changed frame naming the engine', async (t) => {
    const h = await start(t);
    const { sse } = await h.stream();
    const res = await h.call('POST', '/v1/operations', { type: 'restart', vms: ['solo'] });
    assert.equal(res.status, 201);
    const frames = await sse.settle(QUIET_MS);
    assert.deepEqual(
      frames.map((f) => f.event),
      ['document', 'changed'],
    );
    assert.equal(frames[0]!.data.vm, 'solo');
    assert.deepEqual(frames[1]!.data, { now: iso(T0), topics: ['engine'] });
    StreamChanged.parse(frames[1]!.data);
  });

  test('an approval on a shared-host job changes no document, but is a change of the engine', async (t) => {
    const h = await start(t);
    const op = await h.call('POST', '/v1/operations', { type: 'freeze', host: 'h' });
    assert.equal(op.status, 201);
    const [eventA] = op.json.events as string[];
    const incarnation = h.engine.incarnationOf('a0');
    const { sse } = await h.stream();
    // Tenant a approves; the job waits for b, so nothing any VM sees moves.
    h.engine.approve('a0', [eventA!]);
    assert.equal(h.engine.incarnationOf('a0'), incarnation);
    const frames = await sse.settle(QUIET_MS);
    assert.deepEqual(
      frames.map((f) => [f.event, f.data.topics]),
      [['changed', ['engine']]],
    );
    // Approving again records nothing new: no frame.
    h.engine.approve('a0', [eventA!]);
    assert.deepEqual(await sse.settle(QUIET_MS), []);
  });

  test('advancing the clock is a change of the clock, even when nothing fell due', async (t) => {
    const h = await start(t);
    const { sse } = await h.stream();
    assert.equal((await h.call('POST', '/v1/clock/advance', { seconds: 90 })).status, 200);
    const frames = await sse.settle(QUIET_MS);
    assert.deepEqual(
      frames.map((f) => f.data),
      [{ now: iso(T0 + 90_000), topics: ['clock'] }],
    );
  });

  test('the clock reports its own moves, whoever makes them; moving to the present is no move', async (t) => {
    const clock = new ManualClock(T0);
    const h = await start(t, clock);
    const { sse } = await h.stream();
    clock.advanceTo(T0 + 5_000);
    assert.deepEqual(
      (await sse.settle(QUIET_MS)).map((f) => f.data),
      [{ now: iso(T0 + 5_000), topics: ['clock'] }],
    );
    clock.advanceTo(T0);
    clock.advance(0);
    assert.deepEqual(await sse.settle(QUIET_MS), []);
  });

  test('an advance that starts and ends events: clock and engine in one frame, after the documents', async (t) => {
    const h = await start(t);
    await h.call('POST', '/v1/operations', { type: 'freeze', vms: ['solo'] });
    const { sse } = await h.stream();
    await h.call('POST', '/v1/clock/advance', { seconds: 60 * 60 });
    const frames = await sse.settle(QUIET_MS);
    assert.deepEqual(
      frames.map((f) => f.event),
      ['document', 'document', 'changed'],
      'Started, then ended, then what changed',
    );
    assert.deepEqual(frames[2]!.data, { now: iso(T0 + 60 * 60_000), topics: ['clock', 'engine'] });
  });

  test('faults: adding and clearing them; reset names the faults only when there were some', async (t) => {
    const h = await start(t);
    const { sse } = await h.stream();
    assert.equal((await h.call('POST', '/v1/faults', { status: 500 })).status, 201);
    assert.deepEqual(topicsOf(await sse.settle(QUIET_MS)), [['faults']]);
    assert.equal((await h.call('DELETE', '/v1/faults')).status, 200);
    assert.deepEqual(topicsOf(await sse.settle(QUIET_MS)), [['faults']]);
    // Clearing nothing, or a refused fault, changes nothing.
    assert.equal((await h.call('DELETE', '/v1/faults')).status, 200);
    assert.equal((await h.call('POST', '/v1/faults', { status: 404 })).status, 400);
    assert.deepEqual(await sse.settle(QUIET_MS), []);
    assert.equal((await h.call('POST', '/v1/reset')).status, 200);
    assert.deepEqual(topicsOf(await sse.settle(QUIET_MS)), [['engine']]);
    assert.equal((await h.call('POST', '/v1/faults', { latencyMs: 5 })).status, 201);
    await sse.settle(QUIET_MS);
    assert.equal((await h.call('POST', '/v1/reset')).status, 200);
    assert.deepEqual(topicsOf(await sse.settle(QUIET_MS)), [['engine', 'faults']]);
  });

  test('faults: IMDS using one up is a change too, so a view shows what is left', async (t) => {
    const h = await start(t);
    assert.equal((await h.call('POST', '/v1/faults', { status: 429, count: 2 })).status, 201);
    const { sse } = await h.stream();
    // What the IMDS server does for each request of solo's.
    h.faults.take('solo');
    assert.deepEqual(topicsOf(await sse.settle(QUIET_MS)), [['faults']]);
    assert.equal((await h.call('GET', '/v1/faults')).json.faults[0].remaining, 1);
    h.faults.take('solo');
    assert.deepEqual(topicsOf(await sse.settle(QUIET_MS)), [['faults']]);
    assert.deepEqual((await h.call('GET', '/v1/faults')).json.faults, []);
    // No fault applies: nothing changed, nothing is sent.
    h.faults.take('solo');
    assert.deepEqual(await sse.settle(QUIET_MS), []);
  });

  test('adding and removing VMs are changes of the engine', async (t) => {
    const h = await start(t);
    const { sse } = await h.stream();
    assert.equal((await h.call('POST', '/v1/vms', { name: 'new0' })).status, 201);
    assert.deepEqual(topicsOf(await sse.settle(QUIET_MS)), [['engine']]);
    assert.equal((await h.call('DELETE', '/v1/vms/new0')).status, 200);
    assert.deepEqual(topicsOf(await sse.settle(QUIET_MS)), [['engine']]);
  });

  test('reads change nothing', async (t) => {
    const h = await start(t);
    await h.call('POST', '/v1/operations', { type: 'freeze', vms: ['solo'] });
    const { sse } = await h.stream();
    for (const path of ['/v1/fleet', '/v1/events', '/v1/history', '/v1/operations', '/v1/clock', '/v1/faults', '/v1/scenarios']) {
      assert.equal((await h.call('GET', path)).status, 200, path);
    }
    assert.deepEqual(await sse.settle(QUIET_MS), []);
  });

  test('every open changes stream gets the frame', async (t) => {
    const h = await start(t);
    const one = await h.stream();
    const two = await h.stream();
    await h.call('POST', '/v1/faults', { status: 429 });
    assert.deepEqual(topicsOf(await one.sse.settle(QUIET_MS)), [['faults']]);
    assert.deepEqual(topicsOf(await two.sse.settle(QUIET_MS)), [['faults']]);
  });

  test('a scenario on the manual clock: its many changes leave as one or two frames', async (t) => {
    const h = await start(t);
    const { sse } = await h.stream();
    const before = h.mutations();
    const res = await h.call('POST', '/v1/scenarios', { name: 'rolling-host-update' });
    assert.equal(res.status, 200);
    assert.equal(res.json.status, 'passed');
    const mutations = h.mutations() - before;
    assert.ok(mutations >= 8, `the run changed the engine ${mutations} times`);
    const frames = await sse.settle(QUIET_MS);
    assert.ok(frames.filter((f) => f.event === 'document').length > 10, 'documents still go one by one');
    const frames2 = changed(frames);
    assert.ok(frames2.length >= 1 && frames2.length <= 2, `${frames2.length} changed frames for ${mutations} changes`);
    // The run replaced the fleet, moved the clock and began and ended (there were no faults to clear).
    assert.deepEqual([...new Set(frames2.flatMap((f) => f.data.topics))].sort(), ['clock', 'engine', 'scenarios']);
    assert.equal(frames2.at(-1)!.data.now, iso(h.engine.now()));
    assert.ok(h.engine.now() > T0);
    // Changed frames come after the documents of the burst.
    assert.equal(frames.at(-1)!.event, 'changed');
  });

  test('a scenario on the system clock: its start, its fault steps and its end', async (t) => {
    // At x600 a nominal minute is 100 ms.
    const h = await start(t, new SystemClock(), 600);
    const { sse } = await h.stream();
    const res = await h.call('POST', '/v1/scenarios', {
      scenario: {
        name: 'faulty',
        fleet: { vms: [{ name: 'app0' }] },
        steps: [
          { at: 0, operation: { type: 'restart', vms: ['app0'] }, as: 'r' },
          { at: '1m', fault: { status: 500, count: 2 } },
          { at: '2m', expect: { vm: 'app0', events: [{ ref: 'r', status: 'Scheduled' }] } },
        ],
      },
    });
    assert.equal(res.status, 202);
    const first = await sse.nextOf('changed');
    // Accepted: the run began and put its fleet in place.
    assert.deepEqual(first.data.topics, ['engine', 'scenarios']);
    const later: string[][] = [];
    while (!later.some((topics) => topics.includes('scenarios'))) later.push((await sse.nextOf('changed', 5000)).data.topics);
    assert.ok(
      later.some((topics) => topics.length === 1 && topics[0] === 'faults'),
      `the fault step shows on its own: ${JSON.stringify(later)}`,
    );
    assert.ok(
      later.some((topics) => topics.includes('engine')),
      'the operation step',
    );
    assert.deepEqual(later.at(-1), ['scenarios'], 'the end');
    assert.equal((await h.call('GET', `/v1/scenarios/${res.json.run}`)).json.status, 'passed');
  });
});

describe('stream options', () => {
  test('a plain stream sends no changed frames, only documents', async (t) => {
    const h = await start(t);
    const plain = await h.stream('');
    const withChanges = await h.stream();
    await h.call('POST', '/v1/operations', { type: 'freeze', vms: ['solo'] });
    await h.call('POST', '/v1/clock/advance', { seconds: 1 });
    await h.call('POST', '/v1/faults', { status: 500 });
    await h.call('DELETE', '/v1/faults');
    await h.call('POST', '/v1/scenarios', { name: 'user-reboot' });
    await h.call('POST', '/v1/reset');
    const got = await plain.sse.settle(QUIET_MS);
    assert.ok(got.length > 0);
    assert.deepEqual([...new Set(got.map((f) => f.event))], ['document']);
    assert.ok(changed(await withChanges.sse.settle(QUIET_MS)).length >= 5);
  });

  test('a plain stream does not subscribe to engine mutations', async (t) => {
    const h = await start(t);
    await h.stream('');
    assert.equal(h.mutationListeners(), 0);
    const { abort } = await h.stream();
    assert.equal(h.mutationListeners(), 1);
    abort();
    await until(() => h.mutationListeners() === 0, 'the changes stream to let go of the engine');
    // Changes after it went are no trouble.
    assert.equal((await h.call('POST', '/v1/faults', { status: 500 })).status, 201);
    assert.equal((await h.call('POST', '/v1/operations', { type: 'freeze', vms: ['solo'] })).status, 201);
  });

  test('a stream that goes away in the middle of a burst is not written to', async (t) => {
    const h = await start(t);
    const { abort } = await h.stream();
    h.engine.createOperation({ type: 'freeze', vms: ['solo'] });
    abort();
    await until(() => h.mutationListeners() === 0, 'the stream to close');
    // The server is unharmed.
    assert.equal((await h.call('GET', '/v1/clock')).status, 200);
  });

  for (const query of ['?include=bogus', '?include=', '?include=changes&include=changes', '?include=CHANGES']) {
    test(`${query} is a 400 with a JSON error`, async (t) => {
      const h = await start(t);
      const res = await h.call('GET', `/v1/stream${query}`);
      assert.equal(res.status, 400);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.match(res.json.error, /^include=.* is not known; the only value is "changes"$/);
      assert.equal(h.mutationListeners(), 0);
    });
  }
});
