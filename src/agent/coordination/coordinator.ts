// The fleet budget and barrier outside Kubernetes, on any FleetStore: a slot taken before the first
// preparation action and given back once recovery has ended; the VM marked prepared, and an event
// naming several registered VMs approved once each is prepared or its deadline comes. Every change
// is journaled first, so a restart gives back what it held and never takes a second slot.
import type { ScheduledEvent } from '../../client/index.js';
import type { AgentMetrics } from '../metrics.js';
import type { ActionLogger, BudgetRecord, FleetBudgetConfig } from '../types.js';
import { memberView, namesOnly, namesOthers } from './barrier.js';
import { waitForSlot } from './slot-wait.js';
import { ANY_SLOT, eventClaim, vmClaim, type Claim, type FleetStore } from './store.js';

/** What a step for one event gives the coordinator: the event, when to stop, and its journal record. */
export interface FleetStep {
  event: ScheduledEvent;
  signal: AbortSignal;
  log: ActionLogger;
  record(): BudgetRecord | undefined;
  /** Writes the record; resolves false if the journal could not take it before the agent stopped. */
  save(record: BudgetRecord): Promise<boolean>;
}

export interface CoordinatorOptions {
  store: FleetStore;
  config: FleetBudgetConfig;
  vmName: string;
  metrics: AgentMetrics;
  log: ActionLogger;
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  dryRun?: boolean;
  /**
   * `per-event`: a controller acting for every VM an event names takes one slot per event (`event:ID`),
   * so the budget is "at most N events at once". Default `per-vm`: an agent's claim (below).
   */
  claims?: 'per-vm' | 'per-event';
}

/** How a wait at the barrier ended. */
export type FleetBarrierOutcome = 'complete' | 'deadline' | 'not-scheduled' | 'aborted';

export interface FleetBarrierWait {
  /** The event as last seen: another VM's approval may Start it while this one waits. */
  event: () => ScheduledEvent;
  signal: AbortSignal;
  log: ActionLogger;
}

/** A failed store call in start-up or recovery is tried again after this, doubling up to the max. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** How often a prepared VM looks again at the others an event names. */
export const BARRIER_POLL_MS = 1_000;
/** [choice] Held slots are renewed at a third of leaseSeconds, and at least this often (Blob leases last 60 s at most). */
export const RENEW_MAX_MS = 15_000;

export class FleetCoordinator {
  readonly #o: CoordinatorOptions;
  readonly #backend: string;

  constructor(options: CoordinatorOptions) {
    this.#o = options;
    this.#backend = options.store.backend;
  }

  get store(): FleetStore {
    return this.#o.store;
  }

  /** Set by the agent: the slots its journal's unrecovered events hold. */
  heldSlots: () => { eventId: string; slot: string; claim: Claim }[] = () => [];

  /** When preparation and the barrier end: NotBefore less the margin; now when there is none (the event has Started). */
  deadline(event: ScheduledEvent): number {
    const notBefore = event.notBefore?.getTime() ?? Number.NaN;
    if (event.status !== 'Scheduled' || Number.isNaN(notBefore)) return this.#o.now();
    return notBefore - this.#o.config.marginSeconds * 1000;
  }

