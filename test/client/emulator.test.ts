// The client against the real emulator, in process, the way Azure's SDKs are tested against Azurite.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { ScheduledEventsClient, affects, leaderOf, type ClientOptions } from '../../src/client/index.js';
import type { ManualClock } from '../../src/shared/clock.js';
import { Emulator } from '../../src/emulator/emulator.js';
import { kinds, next, nextChanges } from './watch-items.js';

const LOOPBACK = { host: '127.0.0.1', port: 0 };
const FLEET = [
  { name: 'web0', tenant: 'web', tenantKind: 'availabilitySet' as const, faultDomain: 0, host: 'h0' },
  { name: 'web1', tenant: 'web', tenantKind: 'availabilitySet' as const, faultDomain: 1, host: 'h1' },
  {
    name: 'myss_3',
    tenant: 'myss',
    tenantKind: 'scaleSet' as const,
    faultDomain: 2,
    updateDomain: 3,
    host: 'h2',
    priority: 'Spot' as const,
  },
];

let emulator: Emulator;
let imdsUrl: string;

before(async () => {
  emulator = await Emulator.create({ fleet: FLEET, clock: 'manual', rateLimit: 0 });
  ({ imdsUrl } = await emulator.listen({ imds: LOOPBACK, control: LOOPBACK }));
});

after(() => emulator.close());

afterEach(() => {
  emulator.faults.clear();
  emulator.engine.reset();
});

function clock(): ManualClock {
  return emulator.clock as ManualClock;
}

/** A client for one VM of the fleet, by the emulator's path prefix; fetch is counted. */
function clientFor(
  vm: string,
  options: ClientOptions = {},
): { client: ScheduledEventsClient; statuses: number[]; requests: RequestInit[] } {
  const statuses: number[] = [];
  const requests: RequestInit[] = [];
  const client = new ScheduledEventsClient({
    endpoint: `${imdsUrl}/vms/${vm}`,
    fetch: async (url, init) => {
      requests.push(init ?? {});
      const res = await fetch(url, init);
      statuses.push(res.status);
      return res;
    },
    ...options,
  });
  return { client, statuses, requests };
}

