// A min-heap of timed entries, earliest first and equal times in the order they were pushed: the engine's
// schedule and Event Grid's delivery queues, so their cost follows the entries due, not all entries held.

/** An entry's due time, and the tie-breaker that keeps equal times in insertion order. */
export interface Timed {
  at: number;
  seq: number;
}

export class MinHeap<T extends Timed> {
  #heap: T[] = [];

  get size(): number {
    return this.#heap.length;
  }

  push(entry: T): void {
    const heap = this.#heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!earlier(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  peek(): T | undefined {
    return this.#heap[0];
  }

  pop(): T | undefined {
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
        if (l < heap.length && earlier(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && earlier(heap[r]!, heap[m]!)) m = r;
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

  /** Keeps only the entries `keep` accepts (a sorted array is a heap). */
  compact(keep: (entry: T) => boolean): void {
    this.#heap = this.#heap.filter(keep).sort((a, b) => (earlier(a, b) ? -1 : 1));
  }
}

function earlier(a: Timed, b: Timed): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
