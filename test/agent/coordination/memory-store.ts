// An in-process FleetStore for the agent's own tests, held to the same contract as etcd and Blob
// (memory-store.test.ts runs store-contract.ts on it): shares expire leaseSeconds after their last
// renewal, a claim holds one slot, and `down` makes every call fail as an unreachable store does.
import {
  ANY_SLOT,
  StoreError,
  type Claim,
  type FleetStore,
  type Member,
  type StoreOptions,
} from '../../../src/agent/coordination/store.js';

interface Share {
  vm: string;
  renewedAt: number;
}

interface SlotState {
  claim: Claim | null;
  shares: Share[];
}

/** The shared state of one group: what a store server holds. */
export class MemoryServer {
  readonly slots = new Map<string, SlotState[]>();
  readonly members = new Map<string, Map<string, string>>();
  readonly prepared = new Map<string, Map<string, Set<string>>>();
  /** Every call fails while true. */
  down = false;
  /** Every call the stores made, for assertions. */
  calls: { vm: string; op: string }[] = [];

  constructor(readonly now: () => number = Date.now) {}
}

export class MemoryStore implements FleetStore {
  readonly backend = 'etcd' as const;
  readonly where = 'memory';
  #closed = false;

  constructor(
    readonly server: MemoryServer,
    readonly options: StoreOptions,
  ) {}

  #check(op: string): void {
    this.server.calls.push({ vm: this.options.vm, op });
    if (this.server.down) throw new StoreError(`memory store is down (${op})`);
    if (this.#closed) throw new StoreError('closed');
  }

  get #vm(): string {
    return this.options.vm.toLowerCase();
  }

  #slots(): SlotState[] {
    let slots = this.server.slots.get(this.options.group);
    if (slots === undefined) {
      slots = Array.from({ length: this.options.slots }, () => ({ claim: null, shares: [] }));
      this.server.slots.set(this.options.group, slots);
    }
    const now = this.server.now();
    for (const s of slots) {
      s.shares = s.shares.filter((sh) => now - sh.renewedAt <= this.options.leaseSeconds * 1000);
      if (s.shares.length === 0) s.claim = null;
    }
    return slots;
  }

  async open(): Promise<void> {
    this.#check('open');
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  async tryAcquire(claim: Claim): Promise<string | null> {
    this.#check('acquire');
    const slots = this.#slots();
    const now = this.server.now();
    let i = slots.findIndex((s) => s.claim === claim);
    if (i < 0) i = slots.findIndex((s) => s.claim === null);
    if (i < 0) return null;
    const slot = slots[i]!;
    slot.claim = claim;
    const mine = slot.shares.find((s) => s.vm === this.#vm);
    if (mine) mine.renewedAt = now;
    else slot.shares.push({ vm: this.#vm, renewedAt: now });
    return `slot-${i}`;
  }

  #find(slot: string, claim: Claim): { state: SlotState; share: Share } | null {
    const state = this.#slots()[Number(slot.replace('slot-', ''))];
    const share = state?.claim === claim ? state.shares.find((s) => s.vm === this.#vm) : undefined;
    return state && share ? { state, share } : null;
  }

  async renew(slot: string, claim: Claim): Promise<boolean> {
    this.#check('renew');
    const held = this.#find(slot, claim);
    if (held === null) return false;
    held.share.renewedAt = this.server.now();
    return true;
  }

  async release(slot: string, claim: Claim): Promise<void> {
    this.#check('release');
    // As etcd does: ANY_SLOT finds this VM's share of the claim wherever it is.
    const index = slot === ANY_SLOT ? this.#slots().findIndex((s) => s.claim === claim) : -1;
    const held = this.#find(index >= 0 ? `slot-${index}` : slot, claim);
    if (held === null) return;
    held.state.shares = held.state.shares.filter((s) => s !== held.share);
    if (held.state.shares.length === 0) held.state.claim = null;
  }

  async register(): Promise<void> {
    this.#check('register');
    const members = this.server.members.get(this.options.group) ?? new Map<string, string>();
    members.set(this.#vm, this.options.vm);
    this.server.members.set(this.options.group, members);
  }

  #prepared(): Map<string, Set<string>> {
    const p = this.server.prepared.get(this.options.group) ?? new Map<string, Set<string>>();
    this.server.prepared.set(this.options.group, p);
    return p;
  }

  async members(): Promise<Member[]> {
    this.#check('members');
    const prepared = this.#prepared();
    return [...(this.server.members.get(this.options.group)?.entries() ?? [])].map(([key, vm]) => ({
      vm,
      prepared: [...(prepared.get(key) ?? [])].sort(),
    }));
  }

  async markPrepared(eventId: string): Promise<void> {
    this.#check('mark');
    const p = this.#prepared();
    const set = p.get(this.#vm) ?? new Set<string>();
    set.add(eventId.toLowerCase());
    p.set(this.#vm, set);
  }

  async unmarkPrepared(eventId: string): Promise<void> {
    this.#check('unmark');
    this.#prepared().get(this.#vm)?.delete(eventId.toLowerCase());
  }
}
