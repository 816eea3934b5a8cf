// The cluster-wide budget: at most `slots` nodes prepare for maintenance at once. Each slot is a
// coordination.k8s.io Lease `<name>-<i>`; a node holds one by naming itself the holder and renewing
// it. Leases last longer than a reboot, so a slot is kept through one, and a dead holder's slot
// frees itself once its lease runs out.
import type { KubeApi, Lease } from './api.js';

export interface Slot {
  namespace: string;
  name: string;
}

export interface BudgetOptions {
  namespace: string;
  name: string;
  slots: number;
  leaseDurationSeconds: number;
  /** Who holds a slot: the node's name, the same after a restart or a reboot. */
  holder: string;
  now: () => number;
}

export class Budget {
  constructor(
    private readonly api: KubeApi,
    readonly options: BudgetOptions,
  ) {}

  slotNames(): string[] {
    return Array.from({ length: this.options.slots }, (_, i) => `${this.options.name}-${i}`);
  }

  /** A slot this node holds or has just taken, or null when every slot is held by a live holder. */
  async tryAcquire(): Promise<Slot | null> {
    const { namespace, holder, leaseDurationSeconds } = this.options;
    for (const name of this.slotNames()) {
      const now = this.options.now();
      const lease = await this.api.getLease(namespace, name);
      // Taken again by its holder (after a restart), it keeps the time it was first acquired.
      const acquiredAt = lease !== null && lease.holder === holder ? (lease.acquiredAt ?? now) : now;
      const write = { namespace, name, holder, renewedAt: now, acquiredAt, durationSeconds: leaseDurationSeconds };
      if (lease === null) {
        if ((await this.api.createLease({ ...write, transitions: 0 })) !== null) return { namespace, name };
        continue;
      }
      if (lease.holder !== holder && !this.isFree(lease, now)) continue;
      const taken = await this.api.replaceLease({
        ...write,
        resourceVersion: lease.resourceVersion,
        transitions: lease.holder === holder ? lease.transitions : lease.transitions + 1,
      });
      // A 409: another node took it between the read and the write; try the next slot.
      if (taken !== null) return { namespace, name };
    }
    return null;
  }

  /** No holder, or its holder stopped renewing it for longer than the lease lasts. */
  isFree(lease: Lease, now: number = this.options.now()): boolean {
    if (lease.holder === null) return true;
    if (lease.renewedAt === null) return true;
    const duration = (lease.durationSeconds ?? this.options.leaseDurationSeconds) * 1000;
    return now > lease.renewedAt + duration;
  }

  /** Renews a slot still held; false when it has been lost (taken over after expiring). */
  async renew(slot: Slot): Promise<boolean> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const lease = await this.api.getLease(slot.namespace, slot.name);
      if (lease === null || lease.holder !== this.options.holder) return false;
      const renewed = await this.api.replaceLease({
        namespace: slot.namespace,
        name: slot.name,
        holder: this.options.holder,
        renewedAt: this.options.now(),
        // A PUT replaces the whole spec: without it, the first renewal would erase when the slot was taken.
        ...(lease.acquiredAt !== null ? { acquiredAt: lease.acquiredAt } : {}),
        durationSeconds: this.options.leaseDurationSeconds,
        resourceVersion: lease.resourceVersion,
        transitions: lease.transitions,
      });
      if (renewed !== null) return true;
    }
    return false;
  }

  /** Gives the slot back if this node still holds it. */
  async release(slot: Slot): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const lease = await this.api.getLease(slot.namespace, slot.name);
      if (lease === null || lease.holder !== this.options.holder) return;
      const released = await this.api.replaceLease({
        namespace: slot.namespace,
        name: slot.name,
        holder: null,
        renewedAt: this.options.now(),
        durationSeconds: this.options.leaseDurationSeconds,
        resourceVersion: lease.resourceVersion,
        transitions: lease.transitions,
      });
      if (released !== null) return;
    }
    throw new Error(`cannot give back budget slot ${slot.namespace}/${slot.name}: it kept changing`);
  }
}
