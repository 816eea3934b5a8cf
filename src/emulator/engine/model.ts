// The engine's data: events, ended events, operations and the state file's snapshot and delta shapes.
import type { START_CAUSES } from '../../protocol/control.js';
import type { EventSource, EventStatus, EventType, EventView } from '../../protocol/types.js';
import type { ActivationState } from './activation.js';
import type { PairsDelta, TableDelta } from './changes.js';
import type { VmSpec } from './fleet.js';
import type { OperationType } from './operations.js';
import type { RollingStep } from './rolling.js';
import type { DeletedVm } from './vm-state.js';

export interface Approval {
  vm: string;
  at: number;
}

export type StartCause = (typeof START_CAUSES)[number];

/** An event with everything the emulator tracks about it. Times are epoch ms. */
export interface EngineEvent {
  id: string;
  operationId: string;
  /** Events of one job start together: a job on a shared host waits for every tenant (SPEC §2). */
  jobId: string;
  tenant: string;
  type: EventType;
  source: EventSource;
  description: string;
  durationInSeconds: number;
  resources: string[];
  status: EventStatus;
  createdAt: number;
  notBefore: number;
  startedAt: number | null;
  endsAt: number | null;
  startedBy: StartCause | null;
  approvals: Approval[];
}

/** What is remembered of an ended event: enough to answer a late approval, and its history. */
export interface EndedEvent {
  id: string;
  tenant: string;
  resources: string[];
  endedAt: number;
  cancelled: boolean;
  /** Rises with each event that ends: the order of history and its page cursors. */
  seq: number;
  /** The event as it was when it ended; null in state files written before history was kept. */
  event: EngineEvent | null;
}

export const OPERATION_STATUSES = ['running', 'completed', 'cancelled'] as const;
export type OperationStatus = (typeof OPERATION_STATUSES)[number];

export interface Operation {
  id: string;
  /** Rises with each operation created: the order of the list and its page cursors. */
  seq: number;
  type: OperationType;
  createdAt: number;
  /** Every VM the operation targets, however it was addressed. */
  vms: string[];
  host: string | null;
  tenant: string | null;
  status: OperationStatus;
  events: string[];
  /** VMs removed at once (delete without terminate notification). */
  removedVms: string[];
  /** VMs reimaged at once (reimage without OS image notification). */
  reimagedVms: string[];
  /** A rolling host update's fault domains, in order; null for other operations. */
  steps: RollingStep[] | null;
  /** The DurationInSeconds its events carry. */
  durationInSeconds: number;
  /** The description requested for its events, or null for the operation's default. */
  description: string | null;
  /**
   * Rises with each operation that finishes; absent while it runs. History forgets finished
   * operations in this order, and a restart must too (state files before it: creation order).
   */
  finishOrder?: number;
}

/** One tenant's part in a job, for showing who has approved. */
export interface JobMember {
  tenant: string;
  event: string;
  approved: boolean;
}

export interface OperationRequest {
  type: string;
  vms?: string[] | undefined;
  host?: string | undefined;
  tenant?: string | undefined;
  /** Epoch ms. */
  notBefore?: number | undefined;
  durationInSeconds?: number | undefined;
  description?: string | undefined;
  force?: boolean | undefined;
}

export interface DocumentState {
  vm: string;
  incarnation: number;
  events: EventView[];
}

/** As a state file holds it: files written before sequence numbers have none. */
export type Saved<T extends { seq: number }> = Omit<T, 'seq'> & { seq?: number };

/**
 * An Event Grid webhook subscription, as the state file keeps it: the engine holds it so that it is saved with
 * everything else (src/emulator/eventgrid owns what it means). Times are epoch ms.
 */
export interface WebhookSubscription {
  id: string;
  endpoint: string;
  schema: 'EventGridSchema' | 'CloudEventSchemaV1_0';
  maxEventsPerBatch: number;
  preferredBatchSizeInKilobytes: number;
  maxDeliveryAttempts: number;
  eventTimeToLiveInMinutes: number;
  createdAt: number;
}

/** 2 since the state file became a log (a snapshot, then changes); the snapshot's shape is version 1's. */
export const SNAPSHOT_VERSION = 2;

export interface EngineSnapshot {
  format: 'forewarn-state';
  version: typeof SNAPSHOT_VERSION;
  savedAt: number;
  initialFleet: VmSpec[];
  vms: VmSpec[];
  events: EngineEvent[];
  ended: Saved<EndedEvent>[];
  operations: Saved<Operation>[];
  incarnations: Record<string, number>;
  activation?: Record<string, ActivationState>;
  deleted?: DeletedVm[];
  /** Absent in files written before Event Grid delivery. */
  subscriptions?: WebhookSubscription[];
}

/** What changed since the previous take (see changes.ts): a state file appends this instead of rewriting everything. */
export interface EngineDelta {
  savedAt: number;
  vms?: TableDelta<VmSpec>;
  events?: TableDelta<EngineEvent>;
  ended?: TableDelta<Saved<EndedEvent>>;
  operations?: TableDelta<Saved<Operation>>;
  incarnations?: PairsDelta<number>;
  activation?: PairsDelta<ActivationState>;
  deleted?: TableDelta<DeletedVm>;
  subscriptions?: TableDelta<WebhookSubscription>;
}
