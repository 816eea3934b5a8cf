// A min-heap of due times, so the engine's cost follows the number of changes, not clock ticks.

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
  #heap: Due[] = [];
  #seq = 0;

  get size(): number {
    return this.#heap.length;
  }

  push(at: number, ref: string, kind: Due['kind']): void {
    const heap = this.#heap;
    heap.push({ at, seq: this.#seq++, ref, kind });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  peek(): Due | undefined {
    return this.#heap[0];
  }

  pop(): Due | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  }

  clear(): void {
    this.#heap = [];
  }

  /**
   * Keeps only the entries `keep` accepts. Cancelled and rescheduled work leaves stale entries
   * that a clock which never reaches their time would hold forever; a sorted array is a heap.
   */
  compact(keep: (due: Due) => boolean): void {
    this.#heap = this.#heap.filter(keep).sort((a, b) => (less(a, b) ? -1 : 1));
  }
}

function less(a: Due, b: Due): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
