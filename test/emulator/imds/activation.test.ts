// The realistic activation profile over HTTP: a VM's first request enables Scheduled Events after a delay.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Emulator } from '../../../src/emulator/emulator.js';
import type { ScheduledEventsDocument } from '../../../src/protocol/types.js';
import { computePath, eventsPath, startImds, type ImdsHarness } from '../../support/imds-server.js';

const SECOND = 1000;
const docOf = (res: { body: unknown }) => res.body as ScheduledEventsDocument;

describe('activation on a manual clock', () => {
  let h: ImdsHarness;
  afterEach(() => h.close());

  it('answers the first request at once with an empty document; the events show once the delay has passed', async () => {
    h = await startImds({ activation: { mode: 'realistic' } });
    h.engine.createOperation({ type: 'freeze', vms: ['vm0'] });
    assert.equal(h.engine.activationOf('vm0').status, 'disabled');

    const started = Date.now();
    const first = await h.client.get(eventsPath());
    assert.ok(Date.now() - started < 1000, 'a manual clock holds no request');
    assert.equal(first.status, 200);
    assert.deepEqual(first.body, { DocumentIncarnation: 1, Events: [] });
    assert.equal(h.engine.activationOf('vm0').status, 'enabling');

    // The default delay is the seed's two minutes.
    h.clock.advance(120 * SECOND - 1);
    assert.deepEqual(docOf(await h.client.get(eventsPath())).Events, []);
    h.clock.advance(1);
    const enabled = docOf(await h.client.get(eventsPath()));
    assert.equal(enabled.DocumentIncarnation, 2);
    assert.deepEqual(
      enabled.Events.map((e) => [e.EventType, e.EventStatus]),
      [['Freeze', 'Scheduled']],
    );
    assert.equal(h.engine.activationOf('vm0').status, 'enabled');
  });

  it('refuses an approval from a VM not yet enabled, which cannot see the event; it counts as its first request', async () => {
    h = await startImds({ activation: { mode: 'realistic', firstCallDelaySeconds: 30 } });
    const id = h.engine.createOperation({ type: 'freeze', vms: ['vm0'] }).events[0]!;
    const refused = await h.client.approve(eventsPath(), [id]);
    assert.equal(refused.status, 400);
    assert.match((refused.body as { error: string }).error, /not an event that VM 'vm0' can see/);
    assert.equal(h.engine.activationOf('vm0').status, 'enabling');
    h.clock.advance(30 * SECOND);
    assert.equal((await h.client.approve(eventsPath(), [id])).status, 200);
    assert.equal(h.engine.event(id).status, 'Started');
  });

  it('does not count the compute endpoint, nor requests that are refused', async () => {
    h = await startImds({ activation: { mode: 'realistic' }, fleet: [{ name: 'a' }, { name: 'b' }] });
    assert.equal((await h.client.get(computePath(undefined, 'a'))).status, 200);
    assert.equal((await h.client.get(eventsPath(undefined, 'a'), { metadata: false })).status, 400);
    assert.equal((await h.client.get('/vms/a/metadata/scheduledevents?api-version=latest')).status, 400);
    h.faults.add({ vm: 'a', status: 500 });
    assert.equal((await h.client.get(eventsPath(undefined, 'a'))).status, 500);
    assert.equal(h.engine.activationOf('a').status, 'disabled');
    assert.equal(h.engine.activationOf('a').lastRequestAt, null);
    // Each VM is enabled by its own requests.
    assert.equal((await h.client.get(eventsPath(undefined, 'a'))).status, 200);
    assert.equal(h.engine.activationOf('a').status, 'enabling');
    assert.equal(h.engine.activationOf('b').status, 'disabled');
  });

  it('with activation off, every VM sees its events from the first request', async () => {
    h = await startImds();
    h.engine.createOperation({ type: 'freeze', vms: ['vm0'] });
    assert.equal(docOf(await h.client.get(eventsPath())).Events.length, 1);
    assert.deepEqual(h.engine.activationOf('vm0'), { status: 'enabled', enabledAt: null, enablingAt: null, lastRequestAt: null });
  });
});

describe('activation on a system clock', () => {
  it('holds the first request for the scaled delay, then answers with the events; the next is not held', async () => {
    // 60 s at timing x60: a one-second hold.
    const emulator = await Emulator.create({
      timingFactor: 60,
      activation: { mode: 'realistic', firstCallDelaySeconds: 60 },
      fleet: [{ name: 'a' }, { name: 'b' }],
      rateLimit: 0,
    });
    try {
      const { imdsUrl, controlUrl } = await emulator.listen({
        imds: { host: '127.0.0.1', port: 0 },
        control: { host: '127.0.0.1', port: 0 },
      });
      emulator.engine.createOperation({ type: 'freeze', vms: ['a'] });
      const get = async (vm: string) => {
        const started = Date.now();
        const res = await fetch(`${imdsUrl}${eventsPath(undefined, vm)}`, { headers: { Metadata: 'true' } });
        return { ms: Date.now() - started, status: res.status, doc: (await res.json()) as ScheduledEventsDocument };
      };
      const vmState = async (vm: string) =>
        (await (await fetch(`${controlUrl}/v1/vms/${vm}`)).json()) as { scheduledEvents: string; lastRequestAt: string | null };

      assert.equal((await vmState('a')).scheduledEvents, 'disabled');
      const held = get('a');
      // Another VM's first request is held on its own, not queued behind a's.
      const other = get('b');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const during = await vmState('a');
      assert.equal(during.scheduledEvents, 'enabling');
      assert.equal(typeof during.lastRequestAt, 'string');

      const first = await held;
      assert.equal(first.status, 200);
      assert.ok(first.ms >= 990, `held ${first.ms} ms`);
      assert.ok(first.ms < 5000, `held ${first.ms} ms`);
      assert.deepEqual(
        first.doc.Events.map((e) => [e.EventType, e.Resources]),
        [['Freeze', ['a']]],
      );
      const b = await other;
      assert.ok(b.ms >= 990 && b.ms < 5000, `b held ${b.ms} ms`);

      const second = await get('a');
      assert.ok(second.ms < 500, `second request took ${second.ms} ms`);
      assert.deepEqual(second.doc, first.doc);
      assert.equal((await vmState('a')).scheduledEvents, 'enabled');
      const clock = (await (await fetch(`${controlUrl}/v1/clock`)).json()) as { activation: string };
      assert.equal(clock.activation, 'realistic');
    } finally {
      await emulator.close();
    }
  });

  it('answers at once when the delay is 0', async () => {
    const emulator = await Emulator.create({ activation: { mode: 'realistic', firstCallDelaySeconds: 0 } });
    try {
      const { imdsUrl } = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
      emulator.engine.createOperation({ type: 'freeze', vms: ['vm0'] });
      const res = await fetch(`${imdsUrl}${eventsPath()}`, { headers: { Metadata: 'true' } });
      assert.equal(((await res.json()) as ScheduledEventsDocument).Events.length, 1);
      assert.equal(emulator.engine.activationOf('vm0').status, 'enabled');
    } finally {
      await emulator.close();
    }
  });
});
