// IMDS as the source of events: the document read every pollIntervalSeconds and diffed into changes,
// the first read reconciled with the journal. Apart from the runner, so another source can feed it.
import { EventTracker, eventKey, type EventChange, type EventsDocument, type ScheduledEventsClient } from '../client/index.js';
import { eventFromEntry } from './journal.js';
import { eventLogger } from './logger.js';
import type { EventMonitor, EventOutcome, EventSink } from './monitor.js';
import type { AgentServices } from './services.js';
import type { JournalEntry } from './types.js';

export interface ImdsMonitorOptions extends Pick<AgentServices, 'log' | 'metrics' | 'now' | 'wait' | 'journal'> {
  client: ScheduledEventsClient;
  /** Counts a failed read the client's fetch has not counted (imds-requests.ts). */
  countFailure: (err: unknown) => void;
  pollIntervalSeconds: number;
}

/**
 * How an event that vanished unseen ended (while the agent was not running, or between two polls).
 * It Started if the journal saw it Started, this VM approved it, or its NotBefore has passed;
 * otherwise it was cancelled.
 */
export function outcomeWhileAway(entry: JournalEntry, now: number): EventOutcome {
  if (entry.event.status === 'Started' || entry.approval !== null) return 'completed';
  const notBefore = entry.event.notBefore === null ? Number.NaN : Date.parse(entry.event.notBefore);
  return !Number.isNaN(notBefore) && notBefore <= now ? 'completed' : 'cancelled';
}

export class ImdsMonitor implements EventMonitor {
  readonly #o: ImdsMonitorOptions;

  constructor(options: ImdsMonitorOptions) {
    this.#o = options;
  }

  /**
   * Reads the document every pollIntervalSeconds and diffs it with the SDK's EventTracker (what
   * watch() does), but sees every read: the first document, even an empty one, is what tells a
   * restarted agent which of its journal's events ended while it was away.
   */
  async run(sink: EventSink, signal: AbortSignal): Promise<void> {
    const { client, log, metrics, wait } = this.#o;
    const tracker = new EventTracker();
    const intervalMs = this.#o.pollIntervalSeconds * 1000;
    let failures = 0;
    let first = true;
    while (!signal.aborted) {
      try {
        const doc = await client.getDocument({ signal });
        if (failures > 0) log.info({ failedReads: failures }, 'IMDS answers again');
        failures = 0;
        metrics.incarnation.set(doc.incarnation);
        if (first) {
          first = false;
          this.#reconcile(doc, sink);
        }
        const changes = tracker.apply(doc);
        if (changes.length > 0) log.debug({ incarnation: doc.incarnation, changes: changes.length }, 'document changed');
        for (const change of changes) this.#deliver(change, sink);
      } catch (err) {
        if (signal.aborted) break;
        failures += 1;
        this.#o.countFailure(err);
        const health = client.health;
        log.warn(
          { err: (err as Error).message, consecutiveFailures: failures, msSinceSuccess: health.msSinceSuccess },
          'reading IMDS failed; carrying on',
        );
      }
      // As watch() does: after failures the interval doubles, up to the client's longest backoff.
      const base = failures === 0 ? intervalMs : Math.min(Math.max(intervalMs, client.retry.maxDelayMs), intervalMs * 2 ** (failures - 1));
      // ±10% so a fleet of VMs does not poll in step.
      const delay = base * (1 + 0.1 * (2 * Math.random() - 1));
      if (!(await wait(delay, signal))) break;
    }
  }

  /**
   * The first read after start: an entry with no outcome whose event is gone ended while the agent
   * was away (the VM rebooted, say), so recover from it now; an entry whose recovery was cut short
   * finishes it. Entries still in the document carry on when their change comes in.
   */
  #reconcile(doc: EventsDocument, sink: EventSink): void {
    const present = new Set(doc.events.map((e) => eventKey(e.id)));
    for (const entry of this.#o.journal().entries()) {
      if (entry.recoveredAt !== null) continue;
      const event = eventFromEntry(entry);
      const log = eventLogger(this.#o.log, event);
      if (entry.outcome !== null) {
        log.info({ outcome: entry.outcome }, 'finishing recovery cut short by the last stop');
        sink.unfinished(event, entry.outcome);
      } else if (!present.has(eventKey(entry.eventId))) {
        const outcome = outcomeWhileAway(entry, this.#o.now());
        log.info(
          { outcome, lastSeenStatus: entry.event.status, approved: entry.approval !== null },
          `the event ended while the agent was not running: ${outcome}; recovering`,
        );
        sink.unfinished(event, outcome);
      }
    }
  }

  #deliver({ event, kind }: EventChange, sink: EventSink): void {
    if (kind !== 'completed' && kind !== 'cancelled') {
      sink.seen(event, kind);
      return;
    }
    const entry = this.#o.journal().get(event.id);
    // Gone while last seen Scheduled reads as cancelled, but an event approved (or past NotBefore)
    // can start and finish between two polls: the journal knows better.
    sink.gone(event, kind === 'cancelled' && entry !== undefined ? outcomeWhileAway(entry, this.#o.now()) : kind);
  }
}