describe('client against the emulator: reading and approving', () => {
  it('reads a typed document with NotBefore as a Date', async () => {
    const { client } = clientFor('web0');
    const op = emulator.engine.createOperation({ type: 'freeze', vms: ['web0'] });
    const doc = await client.getDocument();
    const [e] = doc.events;
    assert.equal(e?.id, op.events[0]);
    assert.equal(e?.status, 'Scheduled');
    assert.equal(e?.type, 'Freeze');
    assert.deepEqual(e?.resources, ['web0']);
    assert.equal(e?.notBefore?.getTime(), emulator.engine.events()[0]!.notBefore);
    assert.equal(e?.source, 'Platform');
    assert.equal(doc.incarnation, emulator.engine.incarnationOf('web0'));
    assert.equal(doc.etag, `"${doc.incarnation}"`);
    assert.ok(affects(e!, 'WEB0'));
    assert.equal(leaderOf(e!), 'web0');
  });

  it('sends If-None-Match once it has a document and answers a 304 from its copy', async () => {
    const { client, statuses, requests } = clientFor('web0');
    const first = await client.getDocument();
    const second = await client.getDocument();
    assert.deepEqual(statuses, [200, 304]);
    assert.deepEqual(second, first);
    assert.equal((requests[1]!.headers as Record<string, string>)['If-None-Match'], first.etag);
    emulator.engine.createOperation({ type: 'freeze', vms: ['web0'] });
    const third = await client.getDocument();
    assert.equal(statuses.at(-1), 200);
    assert.equal(third.events.length, 1);
    assert.ok(third.incarnation > first.incarnation);
  });

  it('reads an older api-version: underscored names, no Description', async () => {
    const { client } = clientFor('web0', { apiVersion: '2017-03-01' });
    emulator.engine.createOperation({ type: 'restart', vms: ['web0'] });
    const [e] = (await client.getDocument()).events;
    assert.deepEqual(e?.resources, ['_web0']);
    assert.equal(e?.description, '');
    assert.equal(e?.durationInSeconds, -1);
    assert.ok(affects(e!, 'web0'));
    assert.equal(leaderOf(e!), 'web0');
  });

  it('learns its own name, scale set and domains from compute metadata', async () => {
    const web1 = await clientFor('web1').client.getCompute();
    assert.equal(web1.name, 'web1');
    assert.equal(web1.vmScaleSetName, '');
    assert.equal(web1.platformFaultDomain, 1);
    assert.equal(web1.priority, 'Regular');
    assert.ok(web1.vmId.length > 0);
    const ss = await clientFor('myss_3').client.getCompute();
    assert.equal(ss.name, 'myss_3');
    assert.equal(ss.vmScaleSetName, 'myss');
    assert.equal(ss.platformFaultDomain, 2);
    assert.equal(ss.platformUpdateDomain, 3);
    assert.equal(ss.priority, 'Spot');
  });

  it('approves several events in one request, ids as given (lowercase too)', async () => {
    const { client, requests } = clientFor('web0');
    const a = emulator.engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
    const b = emulator.engine.createOperation({ type: 'restart', vms: ['web1'] }).events[0]!;
    await client.approve([a.toLowerCase(), b]);
    assert.equal(requests.length, 1);
    assert.deepEqual(JSON.parse(requests[0]!.body as string), { StartRequests: [{ EventId: a.toLowerCase() }, { EventId: b }] });
    assert.deepEqual(
      emulator.engine.events().map((e) => e.status),
      ['Started', 'Started'],
    );
    await client.approve([]);
    assert.equal(requests.length, 1, 'an empty list sends nothing');
  });
});

