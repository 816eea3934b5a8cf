// Faults injected into IMDS answers, so clients can be tested against IMDS's bad days.
import { randomUUID } from 'node:crypto';

export const FAULT_STATUSES = [410, 429, 500] as const;
export type FaultStatus = (typeof FAULT_STATUSES)[number];

export interface FaultSpec {
  /** Only this VM's requests; absent means any VM. */
  vm?: string | undefined;
  status?: FaultStatus | undefined;
  latencyMs?: number | undefined;
  /** Close the connection without answering. */
  drop?: boolean | undefined;
  /** How many requests it affects; [choice] 1 when absent. */
  count?: number | undefined;
}

export interface Fault {
  id: string;
  vm: string | null;
  status: FaultStatus | null;
  latencyMs: number;
  drop: boolean;
  remaining: number;
}

export class FaultRegistry {
  #faults: Fault[] = [];
  readonly #listeners = new Set<() => void>();

  /** Called after every change: a fault added, used up in part or whole, or cleared. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }

  add(spec: FaultSpec): Fault {
    const fault: Fault = {
      id: randomUUID(),
      vm: spec.vm ?? null,
      status: spec.status ?? null,
      latencyMs: spec.latencyMs ?? 0,
      drop: spec.drop ?? false,
      remaining: spec.count ?? 1,
    };
    this.#faults.push(fault);
    this.#changed();
    return { ...fault };
  }

  list(): Fault[] {
    return this.#faults.map((f) => ({ ...f }));
  }

  clear(): void {
    const had = this.#faults.length > 0;
    this.#faults = [];
    if (had) this.#changed();
  }

  get size(): number {
    return this.#faults.length;
  }

  /** Consumes one use of the oldest fault that applies to this VM, if any. */
  take(vm: string): Fault | undefined {
    const i = this.#faults.findIndex((f) => f.vm === null || f.vm === vm);
    if (i < 0) return undefined;
    const fault = this.#faults[i]!;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.#faults.splice(i, 1);
    this.#changed();
    return { ...fault };
  }
}
