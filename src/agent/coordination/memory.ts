// The FleetStore in the controller's own process: the controller is the one place that takes slots
// and approves, so its budget needs no store shared with anyone. Nothing outlives the process; a
// restarted controller takes back the slots its journal says it held (renew() of a free slot takes it).
import type { Claim, FleetStore, Member, StoreOptions } from './store.js';

export class MemoryStore implements FleetStore {
  readonly backend = 'memory' as const;
  readonly where = 'the controller’s memory';
  /** Slot name → the claim holding it. */
  readonly #held = new Map<string, Claim>();
  readonly #prepared = new Set<string>();

  constructor(readonly options: StoreOptions) {}

  async open(): Promise<void> {}

  async close(): Promise<void> {}

  #slots(): string[] {
    return Array.from({ length: this.options.slots }, (_, i) => `slot-${i}`);
  }

  async tryAcquire(claim: Claim): Promise<string | null> {
    const slots = this.#slots();
    const mine = slots.find((s) => this.#held.get(s) === claim);
    if (mine !== undefined) return mine;
    const free = slots.find((s) => !this.#held.has(s));
    if (free === undefined) return null;
    this.#held.set(free, claim);
    return free;
  }

  /** Kept while held for the claim; a free slot is taken again (a restart's held slots, from the journal). */
  async renew(slot: string, claim: Claim): Promise<boolean> {
    const holder = this.#held.get(slot);
    if (holder !== undefined) return holder === claim;
    if (!this.#slots().includes(slot)) return false;
    this.#held.set(slot, claim);
    return true;
  }

  async release(slot: string, claim: Claim): Promise<void> {
    for (const [name, holder] of this.#held) {
      if (holder === claim && (slot === '*' || slot === name)) this.#held.delete(name);
    }
  }

  async register(): Promise<void> {}

  /** The controller alone; it is never waited for, since it acts for every VM itself. */
  async members(): Promise<Member[]> {
    return [{ vm: this.options.vm, prepared: [...this.#prepared] }];
  }

  async markPrepared(eventId: string): Promise<void> {
    this.#prepared.add(eventId.toLowerCase());
  }

  async unmarkPrepared(eventId: string): Promise<void> {
    this.#prepared.delete(eventId.toLowerCase());
  }
}
