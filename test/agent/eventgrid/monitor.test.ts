// The Event Grid monitor: deliveries that arrive together share one journal write, each answered only
// once it is on disk. And its one rule of its own about time: an open event whose Completed or Canceled will
// never arrive (Event Grid gave up on it while the controller was down) is closed, and recovered from, once
// Event Grid can no longer deliver it, as the agent closes an event that left IMDS while it was away.
// Without this, such an event stayed open in the journal for ever, and a budget's slot with it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { EventGridMonitor, SWEEP_INTERVAL_MS, UNHEARD_END_AFTER_MS } from '../../../src/agent/eventgrid/monitor.js';
import { parseScheduledEvent } from '../../../src/client/index.js';
import type { ScheduledEventNotification } from '../../../src/protocol/eventgrid.js';
import { nodeFileOps, type FileOps } from '../../../src/shared/atomic-file.js';
import { servicesAt } from '../support.js';
import { Recorder, emitted, gridEvent } from './support.js';

const HOUR = 3600_000;
const T0 = Date.parse('2026-11-20T10:00:00Z');

/** gridEvent's envelope as the receiver hands it on: id, subject, time and data. */
function notice(
  eventId: string,
  status: 'Scheduled' | 'Started' | 'Completed',
  at: number,
  over: Record<string, unknown> = {},
): ScheduledEventNotification {
  const data = emitted(eventId, status, { NotBefore: status === 'Scheduled' ? new Date(at + 15 * 60_000).toUTCString() : '', ...over });
  const e = gridEvent(data, { time: new Date(at).toISOString() });
  return { id: e.id, subject: e.subject, time: e.eventTime, data: e.data };
}

/**
 * A monitor on a journal at `path`, its clock at `clock.now`, running: its sweep loop's waits are noted
 * and never end (the test sweeps by hand), so time moves only when the test moves it.
 */
function running(path?: string, ops?: FileOps) {
  const clock = { now: T0 };
  const env = servicesAt(path, ops !== undefined ? { ops } : {});
  const waits: number[] = [];
  const services = {
    ...env.services,
    now: () => clock.now,
    wait: (ms: number, signal: AbortSignal) => {
      waits.push(ms);
      return new Promise<boolean>((resolve) => signal.addEventListener('abort', () => resolve(false), { once: true }));
    },
  };
  const monitor = new EventGridMonitor({ ...services, durable: env.durable });
  const sink = new Recorder();
  const stop = new AbortController();
  const done = monitor.run(sink, stop.signal);
  return {
    ...env,
    clock,
    monitor,
    sink,
    waits,
    stop: async () => {
      stop.abort();
      await done;
    },
  };
}

describe('the Event Grid monitor: an end that never arrives', () => {
  test('a Started event with no Completed is closed as completed once Event Grid could no longer send it, and a late Completed is ignored', async () => {
    const m = running();
    assert.deepEqual(m.waits, [SWEEP_INTERVAL_MS], 'it sweeps every minute');
    assert.equal(await m.monitor.accept([notice('EV-1', 'Scheduled', T0)]), 'recorded');
    // Prepared and approved, as the runner would have journaled it.
    m.journal.ensure(
      parseScheduledEvent(emitted('EV-1', 'Scheduled').resourceInfo.properties as unknown as Record<string, unknown>),
      'reboots',
    );
    m.journal.approved('EV-1', 'any');
    m.clock.now = T0 + 15 * 60_000;
    assert.equal(await m.monitor.accept([notice('EV-1', 'Started', m.clock.now, { DurationInSeconds: 600 })]), 'recorded');
    const started = m.clock.now;
    // Just short of the duration and Event Grid's time to live, with an hour's margin: still open.
    m.clock.now = started + 600_000 + UNHEARD_END_AFTER_MS - 1;
    await m.monitor.sweep();
    assert.deepEqual(m.sink.calls, ['seen:scheduled:EV-1', 'seen:started:EV-1']);
    m.clock.now += 1;
    await m.monitor.sweep();
    assert.deepEqual(m.sink.calls.slice(2), ['gone:completed:EV-1']);
    assert.equal((await m.services.metrics.unheardEnds.get()).values.find((v) => v.labels.status === 'Started')?.value, 1);
    const recorded = m.journal.deliveries()!.events.find((e) => e.eventId === 'EV-1')!;
    assert.equal(recorded.unheard, true);
    assert.equal(recorded.endedAt, new Date(m.clock.now).toISOString());
    // Swept again: nothing more. A Completed arriving after all: older than an end, so ignored.
    await m.monitor.sweep();
    await m.monitor.accept([notice('EV-1', 'Completed', m.clock.now)]);
    assert.equal(m.sink.calls.length, 3);
    await m.stop();
  });

  test('a Scheduled event waits for its NotBefore, days ahead, before the day starts to count', async () => {
    // Seeds (Microsoft's page): "Azure attempts to give 7 days' notice" of degraded hardware: NotBefore "a few days in the future".
    const m = running();
    const notBefore = T0 + 7 * 24 * HOUR;
    await m.monitor.accept([notice('HW-1', 'Scheduled', T0, { NotBefore: new Date(notBefore).toUTCString(), EventType: 'Redeploy' })]);
    m.clock.now = T0 + UNHEARD_END_AFTER_MS + HOUR;
    await m.monitor.sweep();
    assert.deepEqual(m.sink.calls, ['seen:scheduled:HW-1'], 'a day after its notice, its start is days away: open');
    m.clock.now = notBefore + UNHEARD_END_AFTER_MS;
    await m.monitor.sweep();
    // Not prepared (no journal entry), a day past its NotBefore: the platform has started it by then.
    assert.deepEqual(m.sink.calls.slice(1), ['gone:completed:HW-1']);
    await m.stop();
  });

  test('a restart long after the last notice closes the event at once, from the journal', async () => {
    const first = running();
    await first.monitor.accept([notice('EV-2', 'Started', T0, { DurationInSeconds: 10 })]);
    await first.stop();
    const again = running(first.path);
    again.clock.now = T0 + 2 * 24 * HOUR;
    await again.monitor.sweep();
    assert.deepEqual(again.sink.calls, ['seen:started:EV-2', 'gone:completed:EV-2']);
    await again.stop();
  });

  test('the clock of whoever sent it cannot close an event early: the day counts from when it was taken, if later', async () => {
    const m = running();
    m.clock.now = T0 + 30 * HOUR;
    // A Started notice dated 30 hours back (a sender's clock behind ours, or a delivery long retried).
    await m.monitor.accept([notice('EV-3', 'Started', T0)]);
    await m.monitor.sweep();
    assert.deepEqual(m.sink.calls, ['seen:started:EV-3']);
    m.clock.now += UNHEARD_END_AFTER_MS;
    await m.monitor.sweep();
    assert.deepEqual(m.sink.calls, ['seen:started:EV-3', 'gone:completed:EV-3']);
    await m.stop();
  });
});

