// What produces events, apart from what is done about them: a monitor watches one source (IMDS
// today, a controller's webhooks later) and tells the runner, which never learns where events come from.
import type { ScheduledEvent } from '../client/index.js';

/** How an event came into view, or changed while in view. */
export type SeenKind = 'scheduled' | 'started' | 'updated';

/** How an event ended. */
export type EventOutcome = 'completed' | 'cancelled';

/** What a monitor tells; the runner listens. Calls about one event come in the order they happened. */
export interface EventSink {
  /** The event is in view: new, Started, or changed. */
  seen(event: ScheduledEvent, kind: SeenKind): void;
  /** The event has left the view, and ended so (the monitor has weighed what the journal knows). */
  gone(event: ScheduledEvent, outcome: EventOutcome): void;
  /**
   * A journaled event that has ended but whose recovery has not: it ended while the agent was not
   * running, or the last stop cut its recovery short. The monitor has said why in the log.
   */
  unfinished(event: ScheduledEvent, outcome: EventOutcome): void;
}

export interface EventMonitor {
  /** Watches until `signal` aborts. The source's failures never reject: they are logged, counted and retried. */
  run(sink: EventSink, signal: AbortSignal): Promise<void>;
}