  /**
   * Connects and registers this VM in the group; tries again with backoff until it works or `signal`
   * aborts. Until then other VMs do not wait for this one, and its slots are taken as the store allows.
   */
  async start(signal: AbortSignal): Promise<void> {
    const { store, log } = this.#o;
    let delay = RETRY_FIRST_MS;
    while (!signal.aborted) {
      try {
        await store.open();
        if (this.#o.dryRun !== true) await store.register();
        log.info(
          { backend: this.#backend, where: store.where, group: store.options.group, slots: store.options.slots },
          this.#o.dryRun === true ? 'dry run: the fleet store answers; not registering' : 'registered in the fleet store',
        );
        return;
      } catch (err) {
        this.#storeError('register', err);
        log.warn(
          { err: (err as Error).message, retryInMs: delay, where: store.where },
          'cannot register in the fleet store yet: other VMs will not wait for this one until it can; trying again',
        );
      }
      try {
        await this.#o.sleep(delay, signal);
      } catch {
        return;
      }
      delay = Math.min(RETRY_MAX_MS, delay * 2);
    }
  }

  /** Who the slot is for: every registered VM the event names share one; otherwise this VM alone. */
  async #claimFor(event: ScheduledEvent, log: ActionLogger): Promise<Claim> {
    if (this.#o.claims === 'per-event') return eventClaim(event.id);
    const self = vmClaim(this.#o.vmName);
    if (namesOnly(event, this.#o.vmName)) return self;
    try {
      return namesOthers(event, await this.#o.store.members(), this.#o.vmName) ? eventClaim(event.id) : self;
    } catch (err) {
      // The store is down: tryAcquire will fail too, and the wait says so. No slot is shared on a guess.
      this.#storeError('members', err);
      log.warn({ err: (err as Error).message }, 'cannot list the group’s VMs: taking a slot for this VM alone');
      return self;
    }
  }

  /**
   * Before the first preparation action: a slot, waited for until minPrepareSeconds before the
   * deadline, then over budget. Journaled before anything else runs; a restart finds it there.
   */
  async acquire(step: FleetStep): Promise<{ ok: boolean; error: string | null }> {
    const { event, log } = step;
    const existing = step.record();
    if (existing !== undefined && (existing.slot !== null || existing.overBudget)) return { ok: true, error: null };
    if (this.#o.dryRun === true) {
      log.info({ slots: this.#o.config.slots, group: this.#o.config.group }, 'dry run: would take a budget slot before preparing');
      return { ok: true, error: null };
    }
    const claim = await this.#claimFor(event, log);
    if (claim.startsWith('event:')) {
      log.info({ claim }, 'the event names other VMs of the group: one slot for all of them, since they go down together');
    }
    const slot = await waitForSlot({
      tryAcquire: () => this.#o.store.tryAcquire(claim),
      describe: (s) => s,
      store: `the fleet store (${this.#o.store.where})`,
      slots: this.#o.config.slots,
      deadline: this.deadline(event),
      minPrepareSeconds: this.#o.config.minPrepareSeconds,
      signal: step.signal,
      log,
      now: this.#o.now,
      sleep: this.#o.sleep,
      onError: (err) => this.#storeError('acquire', err),
    });
    if (slot === 'aborted') return { ok: false, error: 'aborted while waiting for a budget slot' };
    if (slot === null) {
      this.#o.metrics.budgetOverBudget.inc({ backend: this.#backend });
      await this.#dropStrayShare(claim);
    }
    const record: BudgetRecord = slot === null ? { claim, slot: null, overBudget: true } : { claim, slot, overBudget: false };
    if (!(await step.save(record))) return { ok: false, error: 'the journal could not record the budget slot' };
    this.#updateGauge();
    return { ok: true, error: null };
  }

  /** Says in the store that this VM is prepared for the event; false (counted) when the store did not take it. */
  async markPrepared(event: ScheduledEvent, log: ActionLogger): Promise<boolean> {
    if (this.#o.dryRun === true) return true;
    try {
      await this.#o.store.markPrepared(event.id);
      log.info({}, 'marked this VM prepared for the event in the fleet store');
      return true;
    } catch (err) {
      this.#storeError('mark', err);
      log.warn({ err: (err as Error).message }, 'cannot mark this VM prepared in the fleet store yet');
      return false;
    }
  }

  /**
   * This VM is prepared: says so in the store, then waits until every registered VM the event names
   * is prepared too ('complete'), or the deadline comes ('deadline': approve anyway, logged and
   * counted). The state is in the store, read again every second, so a dead agent costs the event
   * its wait until the deadline and nothing more; an unreachable store, the same.
   */
  async awaitBarrier(wait: FleetBarrierWait): Promise<FleetBarrierOutcome> {
    const { signal, log } = wait;
    const self = this.#o.vmName;
    let marked = false;
    let waitingLogged: string | null = null;
    let unregisteredLogged = false;
    let failed = false;
    for (;;) {
      if (signal.aborted) return 'aborted';
      const event = wait.event();
      if (event.status !== 'Scheduled') return this.#barrierEnded('not-scheduled');
      if (!marked) marked = await this.markPrepared(event, log);
      if (namesOnly(event, self)) return this.#barrierEnded('complete');
      let waiting: string[] | null = null;
      try {
        const view = memberView(event, await this.#o.store.members(), self);
        if (failed) log.info({}, 'the fleet store can be reached again');
        failed = false;
        waiting = view.waiting;
        if (!unregisteredLogged && view.unregistered.length > 0) {
          unregisteredLogged = true;
          log.info({ notWaitedFor: view.unregistered }, 'the event names VMs no agent of the group registered: not waiting for them');
        }
        if (waiting.length === 0) {
          log.info({ vms: view.named }, 'every VM of the group the event names is prepared: approving for all of them');
          return this.#barrierEnded('complete');
        }
      } catch (err) {
        this.#storeError('members', err);
        if (!failed) log.warn({ err: (err as Error).message }, 'cannot read the group’s VMs from the fleet store; trying again');
        failed = true;
      }
      if (this.#o.dryRun === true) {
        log.info({ waitingFor: waiting }, 'dry run: would wait for the other VMs the event names before approving');
        return 'complete';
      }
      const deadline = this.deadline(event);
      const now = this.#o.now();
      if (now >= deadline) {
        log.error(
          { notPrepared: waiting, deadline: new Date(deadline).toISOString() },
          waiting === null
            ? 'the deadline came and the fleet store could not be read: approving anyway'
            : 'the deadline came before every VM the event names was prepared: approving anyway',
        );
        return this.#barrierEnded('deadline');
      }
      const key = waiting?.join(', ') ?? null;
      if (key !== null && key !== waitingLogged) {
        waitingLogged = key;
        log.info(
          { waitingFor: waiting, deadline: new Date(deadline).toISOString() },
          'this VM is prepared: waiting for the other VMs the event names before approving',
        );
      }
      try {
        await this.#o.sleep(Math.min(BARRIER_POLL_MS, deadline - now), signal);
      } catch {
        return 'aborted';
      }
    }
  }

  #barrierEnded(outcome: Exclude<FleetBarrierOutcome, 'aborted'>): FleetBarrierOutcome {
    this.#o.metrics.barrierOutcomes.inc({ backend: this.#backend, outcome });
    return outcome;
  }

  /**
   * After the event and its recovery actions: the prepared mark off, then this VM's share of the
   * slot back (unless another of its unrecovered events holds the same one). Retries until done or
   * aborted; a stop leaves it in the journal for the next start.
   */
  async recover(step: FleetStep): Promise<{ ok: boolean; error: string | null }> {
    const { event, log } = step;
    let delay = RETRY_FIRST_MS;
    for (;;) {
      try {
        if (this.#o.dryRun !== true) await this.#o.store.unmarkPrepared(event.id);
        const record = step.record();
        if (record !== undefined && record.slot === null && record.overBudget && !this.heldSlots().some((h) => h.claim === record.claim)) {
          await this.#o.store.release(ANY_SLOT, record.claim as Claim);
        }
        if (record?.slot != null) {
          const { slot } = record;
          const claim = record.claim as Claim;
          if (!this.#stillNeeded(event.id, slot, claim)) await this.#o.store.release(slot, claim);
          log.info({ slot, claim }, 'gave the budget slot back');
          if (!(await step.save({ ...record, slot: null })))
            return { ok: false, error: 'the journal could not record the slot given back' };
          this.#updateGauge();
        }
        return { ok: true, error: null };
      } catch (err) {
        this.#storeError('release', err);
        log.warn({ err: (err as Error).message, retryInMs: delay }, 'cannot give the budget slot back yet; trying again');
        try {
          await this.#o.sleep(delay, step.signal);
        } catch {
          return { ok: false, error: `aborted: ${(err as Error).message}` };
        }
        delay = Math.min(RETRY_MAX_MS, delay * 2);
      }
    }
  }

  /** A take whose answer timed out may still have landed: over budget, this VM must not keep a share it does not know of. */
  async #dropStrayShare(claim: Claim): Promise<void> {
    // Another event of this VM holding the claim (vm:NAME) holds that share for real.
    if (this.heldSlots().some((h) => h.claim === claim)) return;
    try {
      await this.#o.store.release(ANY_SLOT, claim);
    } catch (err) {
      // Tried again at recovery, when the record says over budget.
      this.#storeError('release', err);
    }
  }

  #stillNeeded(eventId: string, slot: string, claim: Claim): boolean {
    const self = eventId.toLowerCase();
    return this.heldSlots().some((h) => h.eventId.toLowerCase() !== self && h.slot === slot && h.claim === claim);
  }

  /**
   * Keeps every held slot alive (also after a restart, through the journal) until `signal` aborts. A
   * slot found lost is said once: this VM no longer counts it, and giving it back later is a no-op.
   */
  async renewSlots(signal: AbortSignal): Promise<void> {
    const every = Math.min(RENEW_MAX_MS, (this.#o.config.leaseSeconds * 1000) / 3);
    const lost = new Set<string>();
    while (!signal.aborted) {
      for (const { slot, claim } of this.#distinct()) {
        const key = `${slot} ${claim}`;
        if (lost.has(key)) continue;
        try {
          if (!(await this.#o.store.renew(slot, claim))) {
            lost.add(key);
            this.#o.metrics.budgetSlotsLost.inc({ backend: this.#backend });
            this.#o.log.error(
              { slot, claim },
              'lost a budget slot: it expired in the fleet store (this VM could not renew it in time); no longer counting it as held',
            );
          }
        } catch (err) {
          this.#storeError('renew', err);
          this.#o.log.warn({ err: (err as Error).message, slot }, 'cannot renew a budget slot; trying again');
        }
      }
      this.#o.metrics.budgetSlotsHeld.set(
        { backend: this.#backend },
        this.#distinct().filter((h) => !lost.has(`${h.slot} ${h.claim}`)).length,
      );
      try {
        await this.#o.sleep(every, signal);
      } catch {
        return;
      }
    }
  }

  #distinct(): { slot: string; claim: Claim }[] {
    const out: { slot: string; claim: Claim }[] = [];
    for (const h of this.heldSlots()) if (!out.some((o) => o.slot === h.slot && o.claim === h.claim)) out.push(h);
    return out;
  }

  #updateGauge(): void {
    this.#o.metrics.budgetSlotsHeld.set({ backend: this.#backend }, this.#distinct().length);
  }

  #storeError(operation: string, _err?: unknown): void {
    this.#o.metrics.budgetStoreErrors.inc({ backend: this.#backend, operation });
  }

  async close(): Promise<void> {
    await this.#o.store.close();
  }
}
