import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { renderDocument } from '../../../src/protocol/render.js';
import { countChangeListeners, openSse, type SseMessage, type SseReader } from '../../support/sse.js';

const T0 = Date.parse('2024-01-01T00:00:00.000Z');

let app: FastifyInstance;
let engine: Engine;
let clock: ManualClock;
let base: string;
let listeners: () => number;

before(async () => {
  clock = new ManualClock(T0);
  engine = new Engine({
    clock,
    fleet: [{ name: 'a0', tenant: 'a', tenantKind: 'availabilitySet' }, { name: 'a1', tenant: 'a' }, { name: 'solo' }],
  });
  // Count live subscriptions so the test can see the stream let go of the engine.
  listeners = countChangeListeners(engine);
  app = buildControlServer({ engine, clock, faults: new FaultRegistry(), rateLimiter: new RateLimiter() }, { streamKeepAliveMs: 100 });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

after(async () => {
  await app.close();
});

async function connect(): Promise<{ sse: SseReader; abort: () => void; res: Response }> {
  return openSse(`${base}/v1/stream`);
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('hello on connect, then a document event per VM after an operation; disconnect unsubscribes', async (t) => {
  const { sse, abort } = await connect();
  t.after(abort);
  const hello = await sse.nextEvent();
  assert.equal(hello.event, 'hello');
  assert.deepEqual(hello.data, { now: new Date(clock.now()).toISOString() });
  await until(() => listeners() === 1, 'the stream to subscribe');

  const created = await fetch(`${base}/v1/operations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'freeze', vms: ['a0'] }),
  });
  assert.equal(created.status, 201);
  const { events } = (await created.json()) as { events: string[] };

  const got = new Map<string, SseMessage['data']>();
  while (got.size < 2) {
    const m = await sse.nextEvent();
    assert.equal(m.event, 'document');
    got.set(m.data.vm, m.data);
  }
  assert.deepEqual([...got.keys()].sort(), ['a0', 'a1'], 'both VMs of the tenant see the event; solo does not');
  const doc = engine.documentFor('a1');
  assert.deepEqual(got.get('a1'), {
    vm: 'a1',
    incarnation: doc.incarnation,
    document: renderDocument(doc.incarnation, doc.events, '2020-07-01'),
  });
  assert.equal(got.get('a0').document.Events[0].EventId, events[0]);

  abort();
  await until(() => listeners() === 0, 'the engine listener to be removed');
});

test('each transition of an advance arrives in order; a removed VM is reported', async (t) => {
  const { sse, abort } = await connect();
  t.after(abort);
  // Other VMs' changes (the earlier test's freeze) interleave; follow solo's.
  const nextSolo = async () => {
    for (;;) {
      const m = await sse.nextEvent();
      if (m.data.vm === 'solo') return m;
    }
  };
  assert.equal((await sse.nextEvent()).event, 'hello');
  await until(() => listeners() === 1, 'the stream to subscribe');

  engine.createOperation({ type: 'restart', vms: ['solo'] });
  const scheduled = await nextSolo();
  assert.equal(scheduled.data.vm, 'solo');
  assert.equal(scheduled.data.document.Events[0].EventStatus, 'Scheduled');

  // One advance past both NotBefore and the end: Started, then removed, as two documents.
  const advanced = await fetch(`${base}/v1/clock/advance`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ seconds: 60 * 60 }),
  });
  assert.equal(advanced.status, 200);
  const started = await nextSolo();
  assert.equal(started.data.document.Events[0].EventStatus, 'Started');
  assert.equal(started.data.document.Events[0].NotBefore, '');
  const ended = await nextSolo();
  assert.deepEqual(ended.data.document.Events, []);
  assert.ok(ended.data.incarnation > started.data.incarnation);
  assert.ok(started.data.incarnation > scheduled.data.incarnation);

  const removed = await fetch(`${base}/v1/vms/solo`, { method: 'DELETE' });
  assert.equal(removed.status, 200);
  assert.deepEqual((await nextSolo()).data, { vm: 'solo', removed: true });

  abort();
  await until(() => listeners() === 0, 'the engine listener to be removed');
});

test('sends keep-alive comments', async (t) => {
  const { sse, abort } = await connect();
  t.after(abort);
  assert.equal((await sse.next()).event, 'hello');
  const m = await sse.next(1000);
  assert.deepEqual(m, { event: ':', data: 'keep-alive' });
  abort();
  await until(() => listeners() === 0, 'the engine listener to be removed');
});

test('closing the server ends open streams', async () => {
  const clock2 = new ManualClock(T0);
  const engine2 = new Engine({ clock: clock2, fleet: [{ name: 'x' }] });
  const app2 = buildControlServer({ engine: engine2, clock: clock2, faults: new FaultRegistry(), rateLimiter: new RateLimiter() });
  await app2.listen({ host: '127.0.0.1', port: 0 });
  const res = await fetch(`http://127.0.0.1:${(app2.server.address() as AddressInfo).port}/v1/stream`);
  const reader = res.body!.getReader();
  await reader.read();
  await app2.close();
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done) break;
  }
});
