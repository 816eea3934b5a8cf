// Faults injected into IMDS answers, so clients can be tested against IMDS's bad days; and Event Grid's
// duplicate notifications, so its consumers can be tested against at-least-once delivery.
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
  /**
   * Not an IMDS fault: the next `count` Event Grid notifications (of this VM's events, with `vm`) are
   * published twice with the same id ([azure] "In rare cases the same notification might be broadcasted
   * to the system topic multiple times … Both events have the same ID value").
   */
  duplicate?: boolean | undefined;
}

export interface Fault {
  id: string;
  vm: string | null;
  status: FaultStatus | null;
  latencyMs: number;
  drop: boolean;
  duplicate: boolean;
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
      duplicate: spec.duplicate ?? false,
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

  /** Consumes one use of the oldest IMDS fault that applies to this VM, if any. */
  take(vm: string): Fault | undefined {
    return this.#use(this.#faults.findIndex((f) => !f.duplicate && (f.vm === null || f.vm === vm)));
  }

  /** Consumes one use of the oldest duplicate fault that applies to an event naming these VMs, if any. */
  takeDuplicate(resources: readonly string[]): Fault | undefined {
    return this.#use(this.#faults.findIndex((f) => f.duplicate && (f.vm === null || resources.includes(f.vm))));
  }

  #use(i: number): Fault | undefined {
    if (i < 0) return undefined;
    const fault = this.#faults[i]!;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.#faults.splice(i, 1);
    this.#changed();
    return { ...fault };
  }
}
