// Event Grid as the source of events, for the controller: each notification the receiver takes becomes
// the runner's seen/gone, put in order, with Event Grid's duplicates dropped by id. What it took is in
// the journal (`deliveries`) before the receiver answers 200, so a delivery Event Grid counts as done is
// never forgotten, and a restart carries on from it as the agent does from its first IMDS read.
import { eventKey, parseScheduledEvent, type ScheduledEvent } from '../../client/index.js';
import type { PublishedStatus, ScheduledEventNotification } from '../../protocol/eventgrid.js';
import type { DurableJournal } from '../durable-journal.js';
import { outcomeWhileAway } from '../imds-monitor.js';
import { eventFromEntry } from '../journal.js';
import { eventLogger } from '../logger.js';
import type { EventMonitor, EventOutcome, EventSink, SeenKind } from '../monitor.js';
import type { AgentServices } from '../services.js';
import type { DeliveryRecord, SourcedEvent } from '../types.js';

/**
 * [choice] How long a notification id is remembered to drop its duplicates: a little over Event Grid's
 * default event time-to-live, 1440 minutes [azure] (RetryPolicy event_time_to_live_in_minutes = 1440),
 * past which Event Grid sends it no more.
 */
export const DEDUPE_WINDOW_MS = 25 * 3600_000;
/** [choice] At most this many ids are remembered (the oldest go first), so the journal stays small. */
export const DEDUPE_MAX_IDS = 10_000;

/**
 * [choice] How long past the time its next status was due an open event waits for it. Event Grid retries
 * a notification for at most its time to live, 1440 minutes [azure], then dead-letters or drops it: a
 * Completed or Canceled not taken by then (the controller was down, its webhook kept failing) never will
 * be. The event is then closed as the agent closes one that left IMDS while it was away (unheardEnd).
 */
export const UNHEARD_END_AFTER_MS = 25 * 3600_000;
/** [choice] How often open events are checked for an end that will not come. */
export const SWEEP_INTERVAL_MS = 60_000;

/**
 * [choice] Event Grid "doesn't guarantee order" [azure]: a status that comes before one already taken
 * for the event is ignored. Scheduled < Started < Completed | Canceled; an end is final.
 */
const RANK: Record<PublishedStatus, number> = { Scheduled: 0, Started: 1, Completed: 2, Canceled: 2 };
const END = 2;

function rank(status: string): number {
  return RANK[status as PublishedStatus] ?? 0;
}

/** What accept() made of a delivery: on disk, taken but not on disk yet (answer 503), or not running yet. */
export type Acceptance = 'recorded' | 'unrecorded' | 'not-ready';

export type EventGridMonitorOptions = Pick<AgentServices, 'log' | 'metrics' | 'now' | 'wait' | 'journal'> & { durable: DurableJournal };

type SinkCall = (sink: EventSink) => void;

export class EventGridMonitor implements EventMonitor {
  readonly #o: EventGridMonitorOptions;
  /** Notification id (lowercase) → when taken (epoch ms), oldest first. */
  readonly #ids = new Map<string, number>();
  /** Event key → what Event Grid last told of it. */
  readonly #events = new Map<string, SourcedEvent>();
  #sink: EventSink | null = null;
  /** A change not yet written, and the runner's calls that wait for it to be (#commit). */
  #dirty = false;
  #told: SinkCall[] = [];
  #nextWrite: Promise<Acceptance> | null = null;

  constructor(options: EventGridMonitorOptions) {
    this.#o = options;
    const record = options.journal().deliveries();
    for (const n of record?.notifications ?? []) this.#ids.set(n.id.toLowerCase(), Date.parse(n.at));
    for (const e of record?.events ?? []) this.#events.set(eventKey(e.eventId), e);
  }

  /** The event's ARM id (the notification's subject), for its approval; undefined for an event never told of. */
  subjectOf(eventId: string): string | undefined {
    return this.#events.get(eventKey(eventId))?.subject;
  }

