// What the agent has done per event, on disk after every change, so a restart neither loses nor repeats work.
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  ensurePrivateDir,
  fsyncDirectory,
  nodeFileOps,
  removeStaleTempFiles,
  writeFileAtomicSync,
  type FileOps,
} from '../shared/atomic-file.js';
import { z } from 'zod';
import type { ScheduledEvent } from '../client/index.js';
import { wallClock } from '../shared/clock.js';
import type { ActionRecord, ActionResult, BudgetRecord, DeliveryRecord, JournalEntry, KubernetesRecord, ProcessRecord } from './types.js';

export const JOURNAL_FORMAT = 'forewarn-agent-journal';
export const JOURNAL_VERSION = 1;

export interface JournalOptions {
  logger?: { warn(obj: object, msg?: string): void };
  /** Epoch ms; default the wall clock. */
  now?: () => number;
  /** The file calls writes make; tests inject failures (ENOSPC, short writes) here. */
  ops?: FileOps;
}

const ProcessRecordSchema = z.object({
  // kill(-1) would reach every process the agent may signal, and 0 its own group: never a journaled group.
  pgid: z.int().min(2, 'a process group id must be 2 or more (0, 1 and negative numbers name no single group)'),
  startTime: z.string().nullable(),
  // Absent in journals written before markers; such a group can never be proven ours.
  marker: z.uuid().optional(),
  startedAt: z.string(),
});

const ActionRecordSchema = z.object({
  status: z.enum(['running', 'succeeded', 'failed']),
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  attempts: z.int().min(0),
  error: z.string().nullable(),
  process: ProcessRecordSchema.optional(),
  unjournaled: z.boolean().optional(),
});

const EntrySchema = z.object({
  eventId: z.string().min(1),
  firstSeenAt: z.string(),
  rule: z.string().nullable(),
  event: z.object({
    type: z.string(),
    status: z.string(),
    source: z.string().nullable(),
    resources: z.array(z.string()),
    notBefore: z.string().nullable(),
    description: z.string(),
    durationInSeconds: z.number(),
  }),
  actions: z.record(z.string(), ActionRecordSchema),
  approval: z.object({ sentAt: z.string(), as: z.enum(['leader', 'standby', 'any']) }).nullable(),
  outcome: z.enum(['completed', 'cancelled']).nullable(),
  recoveredAt: z.string().nullable(),
  kubernetes: z
    .object({
      node: z.string(),
      cordoned: z.boolean(),
      slot: z.object({ namespace: z.string(), name: z.string() }).nullable(),
      overBudget: z.boolean(),
      taintPlaced: z.boolean().optional(),
    })
    .optional(),
  budget: z.object({ claim: z.string(), slot: z.string().nullable(), overBudget: z.boolean() }).optional(),
});

const DeliverySchema = z.object({
  notifications: z.array(z.object({ id: z.string().min(1), at: z.string() })),
  events: z.array(
    z.object({
      eventId: z.string().min(1),
      subject: z.string(),
      status: z.string(),
      time: z.string(),
      properties: z.record(z.string(), z.unknown()),
      endedAt: z.string().nullable(),
      takenAt: z.string().optional(),
      unheard: z.literal(true).optional(),
    }),
  ),
});

const FileSchema = z.object({
  format: z.literal(JOURNAL_FORMAT),
  version: z.literal(JOURNAL_VERSION),
  entries: z.array(EntrySchema),
  // The controller's alone (eventgrid/monitor.ts); an agent's journal has none.
  deliveries: DeliverySchema.optional(),
});

/** The event as the journal keeps it. */
export function eventSnapshot(event: ScheduledEvent): JournalEntry['event'] {
  return {
    type: event.type,
    status: event.status,
    source: event.source,
    resources: [...event.resources],
    notBefore: event.notBefore === null || Number.isNaN(event.notBefore.getTime()) ? null : event.notBefore.toISOString(),
    description: event.description,
    durationInSeconds: event.durationInSeconds,
  };
}

/** The event as the journal last saw it (eventSnapshot's inverse), rebuilt for actions run after a restart. */
export function eventFromEntry(entry: JournalEntry): ScheduledEvent {
  const e = entry.event;
  const parsed = e.notBefore === null ? null : new Date(e.notBefore);
  const notBefore = parsed !== null && !Number.isNaN(parsed.getTime()) ? parsed : null;
  return {
    id: entry.eventId,
    status: e.status,
    type: e.type,
    resourceType: 'VirtualMachine',
    resources: [...e.resources],
    notBefore,
    description: e.description,
    source: e.source,
    durationInSeconds: e.durationInSeconds,
    raw: {
      EventId: entry.eventId,
      EventStatus: e.status,
      EventType: e.type,
      ResourceType: 'VirtualMachine',
      Resources: [...e.resources],
      NotBefore: notBefore === null ? '' : notBefore.toUTCString(),
      Description: e.description,
      ...(e.source !== null ? { EventSource: e.source } : {}),
      DurationInSeconds: e.durationInSeconds,
    },
  };
}

