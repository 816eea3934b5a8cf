// The journal as the agent's steps use it on a disk that may fill: a change that cannot be written
// stays in memory and is retried with backoff, and a step that relies on a change being on disk
// waits here, held and logged, until it is (or its deadline for unjournaled preparation comes, or
// the agent stops). The one owner of "is it on disk yet".
import type { Logger } from './logger.js';
import type { AgentServices } from './services.js';

/** A failed journal write is retried after this, doubling up to the max: a freed disk is noticed within seconds. */
const JOURNAL_RETRY_BASE_MS = 250;
const JOURNAL_RETRY_MAX_MS = 5_000;
/** A held event is logged when it is held, then at most this often while it stays held. */
const HELD_LOG_EVERY_MS = 30_000;
/** How often a held step re-checks its deadline (NotBefore may move, or the event Start). */
const HELD_RECHECK_MS = 1_000;

/** How a wait for the journal ended: on disk, given up for unjournaled preparation, or the agent/event stopped. */
export type Durable = 'written' | 'unjournaled' | 'stopped';

/** Who waits: one event's step, logged under the event's own logger. */
export interface Holder {
  key: string;
  event: { id: string };
  log: Logger;
}

interface Held {
  eventId: string;
  step: string;
  since: number;
  loggedAt: number;
  log: Logger;
}

export interface DurableJournalOptions extends AgentServices {
  /** The journal's path, for messages. */
  path: string;
}

export class DurableJournal {
  readonly #o: DurableJournalOptions;
  /** Steps waiting for the journal, keyed `${event key} ${step}`. */
  readonly #held = new Map<string, Held>();
  /** The last write error while a change is not on disk; null once it is. */
  #error: Error | null = null;
  /** Resolves when the journal is written again; exists while the retry loop runs. */
  #written: { promise: Promise<void>; resolve: () => void } | null = null;
  /** Whether the retry loop is running; at most one at a time. */
  #retryLoopRunning = false;

  constructor(options: DurableJournalOptions) {
    this.#o = options;
  }

  /** How many events have a step held back. */
  heldEvents(): number {
    return new Set([...this.#held.values()].map((h) => h.eventId)).size;
  }

  /** Why the journal keeps the agent from being ready, or null. */
  notReady(): string | null {
    if (this.#error === null || !this.#o.journal().pending) return null;
    const held = [...this.#held.values()].map((h) => `${h.eventId} (${h.step})`);
    return `the journal ${this.#o.path} cannot be written: ${this.#error.message}; ${
      held.length > 0 ? `events held back: ${held.join(', ')}` : 'no event held back yet'
    }`;
  }

  /**
   * Makes one journal change. A write that fails leaves the change in memory (the journal's
   * `pending`), counts it, and starts the retry loop; the caller then waits in durable() before
   * doing anything that relies on the change being on disk. Errors other than writes throw.
   */
  write(change: () => unknown): boolean {
    const journal = this.#o.journal();
    try {
      change();
      if (!journal.pending) this.#journalWritten();
      return true;
    } catch (err) {
      if (!journal.pending) throw err;
      this.failed(err as Error);
      return false;
    }
  }

  /** A write failed outside write() (the first flush at start-up): retry until it takes. */
  failed(err: Error): void {
    this.#o.metrics.journalWriteFailures.inc();
    this.#error = err;
    void this.#retrying();
  }

  /**
   * Waits until every journal change so far is on disk ('written'), holding `holder`'s work at
   * `step` meanwhile; 'unjournaled' once `unjournaledAt` (the policy's deadline) has come, or
   * 'stopped' when the agent stops or `signal` aborts.
   */
  async durable(holder: Holder, step: string, options: { unjournaledAt?: () => number; signal?: AbortSignal } = {}): Promise<Durable> {
    const { journal, now, path, stopped, wait } = this.#o;
    if (!journal().pending) return 'written';
    const id = `${holder.key} ${step}`;
    const since = now();
    this.#held.set(id, { eventId: holder.event.id, step, since, loggedAt: since, log: holder.log });
    holder.log.error(
      { step, err: this.#error?.message ?? null, journal: path },
      'the journal cannot be written: this event is held back at this step until it can',
    );
    const waits = options.signal ? AbortSignal.any([stopped, options.signal]) : stopped;
    try {
      for (;;) {
        if (!journal().pending) {
          holder.log.info({ step, heldForSeconds: Math.round((now() - since) / 1000) }, 'the journal took the write: carrying on');
          return 'written';
        }
        if (waits.aborted) return 'stopped';
        const at = options.unjournaledAt?.() ?? Number.POSITIVE_INFINITY;
        if (now() >= at) return 'unjournaled';
        const tick = new AbortController();
        const written = this.#retrying();
        await Promise.race([written, wait(Math.min(HELD_RECHECK_MS, at - now()), AbortSignal.any([waits, tick.signal]))]);
        tick.abort();
      }
    } finally {
      this.#held.delete(id);
    }
  }

  /**
   * Starts the retry loop unless one runs; returns what resolves once the journal is written. The
   * loop is tracked apart from the waiters: a write that lands between its sleeps wakes them,
   * and a failure right after must not start a second loop beside the sleeping one.
   */
  #retrying(): Promise<void> {
    if (this.#written === null) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.#written = { promise, resolve };
    }
    if (!this.#retryLoopRunning) {
      this.#retryLoopRunning = true;
      this.#o.track(this.#retryJournal());
    }
    return this.#written.promise;
  }

  /** Rewrites the journal with backoff until it takes, or the agent stops. */
  async #retryJournal(): Promise<void> {
    const { journal, metrics, now, stopped, wait } = this.#o;
    let written = false;
    try {
      for (let failures = 1; journal().pending; failures++) {
        const delay = Math.min(JOURNAL_RETRY_MAX_MS, JOURNAL_RETRY_BASE_MS * 2 ** (failures - 1));
        if (!(await wait(delay, stopped))) return;
        if (!journal().pending) break;
        try {
          journal().flush();
        } catch (err) {
          metrics.journalWriteFailures.inc();
          this.#error = err as Error;
          const at = now();
          for (const held of this.#held.values()) {
            if (at - held.loggedAt < HELD_LOG_EVERY_MS) continue;
            held.loggedAt = at;
            held.log.error(
              { step: held.step, heldForSeconds: Math.round((at - held.since) / 1000), err: (err as Error).message },
              'still held back: the journal cannot be written',
            );
          }
        }
      }
      written = true;
    } finally {
      // Synchronously where the loop ends, so a failure from here on starts a new loop.
      this.#retryLoopRunning = false;
      if (written) this.#journalWritten();
    }
  }

  /** The journal is on disk again: wake every held step. */
  #journalWritten(): void {
    const written = this.#written;
    if (written === null) return;
    this.#written = null;
    this.#error = null;
    this.#o.log.info({ journal: this.#o.path, heldEvents: this.heldEvents() }, 'the journal can be written again');
    written.resolve();
  }
}