  /** Carries on from the journal, then takes deliveries, and closes events whose end will not come, until `signal` aborts. */
  async run(sink: EventSink, signal: AbortSignal): Promise<void> {
    this.#reconcile(sink);
    this.#sink = sink;
    try {
      do {
        void this.sweep();
      } while (await this.#o.wait(SWEEP_INTERVAL_MS, signal));
    } finally {
      this.#sink = null;
    }
  }

  /**
   * Closes every open event whose next status is UNHEARD_END_AFTER_MS overdue: its end is taken as it
   * would have been from IMDS (outcomeWhileAway: Started, approved or past NotBefore is completed), so
   * recovery runs and a budget slot is given back. A notice of it arriving later is ignored, as any
   * notice after an end is. Run every SWEEP_INTERVAL_MS while the monitor runs; resolves once that is written.
   */
  sweep(): Promise<Acceptance> {
    if (this.#sink === null) return Promise.resolve('not-ready');
    const { journal, log, metrics, now } = this.#o;
    const at = now();
    for (const e of this.#events.values()) {
      if (e.endedAt !== null || at < nextStatusDue(e) + UNHEARD_END_AFTER_MS) continue;
      const last = toEvent(e.properties);
      const entry = journal().get(e.eventId);
      // A day past when its start was due at least: by the agent's rule (outcomeWhileAway), it has happened.
      const outcome: EventOutcome = entry !== undefined ? outcomeWhileAway(entry, at) : 'completed';
      e.endedAt = new Date(at).toISOString();
      e.unheard = true;
      metrics.unheardEnds.inc({ status: e.status });
      eventLogger(log, last).warn(
        { lastStatus: e.status, lastTakenAt: e.takenAt ?? e.time, outcome },
        `no Completed or Canceled arrived for the event, and Event Grid can no longer send one: closing it as ${outcome}`,
      );
      // The runner was told of every open event (accept or #reconcile): it is told of the end as from IMDS.
      this.#told.push((sink) => sink.gone(last, outcome));
      this.#dirty = true;
    }
    return this.#commit();
  }

  /**
   * Takes one delivery's scheduled-event notifications: duplicates dropped by id, the rest put in order,
   * then recorded in the journal and told to the runner. Resolves 'recorded' only once the journal is on
   * disk, with this delivery and every earlier one: an answer of 200 then loses nothing if the process dies.
   */
  accept(notifications: readonly ScheduledEventNotification[]): Promise<Acceptance> {
    if (this.#sink === null) return Promise.resolve('not-ready');
    const { metrics, now } = this.#o;
    for (const n of notifications) {
      const id = n.id.toLowerCase();
      if (this.#ids.has(id)) {
        // [azure] "These duplicate notifications can be identified by checking for the ID field."
        metrics.notifications.inc({ outcome: 'duplicate' });
        this.#o.log.debug({ notificationId: n.id }, 'a duplicate Event Grid notification: dropped');
        continue;
      }
      this.#ids.set(id, now());
      this.#dirty = true;
      const call = this.#apply(n);
      if (call !== null) this.#told.push(call);
    }
    // A duplicate too waits for the write that holds its first copy, or retries one that failed.
    return this.#commit();
  }

  /**
   * The next journal write, shared by every change made before it runs: deliveries that arrive together
   * (Event Grid sends several at once) share one write and one fsync, in place of one each. It runs once
   * the deliveries read in this turn of the event loop have been taken. The runner is told inside it, so
   * its own journal changes (the first sight of each event) are in the same write.
   */
  #commit(): Promise<Acceptance> {
    this.#nextWrite ??= new Promise((resolve) =>
      setImmediate(() => {
        this.#nextWrite = null;
        const { durable, journal, log } = this.#o;
        const calls = this.#told.splice(0);
        const sink = this.#sink;
        let told = false;
        try {
          // The runner's first sight of each event journals it too: one write for the deliveries and all that.
          durable.write(() =>
            journal().batch(() => {
              if (this.#dirty) {
                this.#dirty = false;
                this.#prune();
                journal().setDeliveries(this.#record());
              } else if (journal().pending) {
                // A change still held in memory only: try once more now.
                journal().flush();
              }
              // Told even when not on disk yet: a retry of it will be dropped as a duplicate, so this is its one telling.
              if (sink !== null) for (const call of calls) tell(call, sink, log);
              told = true;
            }),
          );
        } catch (err) {
          // Not a failed write (durable.write keeps those and retries): answered 503, and the next write tries again.
          this.#dirty = true;
          log.error({ err: (err as Error).message }, 'recording Event Grid deliveries in the journal failed');
        }
        // The ids are taken: a retry will be dropped as a duplicate, so the runner hears of these now or never.
        if (!told && sink !== null) for (const call of calls) tell(call, sink, log);
        resolve(this.#dirty || journal().pending ? 'unrecorded' : 'recorded');
      }),
    );
    return this.#nextWrite;
  }

  /** One new notification against what is known of its event: the runner's call, or null. */
  #apply(n: ScheduledEventNotification): SinkCall | null {
    const props = n.data.resourceInfo.properties;
    const key = eventKey(props.EventId);
    const prev = this.#events.get(key);
    const status = props.EventStatus;
    const event = toEvent(props as unknown as Record<string, unknown>);
    const log = eventLogger(this.#o.log, event).child({ notificationId: n.id, status });
    if (prev !== undefined) {
      const older =
        prev.endedAt !== null ||
        rank(status) < rank(prev.status) ||
        (rank(status) === rank(prev.status) && Date.parse(n.time) < Date.parse(prev.time));
      if (older) {
        this.#o.metrics.notifications.inc({ outcome: 'stale' });
        log.info({ known: prev.status }, 'a notification older than what is known of the event (Event Grid reorders): ignored');
        return null;
      }
    }
    this.#o.metrics.notifications.inc({ outcome: 'taken' });
    const ended = rank(status) === END;
    this.#events.set(key, {
      eventId: props.EventId,
      subject: n.subject,
      status,
      time: n.time,
      properties: { ...props },
      endedAt: ended ? new Date(this.#o.now()).toISOString() : null,
      takenAt: new Date(this.#o.now()).toISOString(),
    });
    if (ended) {
      const outcome: EventOutcome = status === 'Completed' ? 'completed' : 'cancelled';
      if (prev === undefined) {
        const entry = this.#o.journal().get(props.EventId);
        if (entry === undefined || entry.recoveredAt !== null) {
          log.info('the event ended before it was told of: nothing to prepare; a late notice of it will be ignored');
          return null;
        }
        return (sink) => sink.gone(eventFromEntry(entry), outcome);
      }
      // As the IMDS monitor does: the event as last seen in view (an end's NotBefore is empty).
      const last = toEvent(prev.properties);
      return (sink) => sink.gone(last, outcome);
    }
    const kind: SeenKind =
      prev !== undefined && rank(prev.status) === rank(status) ? 'updated' : status === 'Started' ? 'started' : 'scheduled';
    return (sink) => sink.seen(event, kind);
  }

  /**
   * At start: every event told of and not ended is seen again (the runner resumes it from its journal
   * entry, or prepares it if the last run died before it could); an event whose end was taken but whose
   * recovery did not finish is recovered now.
   */
  #reconcile(sink: EventSink): void {
    const { journal, log } = this.#o;
    const told = new Set<string>();
    for (const [key, e] of this.#events) {
      const event = toEvent(e.properties);
      if (e.endedAt === null) {
        told.add(key);
        sink.seen(event, e.status === 'Started' ? 'started' : 'scheduled');
        continue;
      }
      const entry = journal().get(e.eventId);
      if (entry === undefined || entry.recoveredAt !== null) continue;
      told.add(key);
      const outcome: EventOutcome = entry.outcome ?? (e.status === 'Completed' ? 'completed' : 'cancelled');
      eventLogger(log, event).info({ outcome }, 'the event ended before the last stop and its recovery has not finished: recovering');
      sink.unfinished(eventFromEntry(entry), outcome);
    }
    for (const entry of journal().entries()) {
      if (entry.recoveredAt !== null || entry.outcome === null || told.has(eventKey(entry.eventId))) continue;
      const event = eventFromEntry(entry);
      eventLogger(log, event).info({ outcome: entry.outcome }, 'finishing recovery cut short by the last stop');
      sink.unfinished(event, entry.outcome);
    }
  }

  /** Ids past the window or over the cap go; ended events past the window whose recovery is over go too. */
  #prune(): void {
    const cutoff = this.#o.now() - DEDUPE_WINDOW_MS;
    for (const [id, at] of this.#ids) {
      if (at >= cutoff && this.#ids.size <= DEDUPE_MAX_IDS) break;
      this.#ids.delete(id);
    }
    for (const [key, e] of this.#events) {
      if (e.endedAt === null || Date.parse(e.endedAt) >= cutoff) continue;
      const entry = this.#o.journal().get(e.eventId);
      if (entry === undefined || entry.recoveredAt !== null) this.#events.delete(key);
    }
  }

  #record(): DeliveryRecord {
    return {
      notifications: [...this.#ids].map(([id, at]) => ({ id, at: new Date(at).toISOString() })),
      events: [...this.#events.values()],
    };
  }
}

/** One call to the runner; a fault in it is logged, and the other calls of the write are still made. */
function tell(call: SinkCall, sink: EventSink, log: EventGridMonitorOptions['log']): void {
  try {
    call(sink);
  } catch (err) {
    log.error({ err: (err as Error).message }, 'the runner failed to take an Event Grid notification');
  }
}

/**
 * When the open event's next status was due (epoch ms): a Scheduled event starts by its NotBefore; a
 * Started one completes once its duration is over. From the later of the notification's own time and
 * when it was taken, so neither a sender's clock behind ours nor a late delivery closes it early.
 */
function nextStatusDue(e: SourcedEvent): number {
  const told = Math.max(Date.parse(e.time) || 0, e.takenAt !== undefined ? Date.parse(e.takenAt) || 0 : 0);
  if (e.status === 'Started') {
    const duration = Number(e.properties.DurationInSeconds);
    return told + (Number.isFinite(duration) && duration > 0 ? duration * 1000 : 0);
  }
  const notBefore = typeof e.properties.NotBefore === 'string' ? Date.parse(e.properties.NotBefore) : Number.NaN;
  return Number.isNaN(notBefore) ? told : Math.max(told, notBefore);
}

/** Event Grid's properties are IMDS's event fields: the client's own reading of them. */
function toEvent(properties: Record<string, unknown>): ScheduledEvent {
  return parseScheduledEvent(properties);
}