describe('client against the emulator: watch', () => {
  it('reports every change kind, keyed by EventId, with the approval coming from another VM of the tenant', async () => {
    const ac = new AbortController();
    const { client: web0, statuses } = clientFor('web0');
    const { client: web1 } = clientFor('web1');
    const items = web0.watch({ signal: ac.signal, intervalMs: 10, jitter: 0 });
    try {
      // Scheduled.
      const freeze = emulator.engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
      let changes = await nextChanges(items);
      assert.deepEqual(kinds(changes), [`scheduled:${freeze}`]);
      assert.equal(changes[0]!.previous, null);
      assert.ok(changes[0]!.event.notBefore instanceof Date);

      // web1 approves web0's event: one approval lets it proceed for every VM in Resources.
      const [seen] = (await web1.getDocument()).events;
      assert.equal(seen?.id, freeze);
      assert.equal(leaderOf(seen!), 'web0');
      await web1.approve(freeze);
      changes = await nextChanges(items);
      assert.deepEqual(kinds(changes), [`started:${freeze}`]);
      const start = changes[0]!;
      assert.equal(start.previous?.status, 'Scheduled');
      assert.equal(start.event.notBefore, null);
      assert.equal(emulator.engine.event(freeze).approvals[0]?.vm, 'web1');

      // Completed when it leaves after Started.
      clock().advance(60 * 60_000);
      emulator.engine.tick();
      changes = await nextChanges(items);
      assert.deepEqual(kinds(changes), [`completed:${freeze}`]);

      // Cancelled when it leaves while still Scheduled.
      const restart = emulator.engine.createOperation({ type: 'restart', vms: ['web0'] }).events[0]!;
      assert.deepEqual(kinds(await nextChanges(items)), [`scheduled:${restart}`]);
      emulator.engine.cancel(restart);
      changes = await nextChanges(items);
      assert.deepEqual(kinds(changes), [`cancelled:${restart}`]);
      assert.equal(changes[0]!.event.status, 'Scheduled');

      // Hardware failure: the event arrives already Started. Meanwhile the idle polls are answered 304.
      const pending = nextChanges(items);
      await delay(60);
      const failure = emulator.engine.createOperation({ type: 'hardware-failure', vms: ['web0'] }).events[0]!;
      changes = await pending;
      assert.deepEqual(kinds(changes), [`started:${failure}`]);
      assert.equal(changes[0]!.previous, null);
      assert.equal(changes[0]!.event.type, 'Reboot');
      emulator.engine.complete(failure);
      assert.deepEqual(kinds(await nextChanges(items)), [`completed:${failure}`]);
      assert.ok(statuses.filter((s) => s === 304).length >= 2);
    } finally {
      ac.abort();
    }
    assert.deepEqual(await items.next(), { done: true, value: undefined });
  });

  it('handles two events of one document together, in document order', async () => {
    const ac = new AbortController();
    const { client } = clientFor('web1');
    // Both exist before the first read, so they arrive in one document.
    const a = emulator.engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
    const b = emulator.engine.createOperation({ type: 'redeploy', vms: ['web1'] }).events[0]!;
    const items = client.watch({ signal: ac.signal, intervalMs: 10, jitter: 0 });
    try {
      const item = await next(items);
      assert.equal(item.type, 'changes');
      if (item.type !== 'changes') return;
      const order = item.document.events.map((e) => e.id);
      assert.deepEqual(new Set(order), new Set([a, b]));
      assert.deepEqual(
        item.changes.map((c) => c.event.id),
        order,
      );
      assert.deepEqual(
        item.changes.map((c) => c.kind),
        ['scheduled', 'scheduled'],
      );
      // Only web1's own event is its to prepare for.
      assert.deepEqual(
        item.changes.filter((c) => affects(c.event, 'web1')).map((c) => c.event.id),
        [b],
      );
      // Both start in one step: one item, two changes.
      clock().advance(60 * 60_000);
      emulator.engine.tick();
      const both = await next(items);
      assert.equal(both.type, 'changes');
      if (both.type !== 'changes') return;
      assert.equal(both.changes.length, 2);
    } finally {
      ac.abort();
    }
  });

  it('yields an error item when retries run out, and carries on', async () => {
    const ac = new AbortController();
    const errors: Error[] = [];
    const { client } = clientFor('web0', {
      sleep: (ms, signal) => delay(Math.min(ms, 5), undefined, { signal }),
      retry: { maxAttempts: 2 },
    });
    const items = client.watch({ signal: ac.signal, intervalMs: 10, jitter: 0, onError: (e) => errors.push(e) });
    try {
      emulator.faults.add({ vm: 'web0', status: 500, count: 2 });
      const item = await next(items);
      assert.equal(item.type, 'error');
      if (item.type !== 'error') return;
      assert.equal((item.error as { status?: number }).status, 500);
      assert.equal(item.health.consecutiveFailures, 1);
      assert.equal(item.health.lastSuccessAt, null);
      assert.equal(errors.length, 1);
      const id = emulator.engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
      assert.deepEqual(kinds(await nextChanges(items)), [`scheduled:${id}`]);
      assert.equal(client.health.consecutiveFailures, 0);
      assert.ok(client.health.lastSuccessAt instanceof Date);
    } finally {
      ac.abort();
    }
  });

  it('ends cleanly when aborted mid-request', async () => {
    const ac = new AbortController();
    const { client } = clientFor('web0');
    emulator.faults.add({ vm: 'web0', latencyMs: 10_000 });
    const items = client.watch({ signal: ac.signal });
    const pending = items.next();
    await delay(50);
    const started = performance.now();
    ac.abort();
    assert.deepEqual(await pending, { done: true, value: undefined });
    assert.ok(performance.now() - started < 1000);
    assert.equal(client.health.consecutiveFailures, 0, 'an abort is not a failure');
  });

  it('ends cleanly when aborted while sleeping between polls', async () => {
    const ac = new AbortController();
    const { client, statuses } = clientFor('web0');
    emulator.engine.createOperation({ type: 'freeze', vms: ['web0'] });
    const items = client.watch({ signal: ac.signal, intervalMs: 60_000 });
    assert.equal((await next(items)).type, 'changes');
    const pending = items.next();
    await delay(20);
    ac.abort();
    assert.deepEqual(await pending, { done: true, value: undefined });
    assert.deepEqual(statuses, [200]);
  });
});

