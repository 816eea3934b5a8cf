// The state file's shapes: the whole snapshot (a version 1 file, or a version 2 log's first line) and one change record.
import { z } from 'zod';
import { START_CAUSES } from '../../protocol/control.js';
import { EVENT_SOURCES, EVENT_STATUSES, EVENT_TYPES } from '../../protocol/types.js';
import { EVENT_GRID_SCHEMAS } from '../../protocol/eventgrid.js';
import { SNAPSHOT_VERSION } from '../engine/engine.js';
import { OPERATION_TYPES } from '../engine/operations.js';
import { VmSpecSchema } from '../fleet/vm-spec.js';
import { nameRecord } from '../../shared/name-record.js';

/** Version 2 is JSON lines: a snapshot, then one change record per saved batch. Version 1 (one JSON object) still loads. */
export const STATE_FILE_VERSION = SNAPSHOT_VERSION;

const time = z.number().finite();

export const EventSchema = z.object({
  id: z.string(),
  operationId: z.string(),
  jobId: z.string(),
  tenant: z.string(),
  type: z.enum(EVENT_TYPES),
  source: z.enum(EVENT_SOURCES),
  description: z.string(),
  durationInSeconds: z.int().min(-1),
  resources: z.array(z.string()),
  status: z.enum(EVENT_STATUSES),
  createdAt: time,
  notBefore: time,
  startedAt: time.nullable(),
  endsAt: time.nullable(),
  startedBy: z.enum(START_CAUSES).nullable(),
  approvals: z.array(z.object({ vm: z.string(), at: time })),
});

export const EndedSchema = z.object({
  id: z.string(),
  tenant: z.string(),
  resources: z.array(z.string()),
  endedAt: time,
  cancelled: z.boolean(),
  // Absent in files written before history was paged: restore numbers them in the order saved.
  seq: z.int().min(0).optional(),
  event: EventSchema.nullable().default(null),
});

export const DeletedSchema = z.object({
  name: z.string(),
  tenant: z.string(),
  host: z.string(),
  faultDomain: z.int().min(0),
  updateDomain: z.int().min(0),
  deletedAt: time,
  operation: z.string(),
});

export const SubscriptionSchema = z.object({
  id: z.string(),
  endpoint: z.string(),
  schema: z.enum(EVENT_GRID_SCHEMAS),
  maxEventsPerBatch: z.int().min(1),
  preferredBatchSizeInKilobytes: z.int().min(1),
  maxDeliveryAttempts: z.int().min(1),
  eventTimeToLiveInMinutes: z.int().min(1),
  createdAt: time,
});

const StepSchema = z.object({
  faultDomain: z.int().min(0),
  vms: z.array(z.string()),
  status: z.enum(['pending', 'scheduled', 'started', 'done', 'skipped', 'cancelled']),
  events: z.array(z.string()),
  at: time.nullable(),
});

// Fields added after the first state files carry defaults, so those files still load.
export const OperationSchema = z.object({
  id: z.string(),
  seq: z.int().min(0).optional(),
  type: z.enum(OPERATION_TYPES),
  createdAt: time,
  vms: z.array(z.string()),
  host: z.string().nullable().default(null),
  tenant: z.string().nullable().default(null),
  status: z.enum(['running', 'completed', 'cancelled']).default('running'),
  events: z.array(z.string()),
  removedVms: z.array(z.string()),
  reimagedVms: z.array(z.string()),
  steps: z.array(StepSchema).nullable().default(null),
  durationInSeconds: z.int().min(-1).default(-1),
  description: z.string().nullable().default(null),
  finishOrder: z.int().min(0).optional(),
});

export const ActivationSchema = z.object({
  enabledAt: time.nullable(),
  enablingAt: time.nullable(),
  lastRequestAt: time.nullable(),
});

/** The whole state: a version 1 file, or the first line of a version 2 log (the same shape). */
export const SnapshotSchema = z.object({
  format: z.literal('forewarn-state'),
  version: z.union([z.literal(1), z.literal(STATE_FILE_VERSION)]).transform((): typeof STATE_FILE_VERSION => STATE_FILE_VERSION),
  savedAt: time,
  initialFleet: z.array(VmSpecSchema),
  vms: z.array(VmSpecSchema),
  events: z.array(EventSchema),
  ended: z.array(EndedSchema),
  operations: z.array(OperationSchema),
  incarnations: nameRecord(z.int().min(0), 'an object keyed by VM name'),
  activation: nameRecord(ActivationSchema, 'an object keyed by VM name').optional(),
  deleted: z.array(DeletedSchema).optional(),
  // Absent in files written before Event Grid delivery.
  subscriptions: z.array(SubscriptionSchema).optional(),
});

/** One table's changes: entries to set (in place, or appended if new), after keys to remove. */
const table = <T extends z.ZodType>(entry: T) => z.strictObject({ set: z.array(entry), del: z.array(z.string()) }).optional();
const pairs = <T extends z.ZodType>(value: T) => table(z.tuple([z.string(), value]));

/** A line after the first: one saved batch of changes (EngineDelta), numbered from 1 after each snapshot. */
export const ChangeRecordSchema = z.strictObject({
  seq: z.int().min(1),
  savedAt: time,
  vms: table(VmSpecSchema),
  events: table(EventSchema),
  ended: table(EndedSchema),
  operations: table(OperationSchema),
  incarnations: pairs(z.int().min(0)),
  activation: pairs(ActivationSchema),
  deleted: table(DeletedSchema),
  subscriptions: table(SubscriptionSchema),
});
