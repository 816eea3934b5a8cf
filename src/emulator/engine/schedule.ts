// The engine's due times, in a min-heap, so its cost follows the number of changes, not clock ticks.
import { MinHeap } from '../../shared/min-heap.js';

/**
 * A transition that falls due: an event starts, its impact ends, or it ends (ref: event id), a rolling
 * update's next step is scheduled (ref: operation id), or a VM's Scheduled Events
 * is enabled or checked for idleness (ref: VM name).
 */
export interface Due {
  at: number;
  /** Tie-breaker that keeps equal times in insertion order. */
  seq: number;
  ref: string;
  kind: 'start' | 'impact' | 'end' | 'step' | 'enable' | 'idle';
}

export class Schedule {
  readonly #heap = new MinHeap<Due>();
  #seq = 0;

  get size(): number {
    return this.#heap.size;
  }

  push(at: number, ref: string, kind: Due['kind']): void {
    this.#heap.push({ at, seq: this.#seq++, ref, kind });
  }

  peek(): Due | undefined {
    return this.#heap.peek();
  }

  pop(): Due | undefined {
    return this.#heap.pop();
  }

  clear(): void {
    this.#heap.clear();
  }

  /**
   * Keeps only the entries `keep` accepts. Cancelled and rescheduled work leaves stale entries
   * that a clock which never reaches their time would hold forever.
   */
  compact(keep: (due: Due) => boolean): void {
    this.#heap.compact(keep);
  }
}
