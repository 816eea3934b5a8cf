// `--state FILE`: the engine's state survives restarts. Saved after every mutation, atomically.
import { readFileSync } from 'node:fs';
import { writeFileAtomicSync } from '../shared/atomic-file.js';
import { z } from 'zod';
import { EVENT_SOURCES, EVENT_STATUSES, EVENT_TYPES } from '../protocol/types.js';
import type { Engine, EngineSnapshot } from './engine/engine.js';
import { OPERATION_TYPES } from './engine/operations.js';
import { formatPath } from '../shared/source-positions.js';
import { VmSpecSchema } from './vm-spec.js';

export class StateFileError extends Error {
  override name = 'StateFileError';
  constructor(
    message: string,
    readonly file: string,
  ) {
    super(message);
  }
}

const time = z.number().finite();


const EventSchema = z.object({
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
  startedBy: z.enum(['approval', 'notBefore', 'failure']).nullable(),
  approvals: z.array(z.object({ vm: z.string(), at: time })),
});

const EndedSchema = z.object({
  id: z.string(),
  tenant: z.string(),
  resources: z.array(z.string()),
  endedAt: time,
  cancelled: z.boolean(),
  event: EventSchema.nullable().default(null),
});

const DeletedSchema = z.object({
  name: z.string(),
  tenant: z.string(),
  host: z.string(),
  faultDomain: z.int().min(0),
  updateDomain: z.int().min(0),
  deletedAt: time,
  operation: z.string(),
});

const StepSchema = z.object({
  faultDomain: z.int().min(0),
  vms: z.array(z.string()),
  status: z.enum(['pending', 'scheduled', 'started', 'done', 'skipped', 'cancelled']),
  events: z.array(z.string()),
  at: time.nullable(),
});

// Fields added after the first state files carry defaults, so those files still load.
const OperationSchema = z.object({
  id: z.string(),
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
});

const ActivationSchema = z.object({
  enabledAt: time.nullable(),
  enablingAt: time.nullable(),
  lastRequestAt: time.nullable(),
});

export const SnapshotSchema = z.object({
  format: z.literal('forewarn-state'),
  version: z.literal(1),
  savedAt: time,
  initialFleet: z.array(VmSpecSchema),
  vms: z.array(VmSpecSchema),
  events: z.array(EventSchema),
  ended: z.array(EndedSchema),
  operations: z.array(OperationSchema),
  incarnations: z.record(z.string(), z.int().min(0)),
  activation: z.record(z.string(), ActivationSchema).optional(),
  deleted: z.array(DeletedSchema).optional(),
});

/** Reads a state file; undefined when it does not exist (a fresh start). Never writes. */
export function loadStateFile(path: string): EngineSnapshot | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') return undefined;
    throw new StateFileError(`${path}: cannot read the state file: ${e.code === 'EISDIR' ? 'is a directory' : e.message}`, path);
  }
  if (text.trim() === '') throw new StateFileError(`${path}: the state file is empty; move it away or delete it to start afresh`, path);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new StateFileError(`${path}: the state file is not valid JSON (${(err as Error).message}); move it away or delete it to start afresh`, path);
  }
  // Say "not ours" or "another version" before listing field problems.
  const head = data as { format?: unknown; version?: unknown } | null;
  if (typeof head !== 'object' || head === null || Array.isArray(head) || head.format !== 'forewarn-state') {
    throw new StateFileError(`${path}: not a forewarn state file (format is not "forewarn-state")`, path);
  }
  if (head.version !== 1) {
    throw new StateFileError(`${path}: state file version ${JSON.stringify(head.version)} is not supported; this forewarn reads version 1`, path);
  }
  const parsed = SnapshotSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = formatPath(issue.path as (string | number)[]);
    const more = parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more)` : '';
    throw new StateFileError(`${path}: invalid state file: ${where || '(top level)'}: ${issue.message}${more}`, path);
  }
  const snapshot: EngineSnapshot = parsed.data;
  return snapshot;
}

/** Atomic replace: a crash leaves either the old file or the new one, never half of one. */
export function writeStateFileSync(path: string, snapshot: EngineSnapshot): void {
  writeFileAtomicSync(path, `${JSON.stringify(snapshot, null, 2)}\n`);
}

/**
 * Saves the engine after each mutation. Bursts in one turn of the event loop become
 * one write; writes are synchronous, so the last one always holds the latest state.
 */
export class StateFileWriter {
  #dirty = false;
  #pending: NodeJS.Immediate | undefined;
  #unsubscribe: (() => void) | undefined;
  #writes = 0;

  constructor(
    readonly path: string,
    private readonly engine: Engine,
    private readonly onError: (err: Error) => void = () => {},
  ) {}

  /** How many times the file was written, for tests and logs. */
  get writes(): number {
    return this.#writes;
  }

  /** Writes now, so an unwritable path fails at start-up, then follows mutations. */
  start(): void {
    this.#save();
    this.#unsubscribe ??= this.engine.onMutation(() => this.#schedule());
  }

  #schedule(): void {
    this.#dirty = true;
    this.#pending ??= setImmediate(() => {
      this.#pending = undefined;
      this.flush();
    });
  }

  /** Writes now if anything changed since the last write. */
  flush(): void {
    if (!this.#dirty) return;
    try {
      this.#save();
    } catch (err) {
      // Stay dirty: the next mutation or flush tries again.
      this.onError(err as Error);
    }
  }

  #save(): void {
    this.#dirty = true;
    writeStateFileSync(this.path, this.engine.snapshot());
    this.#dirty = false;
    this.#writes++;
  }

  /** Final synchronous flush; later mutations are not saved. */
  close(): void {
    if (this.#pending) clearImmediate(this.#pending);
    this.#pending = undefined;
    this.flush();
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }
}
