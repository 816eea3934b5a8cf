// Saving the engine to its state file: group commits appended to a log, compacted into a fresh snapshot as it grows.
import { dirname } from 'node:path';
import {
  DurableAppender,
  ensurePrivateDir,
  nodeFileOps,
  removeStaleTempFiles,
  writeFileAtomicSync,
  type FileOps,
} from '../../shared/atomic-file.js';
import type { Engine, EngineSnapshot } from '../engine/engine.js';

/**
 * [choice] The log is compacted (rewritten as one snapshot line) once its change records
 * outgrow the snapshot and this floor, so a save costs what changed, amortized: each
 * compaction of B bytes follows at least B bytes of appends.
 */
export const COMPACT_FLOOR_BYTES = 1024 * 1024;

/** [choice] After a failed save, retries wait this long, doubling up to RETRY_MAX_MS, unless a change comes first. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;

/** A whole snapshot as the log's first line. */
function snapshotLine(snapshot: EngineSnapshot): string {
  return `${JSON.stringify(snapshot)}\n`;
}

/** Writes `snapshot` as a state file of its own (no change records), atomically. */
export function writeStateFileSync(path: string, snapshot: EngineSnapshot, ops: FileOps = nodeFileOps): void {
  writeFileAtomicSync(path, snapshotLine(snapshot), { ops });
}

/** Why a request's change is not acknowledged: it is in memory, not on disk. */
export class StateSaveError extends Error {
  override name = 'StateSaveError';
  constructor(
    readonly path: string,
    cause: Error,
  ) {
    super(`the change was applied in memory but could not be saved to ${path}: ${cause.message}`, { cause });
  }
}

export interface StateFileWriterOptions {
  /** The file calls, so tests can fail or count them. */
  ops?: FileOps;
  compactFloorBytes?: number;
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Saves the engine after each change as a group commit: every change made in one turn of the
 * event loop becomes one appended, fsynced record, and `durable()` resolves for all of them
 * after that one fsync. A failed save rejects the waiters of its batch; the state stays in
 * memory, and the next change, or a timer with backoff, tries again with a whole snapshot.
 */
export class StateFileWriter {
  readonly #ops: FileOps;
  readonly #compactFloor: number;
  #appender: DurableAppender | undefined;
  #baseBytes = 0;
  #seq = 0;
  /** The next save writes a whole snapshot: at start, and after a failure lost a batch's record. */
  #needSnapshot = true;
  #dirty = false;
  #waiters: Waiter[] = [];
  #pending: NodeJS.Immediate | undefined;
  #retry: NodeJS.Timeout | undefined;
  #retryMs = RETRY_FIRST_MS;
  #failing = false;
  #unsubscribe: (() => void) | undefined;
  #closed = false;
  #writes = 0;
  #compactions = 0;

  constructor(
    readonly path: string,
    private readonly engine: Engine,
    private readonly onError: (err: Error) => void = () => {},
    options: StateFileWriterOptions = {},
  ) {
    this.#ops = options.ops ?? nodeFileOps;
    this.#compactFloor = options.compactFloorBytes ?? COMPACT_FLOOR_BYTES;
  }

  /** Saves done (snapshots and records), for tests and logs. */
  get writes(): number {
    return this.#writes;
  }

  /** Snapshots written (at start, after a failure, and each compaction). */
  get compactions(): number {
    return this.#compactions;
  }

  /** Bytes in the file now. */
  get bytes(): number {
    return this.#appender?.size ?? this.#baseBytes;
  }

  /**
   * Clears temp files of killed runs, creates the directory (0700) if missing, and writes a
   * fresh snapshot, so an unwritable path fails at start-up and a torn tail or a version 1
   * file is gone; then follows the engine's changes.
   */
  start(): void {
    ensurePrivateDir(dirname(this.path));
    removeStaleTempFiles(this.path, this.#ops);
    this.#save();
    this.#unsubscribe ??= this.engine.onMutation(() => this.#changed());
  }

  /** Resolves once every change made so far is on disk; rejects with StateSaveError if its save failed. */
  durable(): Promise<void> {
    if (!this.#dirty) return Promise.resolve();
    if (this.#closed)
      return Promise.reject(new StateSaveError(this.path, new Error('the state file was closed before the change was saved')));
    return new Promise((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      this.#schedule();
    });
  }

  #changed(): void {
    if (this.#closed) return;
    this.#dirty = true;
    this.#schedule();
  }

  #schedule(): void {
    this.#pending ??= setImmediate(() => {
      this.#pending = undefined;
      this.flush();
    });
  }

  /** Saves now if anything changed, and settles everyone waiting. */
  flush(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    if (!this.#dirty) {
      for (const w of waiters) w.resolve();
      return;
    }
    try {
      this.#save();
    } catch (err) {
      this.#failed(err as Error, waiters);
      return;
    }
    if (this.#failing) {
      this.#failing = false;
      this.#retryMs = RETRY_FIRST_MS;
      if (this.#retry) clearTimeout(this.#retry);
      this.#retry = undefined;
    }
    for (const w of waiters) w.resolve();
  }

  #failed(err: Error, waiters: Waiter[]): void {
    // The record taken from the engine is lost with the failed save: the next one writes everything.
    this.#needSnapshot = true;
    const failure = new StateSaveError(this.path, err);
    if (!this.#failing) this.onError(failure);
    this.#failing = true;
    for (const w of waiters) w.reject(failure);
    if (this.#closed || this.#retry) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.flush();
    }, this.#retryMs);
    this.#retry.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
  }

  #save(): void {
    this.#dirty = true;
    const delta = this.engine.takeDelta();
    if (delta === 'everything' || this.#needSnapshot || !this.#appender) {
      this.#writeSnapshot();
    } else {
      // A failed append is cut back by the appender; the failure path then writes a snapshot.
      this.#appender.append(`${JSON.stringify({ seq: this.#seq + 1, ...delta })}\n`);
      this.#seq++;
      this.#compactIfDue();
    }
    this.#dirty = false;
    this.#writes++;
  }

  /** The record is already durable, so a failed compaction only waits for the next save. */
  #compactIfDue(): void {
    const logBytes = this.#appender!.size - this.#baseBytes;
    if (logBytes <= Math.max(this.#baseBytes, this.#compactFloor)) return;
    try {
      this.#writeSnapshot();
    } catch (err) {
      this.onError(
        new Error(`cannot compact ${this.path} (the change is saved; compaction is tried again later): ${(err as Error).message}`),
      );
    }
  }

  #writeSnapshot(): void {
    const text = snapshotLine(this.engine.snapshot());
    writeFileAtomicSync(this.path, text, { ops: this.#ops });
    this.#appender?.close();
    this.#appender = undefined;
    this.#baseBytes = Buffer.byteLength(text);
    this.#seq = 0;
    this.#compactions++;
    // The snapshot is saved; if the log will not open, the next save writes another snapshot.
    try {
      this.#appender = new DurableAppender(this.path, { ops: this.#ops });
      this.#needSnapshot = false;
    } catch (err) {
      this.#needSnapshot = true;
      this.onError(new Error(`cannot open ${this.path} to append (the next save rewrites it whole): ${(err as Error).message}`));
    }
  }

  /** Final synchronous save; later changes are not saved. */
  close(): void {
    if (this.#pending) clearImmediate(this.#pending);
    this.#pending = undefined;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#closed = true;
    this.flush();
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    this.#appender?.close();
    this.#appender = undefined;
  }
}