describe('client against the emulator: retries by status (faults injected)', () => {
  function retrying(vm = 'web0', options: ClientOptions = {}) {
    const sleeps: number[] = [];
    const counted = clientFor(vm, {
      random: () => 0.5,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      ...options,
    });
    return { ...counted, sleeps };
  }

  it('410: retried, then the document', async () => {
    const { client, statuses, sleeps } = retrying();
    emulator.faults.add({ vm: 'web0', status: 410, count: 3 });
    const doc = await client.getDocument();
    assert.deepEqual(doc.events, []);
    assert.deepEqual(statuses, [410, 410, 410, 200]);
    assert.deepEqual(sleeps, [250, 500, 1000]);
  });

  it('410 for longer than goneForMs: ImdsError 410 after 70 s of (injected) time', async () => {
    let t = 1_000_000;
    const sleeps: number[] = [];
    const { client, statuses } = clientFor('web0', {
      random: () => 0.5,
      now: () => t,
      sleep: async (ms) => {
        sleeps.push(ms);
        t += ms;
      },
    });
    emulator.faults.add({ vm: 'web0', status: 410, count: 1000 });
    await assert.rejects(client.getDocument(), (err: unknown) => {
      const e = err as { name: string; status: number; imdsMessage: string; attempts: number };
      assert.equal(e.name, 'ImdsError');
      assert.equal(e.status, 410);
      assert.match(e.imdsMessage, /Gone/);
      assert.equal(e.attempts, statuses.length);
      return true;
    });
    assert.equal(t - 1_000_000, 70_000, 'the last retry lands on the 70 s mark');
    assert.ok(statuses.length > 5, 'not limited by maxAttempts');
    assert.ok(sleeps.every((ms) => ms <= 10_000));
  });

  it('429: backs off, then the document', async () => {
    const { client, statuses, sleeps } = retrying();
    emulator.faults.add({ vm: 'web0', status: 429, count: 2 });
    await client.getDocument();
    assert.deepEqual(statuses, [429, 429, 200]);
    assert.deepEqual(sleeps, [250, 500]);
  });

  it('500: backs off with jitter, then the document; retry settings apply', async () => {
    const { client, statuses, sleeps } = retrying('web0', { retry: { baseDelayMs: 100, maxDelayMs: 300 } });
    emulator.faults.add({ vm: 'web0', status: 500, count: 4 });
    await client.getDocument();
    assert.deepEqual(statuses, [500, 500, 500, 500, 200]);
    assert.deepEqual(sleeps, [50, 100, 150, 150]);
  });

  it('500 on every attempt: ImdsError 500 after maxAttempts, not a crash loop on the third', async () => {
    const { client, statuses } = retrying();
    emulator.faults.add({ vm: 'web0', status: 500, count: 5 });
    await assert.rejects(client.getDocument(), { name: 'ImdsError', status: 500, attempts: 5 });
    assert.equal(statuses.length, 5);
  });

  it('a dropped connection is retried', async () => {
    const { client, statuses, sleeps } = retrying();
    emulator.faults.add({ vm: 'web0', drop: true, count: 1 });
    await client.getDocument();
    assert.deepEqual(statuses, [200]);
    assert.equal(sleeps.length, 1);
  });

  it('dropped every time: ImdsUnavailableError with the attempts and the cause', async () => {
    const { client } = retrying('web0', { retry: { maxAttempts: 3 } });
    emulator.faults.add({ vm: 'web0', drop: true, count: 3 });
    await assert.rejects(client.getDocument(), (err: unknown) => {
      const e = err as { name: string; attempts: number; cause: unknown };
      assert.equal(e.name, 'ImdsUnavailableError');
      assert.equal(e.attempts, 3);
      assert.ok(e.cause instanceof Error);
      return true;
    });
  });

  it('a slow answer times out and is retried', async () => {
    const { client, statuses, sleeps } = retrying('web0', { timeoutMs: 50, firstCallTimeoutMs: 50 });
    emulator.faults.add({ vm: 'web0', latencyMs: 400, count: 1 });
    await client.getDocument();
    assert.deepEqual(statuses, [200]);
    assert.equal(sleeps.length, 1);
  });

  it('the first call waits out an activation delay; later calls use the normal timeout', async () => {
    const { client, statuses, sleeps } = retrying('web0', { timeoutMs: 50, firstCallTimeoutMs: 5000 });
    emulator.faults.add({ vm: 'web0', latencyMs: 300, count: 1 });
    await client.getDocument();
    assert.deepEqual(sleeps, []);
    emulator.faults.add({ vm: 'web0', latencyMs: 300, count: 1 });
    await client.getDocument();
    assert.equal(sleeps.length, 1);
    assert.equal(statuses.length, 2);
  });

  it('400 (unknown api-version): raised at once, typed, with IMDS message and body', async () => {
    const { client, statuses, sleeps } = retrying('web0', { apiVersion: '2099-01-01' });
    await assert.rejects(client.getDocument(), (err: unknown) => {
      const e = err as { name: string; status: number; imdsMessage: string; body: { 'newest-versions': string[] } };
      assert.equal(e.name, 'ImdsError');
      assert.equal(e.status, 400);
      assert.match(e.imdsMessage, /api-version is invalid/);
      assert.equal(e.body['newest-versions'][0], '2020-07-01');
      return true;
    });
    assert.deepEqual(statuses, [400]);
    assert.deepEqual(sleeps, []);
  });

  it('404 (unknown VM) and 400 (never-issued id on approve): not retried', async () => {
    const nobody = retrying('nobody');
    await assert.rejects(nobody.client.getDocument(), { name: 'ImdsError', status: 404 });
    assert.deepEqual(nobody.statuses, [404]);
    const { client, statuses } = retrying();
    await assert.rejects(client.approve('00000000-0000-0000-0000-000000000000'), (err: unknown) => {
      const e = err as { status: number; imdsMessage: string };
      assert.equal(e.status, 400);
      assert.match(e.imdsMessage, /never issued/);
      return true;
    });
    assert.deepEqual(statuses, [400]);
  });

  it('approve is retried on 500 like a read', async () => {
    const { client, statuses } = retrying();
    const id = emulator.engine.createOperation({ type: 'restart', vms: ['web0'] }).events[0]!;
    emulator.faults.add({ vm: 'web0', status: 500, count: 1 });
    await client.approve(id);
    assert.deepEqual(statuses, [500, 200]);
    assert.equal(emulator.engine.event(id).status, 'Started');
  });

  it('health tracks the time since the last good read', async () => {
    let t = 5_000;
    const { client } = clientFor('web0', { now: () => t, sleep: async () => {}, retry: { maxAttempts: 1 } });
    const fresh = client.health;
    assert.deepEqual(fresh, { lastSuccessAt: null, msSinceSuccess: null, consecutiveFailures: 0, lastError: null });
    await client.getDocument();
    t += 2_500;
    emulator.faults.add({ vm: 'web0', status: 500, count: 2 });
    await assert.rejects(client.getDocument());
    await assert.rejects(client.getDocument());
    const h = client.health;
    assert.equal(h.lastSuccessAt?.getTime(), 5_000);
    assert.equal(h.msSinceSuccess, 2_500);
    assert.equal(h.consecutiveFailures, 2);
    assert.equal((h.lastError as { status?: number } | null)?.status, 500);
  });
});