/**
 * One JSON file, rewritten atomically (temp file, fsync, rename, fsync of the directory) by every
 * method that changes it, before the method returns. A write that fails throws; the change stays
 * in memory, `pending` is true, and it goes out with the next successful write (flush()).
 */
export class Journal {
  readonly #entries = new Map<string, JournalEntry>();
  #deliveries: DeliveryRecord | null;
  readonly #now: () => number;
  readonly #ops: FileOps;
  #pending = false;
  /** Inside batch(): how deep, and whether a write was put off to its end. */
  #batching = 0;
  #deferred = false;
  /** Where a corrupt file was moved on open, or null. */
  readonly corruptedTo: string | null;

  private constructor(
    readonly path: string,
    options: JournalOptions,
    entries: JournalEntry[],
    corruptedTo: string | null,
    deliveries: DeliveryRecord | null = null,
  ) {
    this.#deliveries = deliveries;
    this.#now = options.now ?? wallClock;
    this.#ops = options.ops ?? nodeFileOps;
    for (const entry of entries) this.#entries.set(entry.eventId.toLowerCase(), entry);
    this.corruptedTo = corruptedTo;
  }

  /**
   * Reads the journal; a missing file is an empty journal. A corrupt one is moved aside to
   * `${path}.corrupt-<timestamp>` with a warning, and the journal starts empty: losing history is
   * better than not handling events. Only I/O failures (unreadable file, no directory) throw.
   * The directory is created 0700 if missing; temp files of runs killed mid-write are removed.
   */
  static open(path: string, options: JournalOptions = {}): Journal {
    const now = options.now ?? wallClock;
    ensurePrivateDir(dirname(path));
    removeStaleTempFiles(path, options.ops ?? nodeFileOps);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'ENOENT') return new Journal(path, options, [], null);
      throw new Error(`${path}: cannot read the agent journal: ${e.code === 'EISDIR' ? 'is a directory' : e.message}`, { cause: err });
    }
    const problem = validate(text);
    if (problem.entries) return new Journal(path, options, problem.entries, null, problem.deliveries);

    const stamp = new Date(now()).toISOString().replace(/[:.]/g, '-');
    let aside = `${path}.corrupt-${stamp}`;
    for (let n = 1; existsSync(aside); n++) aside = `${path}.corrupt-${stamp}-${n}`;
    renameSync(path, aside);
    fsyncDirectory(dirname(path));
    options.logger?.warn(
      { journal: path, movedTo: aside, problem: problem.error },
      'the agent journal was unreadable; moved it aside and started with an empty journal',
    );
    return new Journal(path, options, [], aside);
  }

  /** A copy of the entry for this EventId (any case). */
  get(eventId: string): JournalEntry | undefined {
    const entry = this.#entries.get(eventId.toLowerCase());
    return entry && structuredClone(entry);
  }

  /** Creates the entry on first sight, else refreshes the event as now seen; writes only when something changed. */
  ensure(event: ScheduledEvent, rule: string | null): JournalEntry {
    const key = event.id.toLowerCase();
    const snapshot = eventSnapshot(event);
    const existing = this.#entries.get(key);
    if (existing === undefined) {
      this.#entries.set(key, {
        eventId: event.id,
        firstSeenAt: this.#iso(),
        rule,
        event: snapshot,
        actions: {},
        approval: null,
        outcome: null,
        recoveredAt: null,
      });
      this.flush();
    } else if (JSON.stringify(existing.event) !== JSON.stringify(snapshot)) {
      // The rule chosen first stays: work already done belongs to it.
      existing.event = snapshot;
      this.flush();
    }
    return structuredClone(this.#entries.get(key)!);
  }

  /** Marks an action (keyed `${phase}:${index}`) as running; a restart that finds it so knows it may have half-run. */
  actionStarted(eventId: string, key: string): void {
    const entry = this.#entry(eventId);
    entry.actions[key] = { status: 'running', startedAt: this.#iso(), endedAt: null, attempts: 0, error: null };
    this.flush();
  }

  /** The process group a running exec action's program is about to run in, written before the program starts. */
  actionProcess(eventId: string, key: string, process: Omit<ProcessRecord, 'startedAt'>): void {
    const record = this.#entry(eventId).actions[key];
    if (record === undefined) throw new Error(`the journal has no action ${key} for event ${eventId}; call actionStarted() first`);
    record.process = { ...process, startedAt: this.#iso() };
    this.flush();
  }

  /** `unjournaled`: it ran while the journal could not be written, so this record was written after the fact. */
  actionFinished(eventId: string, key: string, result: ActionResult, options: { unjournaled?: boolean } = {}): void {
    const entry = this.#entry(eventId);
    const started = entry.actions[key];
    const record: ActionRecord = {
      status: result.ok ? 'succeeded' : 'failed',
      startedAt: started?.startedAt ?? this.#iso(),
      endedAt: this.#iso(),
      attempts: result.attempts,
      error: result.error,
      ...(options.unjournaled ? { unjournaled: true } : {}),
    };
    entry.actions[key] = record;
    this.flush();
  }

  approved(eventId: string, as: 'leader' | 'standby' | 'any'): void {
    this.#entry(eventId).approval = { sentAt: this.#iso(), as };
    this.flush();
  }

  /** What a kubernetes action holds for the event (a cordon, a budget slot), written before and after each change on the cluster. */
  kubernetes(eventId: string, record: KubernetesRecord): void {
    this.#entry(eventId).kubernetes = structuredClone(record);
    this.flush();
  }

  /** The fleet budget's slot for the event, written before and after each change in the store. */
  budget(eventId: string, record: BudgetRecord): void {
    this.#entry(eventId).budget = structuredClone(record);
    this.flush();
  }

  ended(eventId: string, outcome: 'completed' | 'cancelled'): void {
    this.#entry(eventId).outcome = outcome;
    this.flush();
  }

  recovered(eventId: string): void {
    this.#entry(eventId).recoveredAt = this.#iso();
    this.flush();
  }

  /** Copies of every entry, oldest first. */
  entries(): JournalEntry[] {
    return [...this.#entries.values()].map((e) => structuredClone(e));
  }

  /** Keeps the `keepEnded` most recently recovered entries and drops older recovered ones; returns how many went. */
  prune(keepEnded: number = 500): number {
    const done = [...this.#entries.entries()]
      .filter(([, e]) => e.recoveredAt !== null)
      .sort(([, a], [, b]) => Date.parse(b.recoveredAt!) - Date.parse(a.recoveredAt!));
    const drop = done.slice(Math.max(0, keepEnded));
    if (drop.length === 0) return 0;
    for (const [key] of drop) this.#entries.delete(key);
    this.flush();
    return drop.length;
  }

  /** What the controller's Event Grid monitor recorded (a copy), or null. */
  deliveries(): DeliveryRecord | null {
    return this.#deliveries && structuredClone(this.#deliveries);
  }

  /** Replaces the Event Grid monitor's record and writes it (throws as flush() does, the change kept in memory). */
  setDeliveries(record: DeliveryRecord): void {
    this.#deliveries = structuredClone(record);
    this.flush();
  }

  /** Whether a change failed to be written and is held in memory only, until a flush() succeeds. */
  get pending(): boolean {
    return this.#pending;
  }

  /**
   * Runs `changes` with their writes put off to one at the end: one rewrite and one fsync for many
   * changes made together. Only for changes made synchronously, with nothing done outside the process
   * before the write (every step that relies on the journal waits for it in a later turn: durable()).
   * The write at the end throws as flush() does, the changes kept in memory.
   */
  batch<T>(changes: () => T): T {
    this.#batching += 1;
    try {
      return changes();
    } finally {
      this.#batching -= 1;
      if (this.#batching === 0 && this.#deferred) {
        this.#deferred = false;
        this.flush();
      }
    }
  }

  /** Writes the whole journal now; call at start-up to find an unwritable path early, and to retry a failed write. */
  flush(): void {
    if (this.#batching > 0) {
      this.#deferred = true;
      return;
    }
    const body = {
      format: JOURNAL_FORMAT,
      version: JOURNAL_VERSION,
      entries: [...this.#entries.values()],
      ...(this.#deliveries !== null ? { deliveries: this.#deliveries } : {}),
    };
    this.#pending = true;
    writeFileAtomicSync(this.path, `${JSON.stringify(body, null, 2)}\n`, { ops: this.#ops });
    this.#pending = false;
  }

  #entry(eventId: string): JournalEntry {
    const entry = this.#entries.get(eventId.toLowerCase());
    if (entry === undefined) throw new Error(`the journal has no entry for event ${eventId}; call ensure() first`);
    return entry;
  }

  #iso(): string {
    return new Date(this.#now()).toISOString();
  }
}

function validate(
  text: string,
): { entries: JournalEntry[]; deliveries: DeliveryRecord | null; error?: undefined } | { entries?: undefined; error: string } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return { error: `not valid JSON: ${(err as Error).message}` };
  }
  const parsed = FileSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { error: `${issue.path.join('.') || '(top level)'}: ${issue.message}` };
  }
  const seen = new Set<string>();
  for (const entry of parsed.data.entries) {
    const key = entry.eventId.toLowerCase();
    if (seen.has(key)) return { error: `event ${entry.eventId} is listed twice` };
    seen.add(key);
  }
  return { entries: parsed.data.entries, deliveries: parsed.data.deliveries ?? null };
}
