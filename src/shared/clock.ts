// The only place that reads the wall clock. Everything else takes a Clock, or a `now` function defaulting to these.
// Neutral ground: the emulator, the agent and the CLI all import it, and it imports nothing of theirs.
import { performance } from 'node:perf_hooks';
import type { CLOCK_MODES } from '../protocol/control.js';

export type ClockMode = (typeof CLOCK_MODES)[number];

export interface Clock {
  readonly mode: ClockMode;
  /** Current time in epoch milliseconds. */
  now(): number;
  /** Called after the clock is moved by hand; a clock that runs by itself has none. */
  onAdvance?(listener: () => void): () => void;
}

export class SystemClock implements Clock {
  readonly mode = 'system' as const;
  now(): number {
    return Date.now();
  }
}

/** Time moves only when told to, so tests run hours of maintenance in milliseconds. */
export class ManualClock implements Clock {
  readonly mode = 'manual' as const;
  #now: number;
  readonly #listeners = new Set<() => void>();
  constructor(start: number = wallClock()) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`cannot advance the clock by ${ms} ms`);
    this.#now += ms;
    if (ms > 0) this.#moved();
    return this.#now;
  }
  /** Move forward to an absolute time; time never goes backwards. */
  advanceTo(at: number): number {
    if (at > this.#now) {
      this.#now = at;
      this.#moved();
    }
    return this.#now;
  }
  onAdvance(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  #moved(): void {
    for (const listener of this.#listeners) listener();
  }
}

/** Wall-clock time in epoch ms: start-up values (a manual clock's first reading) and the agent's and CLI's `now` default. */
export function wallClock(): number {
  return Date.now();
}

/** Real elapsed time for rate limits and action durations, which measure real work whatever the simulated clock says. */
export function monotonicMs(): number {
  return performance.now();
}
