// The one interface the agent coordinates a fleet through, outside Kubernetes: a budget of slots
// (at most N VMs of a group prepare at once) and a registry for the barrier (an event naming several
// VMs is approved once each of them is prepared). Backends live beside it, one file each (etcd,
// Azure Blob leases); the agent's rules for using them (when to take a slot, how long to wait, what
// to do at the deadline) live in coordinator.ts, once for all of them.

/**
 * Who a slot is taken for. `vm:NAME`: one VM alone (its events share the slot). `event:ID`: every VM
 * one event names, since one approval takes them down together: the first of them takes a slot, the
 * others join it, and the slot frees once the last of them gives its share back (or dies).
 */
export type Claim = `vm:${string}` | `event:${string}`;

export function vmClaim(vm: string): Claim {
  return `vm:${vm.toLowerCase()}`;
}

export function eventClaim(eventId: string): Claim {
  return `event:${eventId.toLowerCase()}`;
}

/** No slot in particular: see FleetStore.release. */
export const ANY_SLOT = '*';

/** A VM registered in the group, with the events (lowercase ids) it has said it is prepared for. */
export interface Member {
  vm: string;
  prepared: string[];
}

/** What went wrong talking to the store: unreachable, timed out, refused. Callers retry; nothing is lost. */
export class StoreError extends Error {
  override name = 'StoreError';
}

export type StoreBackend = 'etcd' | 'azure-blob' | 'memory';

export interface FleetStore {
  readonly backend: StoreBackend;
  readonly options: StoreOptions;
  /** Where it is, for logs: endpoints or the container URL, never a secret. */
  readonly where: string;

  /** Connects and checks the store answers (or throws StoreError naming what is wrong). */
  open(): Promise<void>;
  /** Stops renewing and closes connections. Held slots stay held until they expire: a restart takes them again. */
  close(): Promise<void>;

  /**
   * Takes a slot for `claim` and returns its name: one this VM already holds for the claim, one
   * another VM holds for the same claim (joined), or a free one. A slot is free when no VM holds it
   * or its holders stopped renewing it `leaseSeconds` ago. Null when every slot is held for another
   * claim. Never lets two claims hold one slot, even when called at once from many VMs.
   */
  tryAcquire(claim: Claim): Promise<string | null>;
  /**
   * Keeps this VM's share of a slot it holds alive for another `leaseSeconds` (also after a
   * restart: the slot name and claim come from the journal). False once it is lost: it expired and
   * the store dropped it or another claim took it. The caller then stops counting it as held.
   */
  renew(slot: string, claim: Claim): Promise<boolean>;
  /**
   * Gives this VM's share back; the slot frees once no VM holds it for the claim. A no-op when not
   * held. With ANY_SLOT: whatever share of the claim a take that timed out may have left, where the
   * store can find it by claim (etcd); where it cannot (Blob), nothing renews it and it frees itself.
   */
  release(slot: string, claim: Claim): Promise<void>;

  /** Puts this VM in the group's registry, so other agents' barriers wait for it. Idempotent. */
  register(): Promise<void>;
  /** Every VM registered in the group, this one included. */
  members(): Promise<Member[]>;
  /** Says this VM is prepared for the event. Idempotent. */
  markPrepared(eventId: string): Promise<void>;
  /** Takes that back, once the event is over. Idempotent. */
  unmarkPrepared(eventId: string): Promise<void>;
}

/** What every backend is built from. */
export interface StoreOptions {
  /** Names the group's keys or blobs: agents of one group share slots and the barrier. */
  group: string;
  slots: number;
  /** This VM, as IMDS names it: the holder and the member. */
  vm: string;
  /** How long a holder that stopped renewing keeps its slot. */
  leaseSeconds: number;
  /** Every store request gives up after this and throws StoreError: an unreachable store never hangs the agent. */
  requestTimeoutMs: number;
}
