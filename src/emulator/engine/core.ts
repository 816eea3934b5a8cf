// What the engine's owners share: the clock, the fleet, the live events, history and the schedule,
// and each other. The facade builds one and hands it to every owner, so an owner reads state where
// it lives instead of keeping a copy, and calls the owner of a rule instead of repeating it.
import type { Clock } from '../../shared/clock.js';
import type { ActivationTracker } from './activation.js';
import type { ChangeLog } from './changes.js';
import type { Documents } from './documents.js';
import type { Fleet } from './fleet.js';
import type { FleetKeeper } from './fleet-keeper.js';
import type { History } from './history.js';
import type { Lifecycle } from './lifecycle.js';
import type { LiveEvents } from './live-events.js';
import type { EngineEvent, WebhookSubscription } from './model.js';
import type { TrackedMap } from './changes.js';
import type { OperationBook } from './operation-book.js';
import type { Schedule } from './schedule.js';
import type { Timing } from './timing.js';

export interface EngineCore {
  readonly clock: Clock;
  readonly timing: Timing;
  readonly newId: () => string;
  /** Which entities changed since the state file last took them. */
  readonly changes: ChangeLog;
  readonly fleet: Fleet;
  readonly live: LiveEvents;
  readonly history: History;
  readonly schedule: Schedule;
  readonly activation: ActivationTracker;
  readonly documents: Documents;
  readonly vms: FleetKeeper;
  readonly lifecycle: Lifecycle;
  readonly operations: OperationBook;
  /** Event Grid webhook subscriptions, by id: kept across resets, saved in the state file. */
  readonly subscriptions: TrackedMap<string, WebhookSubscription>;
  /** Something changed, whether or not a document shows it: mutation listeners hear of it at the commit. */
  markMutated(): void;
  /** An event entered a new status; the lifecycle is the one caller. */
  transitioned(event: EngineEvent, status: TransitionStatus, at: number): void;
}

/** The statuses an event passes through, as Event Grid names them (IMDS shows the first two only). */
export type TransitionStatus = 'Scheduled' | 'Started' | 'Completed' | 'Canceled';

/**
 * One status change of an event. `event` is the engine's own object, valid only during the call:
 * a listener that keeps anything copies it (cloneEvent).
 */
export interface EventTransition {
  event: EngineEvent;
  status: TransitionStatus;
  at: number;
}

/** A copy a caller may keep or change without touching the engine's own. */
export function cloneEvent(e: EngineEvent): EngineEvent {
  return { ...e, resources: [...e.resources], approvals: e.approvals.map((a) => ({ ...a })) };
}
