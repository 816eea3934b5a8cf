// How long a VM waits for a budget slot, for every budget (Kubernetes Leases, etcd, Azure Blob): until
// only minPrepareSeconds are left before its deadline, then it prepares anyway, over budget, since
// maintenance starts at NotBefore whether this VM is ready or not.
import type { ActionLogger } from '../types.js';

export interface SlotWait<S> {
  /** One try: a slot, or null when every slot is held; throws when the store cannot be reached. */
  tryAcquire: () => Promise<S | null>;
  /** The slot as logs name it. */
  describe: (slot: S) => string;
  /** What holds the slots, for the line logged when it cannot be reached ("the budget Leases"). */
  store: string;
  slots: number;
  /** When preparation must be over (epoch ms). */
  deadline: number;
  minPrepareSeconds: number;
  signal: AbortSignal;
  log: ActionLogger;
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Each failed try, for metrics. */
  onError?: (err: unknown) => void;
}

/** How often a VM waiting for a slot asks again. */
export const SLOT_POLL_MS = 2_000;

/** The slot; null once giving up (logged: prepare over budget); 'aborted' when the signal aborts. */
export async function waitForSlot<S>(w: SlotWait<S>): Promise<S | null | 'aborted'> {
  const giveUpAt = w.deadline - w.minPrepareSeconds * 1000;
  let logged = false;
  let unreachable = false;
  for (;;) {
    if (w.signal.aborted) return 'aborted';
    try {
      const slot = await w.tryAcquire();
      if (unreachable) w.log.info({}, `${w.store} can be reached again`);
      unreachable = false;
      if (slot !== null) {
        w.log.info({ slot: w.describe(slot) }, 'took a budget slot');
        return slot;
      }
    } catch (err) {
      w.onError?.(err);
      if (!unreachable) w.log.warn({ err: (err as Error).message }, `cannot reach ${w.store}; trying again`);
      unreachable = true;
    }
    const now = w.now();
    if (now >= giveUpAt) {
      w.log.error(
        { slots: w.slots, deadline: new Date(w.deadline).toISOString(), storeUnreachable: unreachable },
        unreachable
          ? `${w.store} could not be reached before the deadline: preparing anyway, over budget, as far as time allows`
          : 'no budget slot freed before the deadline: preparing anyway, over budget, as far as time allows',
      );
      return null;
    }
    if (!logged && !unreachable) {
      logged = true;
      w.log.info({ slots: w.slots, until: new Date(giveUpAt).toISOString() }, 'every budget slot is held: waiting for one');
    }
    try {
      await w.sleep(Math.min(SLOT_POLL_MS, giveUpAt - now), w.signal);
    } catch {
      return 'aborted';
    }
  }
}