describe('the Event Grid monitor: one write for deliveries taken together', () => {
  test('deliveries taken in one turn share one journal write, and each resolves only once that write is on disk', async () => {
    // Every delivery used to rewrite and fsync the whole journal by itself. Event Grid sends up to several at once.
    let renames = 0;
    const m = running(undefined, { ...nodeFileOps, renameSync: (from, to) => (renames++, nodeFileOps.renameSync(from, to)) });
    const before = renames;
    const notices = [1, 2, 3, 4].map((i) => notice(`G-${i}`, 'Scheduled', T0));
    const taken = notices.map((n) => m.monitor.accept([n]));
    assert.equal(renames, before, 'nothing written yet');
    assert.deepEqual(m.sink.calls, [], 'and the runner not yet told');
    assert.deepEqual(await Promise.all(taken), ['recorded', 'recorded', 'recorded', 'recorded']);
    assert.equal(renames - before, 1, 'one write for the four');
    const onDisk = JSON.parse(readFileSync(m.path, 'utf8')) as { deliveries: { events: { eventId: string }[] } };
    assert.deepEqual(onDisk.deliveries.events.map((e) => e.eventId).sort(), ['G-1', 'G-2', 'G-3', 'G-4']);
    assert.deepEqual(m.sink.calls, ['seen:scheduled:G-1', 'seen:scheduled:G-2', 'seen:scheduled:G-3', 'seen:scheduled:G-4']);
    // A duplicate alone writes nothing, and resolves as its first copy did.
    assert.equal(await m.monitor.accept([notices[0]!]), 'recorded');
    assert.equal(renames - before, 1);
    assert.equal(m.sink.calls.length, 4);
    await m.stop();
  });

  test('an error in recording that is not a failed write answers 503, and the next delivery records it; the runner is told once', async () => {
    const m = running();
    const journal = m.journal;
    let fail = true;
    const faulty = new Proxy(journal, {
      get(target, key) {
        if (key === 'setDeliveries' && fail) {
          return () => {
            fail = false;
            throw new TypeError('a bug, not a full disk');
          };
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const monitor = new EventGridMonitor({ ...m.services, journal: () => faulty, durable: m.durable });
    const stop = new AbortController();
    const sink = new Recorder();
    const done = monitor.run(sink, stop.signal);
    const first = notice('B-1', 'Scheduled', T0);
    assert.equal(await monitor.accept([first]), 'unrecorded');
    // Told at once all the same: its id is taken, so Event Grid's retry will be dropped as a duplicate.
    assert.deepEqual(sink.calls, ['seen:scheduled:B-1']);
    // That retry: a duplicate, but what it carried is written now, and the runner still told once.
    assert.equal(await monitor.accept([first]), 'recorded');
    assert.deepEqual(sink.calls, ['seen:scheduled:B-1']);
    assert.equal(journal.deliveries()?.notifications[0]?.id, first.id.toLowerCase());
    stop.abort();
    await done;
    await m.stop();
  });
});
