// The emulator's engine, as the servers, the state file and the CLI see it: a thin facade over the
// owners that hold its state (core.ts lists them). Every public call ticks first, so state is as of
// now, lets one owner act, then commits: history is pruned, the schedule compacted, and each VM
// whose document changed gets one new incarnation and is reported once.
import { randomUUID } from 'node:crypto';
import { ActivationTracker, type ActivationOptions, type ActivationState, type ActivationStatus } from './activation.js';
import type { Clock } from '../../shared/clock.js';
import { ChangeLog, TrackedMap } from './changes.js';
import { cloneEvent, type EngineCore, type EventTransition, type TransitionStatus } from './core.js';
import { Documents, FIRST_INCARNATION } from './documents.js';
import { invalid, notFound } from './errors.js';
import { Fleet, vmToSpec, type Vm, type VmSpec } from './fleet.js';
import { FleetKeeper } from './fleet-keeper.js';
import { History } from './history.js';
import { Lifecycle, type ApprovalChannel, type EventLookup } from './lifecycle.js';
import { LiveEvents } from './live-events.js';
import type {
  DocumentState,
  EndedEvent,
  EngineDelta,
  EngineEvent,
  EngineSnapshot,
  JobMember,
  Operation,
  OperationRequest,
  OperationStatus,
  WebhookSubscription,
} from './model.js';
import { OperationBook } from './operation-book.js';
import { EXCLUSIVE_EVENT_TYPES } from './policies/index.js';
import type { Page, PageRequest } from './paging.js';
import { deltaOf, restoreInto, snapshotOf } from './persistence.js';
import { Schedule, type Due } from './schedule.js';
import { Timing } from './timing.js';
import type { DeletedVm, VmState } from './vm-state.js';

export * from './model.js';
export { FIRST_INCARNATION };
export type { ApprovalChannel, EventLookup, EventTransition, TransitionStatus };

export type ChangeListener = (vms: readonly string[]) => void;

export interface EngineOptions {
  clock: Clock;
  timing?: Timing;
  fleet?: readonly VmSpec[];
  newId?: () => string;
  /** Off by default: every VM sees its events from the start. */
  activation?: ActivationOptions;
  /** How many ended events, finished operations and deleted VMs to keep; DEFAULT_HISTORY_LIMIT when absent. */
  historyLimit?: number;
}

/**
 * [choice] Ended events (and finished operations, deleted VMs) kept: one page at the largest page
 * size, five times what the dashboard's timeline draws, and about 1.4 MB of memory and state file.
 */
export const DEFAULT_HISTORY_LIMIT = 1000;

/** Below this many entries the schedule is never compacted: stale entries then cost nothing. */
const SCHEDULE_COMPACT_MIN = 1024;

export class Engine {
  readonly clock: Clock;
  readonly timing: Timing;
  readonly fleet: Fleet;
  readonly #core: EngineCore;
  readonly #listeners = new Set<ChangeListener>();
  readonly #mutationListeners = new Set<() => void>();
  readonly #transitionListeners = new Set<(transition: EventTransition) => void>();
  #mutated = false;
  #ticking = false;

  constructor(options: EngineOptions) {
    this.clock = options.clock;
    this.timing = options.timing ?? new Timing(1);
    const newId = options.newId ?? (() => randomUUID().toUpperCase());
    const historyLimit = options.historyLimit ?? DEFAULT_HISTORY_LIMIT;
    if (!Number.isInteger(historyLimit) || historyLimit < 0) {
      throw invalid(`historyLimit must be an integer of 0 or more, got ${String(options.historyLimit)}`);
    }
    this.fleet = new Fleet(newId);
    const changes = new ChangeLog();
    const schedule = new Schedule();
    // The owners reach each other through the core; each is built before anything calls it.
    const core = {
      clock: this.clock,
      timing: this.timing,
      newId,
      changes,
      fleet: this.fleet,
      live: new LiveEvents(changes, EXCLUSIVE_EVENT_TYPES),
      subscriptions: new TrackedMap<string, WebhookSubscription>(changes),
      history: new History(historyLimit, changes),
      schedule,
      markMutated: () => {
        this.#mutated = true;
      },
      transitioned: (event: EngineEvent, status: TransitionStatus, at: number) => {
        if (this.#transitionListeners.size === 0) return;
        const transition = { event, status, at };
        for (const listener of this.#transitionListeners) listener(transition);
      },
    } as Partial<Mutable<EngineCore>> as Mutable<EngineCore>;
    core.documents = new Documents(core);
    core.activation = new ActivationTracker(options.activation ?? { mode: 'off' }, changes, {
      timing: this.timing,
      schedule,
      hasVm: (name) => this.fleet.vms.has(name),
      touchVm: (name) => core.documents.touchVm(name),
      markMutated: core.markMutated,
    });
    core.vms = new FleetKeeper(core);
    core.lifecycle = new Lifecycle(core);
    core.operations = new OperationBook(core);
    this.#core = core;
    for (const spec of options.fleet ?? []) core.vms.add(spec);
    core.vms.startFleet.isNow();
  }

  // ---- queries -------------------------------------------------------------

  now(): number {
    return this.clock.now();
  }

  /** The document a VM sees now, independent of api-version. */
  documentFor(name: string): DocumentState {
    this.tick();
    return this.#core.documents.documentFor(name);
  }

  /** Cheap check for renderers that cache by incarnation. */
  incarnationOf(name: string): number {
    this.tick();
    this.fleet.get(name);
    return this.#core.documents.incarnation(name);
  }

  events(): EngineEvent[] {
    this.tick();
    return [...this.#core.live.values()].map(cloneEvent);
  }

  event(id: string): EngineEvent {
    this.tick();
    const e = this.#core.live.get(id.toUpperCase());
    if (!e) throw notFound(this.hasEnded(id) ? `event ${id} has already ended` : `no event with id ${id}`);
    return cloneEvent(e);
  }

  hasEnded(id: string): boolean {
    return this.#core.history.has(id.toUpperCase());
  }

  /** Ended events whose history is known, newest first, a page at a time. */
  history(request: PageRequest = {}): Page<EndedEvent & { event: EngineEvent }> {
    this.tick();
    const page = this.#core.history.page(request);
    return { items: page.items.map((e) => ({ ...e, resources: [...e.resources], event: cloneEvent(e.event) })), next: page.next };
  }

  /**
   * What each VM is going through now; a VM missing from the map is running. A Started event
   * marks its VMs only during its impact: after that they run again while it stays in the document.
   */
  vmStates(): Map<string, VmState> {
    this.tick();
    return this.#core.lifecycle.vmStates(this.now());
  }

  /** VMs that a delete removed, until a VM of the same name is added again. */
  deletedVms(): DeletedVm[] {
    // Like the other queries: a Terminate that has run its course by now has deleted its VMs.
    this.tick();
    return [...this.#core.history.deleted.values()].map((d) => ({ ...d }));
  }

  /** Operations newest first, a page at a time; `status` keeps only those in that state. */
  operations(request: PageRequest & { status?: OperationStatus | undefined } = {}): Page<Operation> {
    this.tick();
    const page = this.#core.operations.page(request);
    return { items: page.items.map((o) => structuredClone(o)), next: page.next };
  }

  operation(id: string): Operation {
    this.tick();
    const op = this.#core.operations.get(id.toLowerCase());
    if (!op) throw notFound(`no operation with id ${id}`);
    return structuredClone(op);
  }

  /** The tenants of an event's job and whether each has approved. */
  jobMembers(eventId: string): JobMember[] {
    const { live } = this.#core;
    const event = live.get(eventId.toUpperCase());
    if (!event) return [];
    return live.ofJob(event.jobId).map((e) => ({ tenant: e.tenant, event: e.id, approved: e.approvals.length > 0 }));
  }

  get activationMode(): ActivationOptions['mode'] {
    return this.#core.activation.mode;
  }

  activationOf(name: string): { status: ActivationStatus } & ActivationState {
    this.fleet.get(name);
    return this.#core.activation.of(name);
  }

  /** Entries waiting in the schedule, stale ones included: for tests and benchmarks. */
  get pendingTransitions(): number {
    return this.#core.schedule.size;
  }

  /** How many events this engine has created, ended ones included. */
  get eventsCreated(): number {
    return this.#core.lifecycle.created;
  }

  /** When the next lifecycle transition is due, for runtimes that sleep until then. */
  nextDue(): number | undefined {
    return this.#core.schedule.peek()?.at;
  }

  /** Called with the VMs whose documents changed, once per change. */
  onChange(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Called after any change of state, including ones no document shows (such as a recorded approval). */
  onMutation(listener: () => void): () => void {
    this.#mutationListeners.add(listener);
    return () => this.#mutationListeners.delete(listener);
  }

  /**
   * Called at each status change of an event (Scheduled, Started, Completed, Canceled) as it happens,
   * in order; not for events a reset drops or a restore brings back. The listener must not call the engine.
   */
  onEventTransition(listener: (transition: EventTransition) => void): () => void {
    this.#transitionListeners.add(listener);
    return () => this.#transitionListeners.delete(listener);
  }

  /** Event Grid webhook subscriptions, oldest first (copies). */
  webhookSubscriptions(): WebhookSubscription[] {
    return [...this.#core.subscriptions.values()].map((s) => ({ ...s }));
  }

  // ---- mutations -----------------------------------------------------------

  /** Keeps a subscription (saved with the state); reset() keeps it too. */
  saveWebhookSubscription(subscription: WebhookSubscription): void {
    this.#core.subscriptions.set(subscription.id, { ...subscription });
    this.#mutated = true;
    this.#commit();
  }

  /** False if there was none of that id. */
  removeWebhookSubscription(id: string): boolean {
    const had = this.#core.subscriptions.delete(id);
    if (had) {
      this.#mutated = true;
      this.#commit();
    }
    return had;
  }

  /**
   * A Scheduled Events request from a VM. With the realistic activation profile the first
   * request of a disabled VM enables it after a delay; the answer says how long the caller
   * should hold that request (simulated ms).
   */
  recordRequest(name: string): { delayMs: number } {
    const { activation } = this.#core;
    if (activation.mode === 'off') return { delayMs: 0 };
    this.tick();
    this.fleet.get(name);
    const now = this.now();
    if (activation.request(name, now)) {
      this.#mutated = true;
      this.#commit();
      // A zero delay enables at once.
      this.tick();
    }
    return { delayMs: activation.delayMs(name, now) };
  }

  addVm(spec: VmSpec): Vm {
    this.tick();
    const vm = this.#core.vms.add(spec);
    this.#commit();
    return { ...vm };
  }

  removeVm(name: string): Vm {
    this.tick();
    const vm = this.#core.vms.remove(name);
    this.#commit();
    return vm;
  }

  /** [seed] Starts a VM a Spot eviction deallocated: it runs, and sees its tenant's events, again. */
  startVm(name: string): Vm {
    this.tick();
    const vm = this.#core.vms.start(name);
    this.#commit();
    return { ...vm };
  }

  createOperation(request: OperationRequest): Operation {
    this.tick();
    const operation = this.#core.operations.create(request, this.now());
    this.#commit();
    return structuredClone(operation);
  }

  /**
   * An approval POSTed by `vmName`. All ids are checked before any takes effect.
   * [choice] An id the VM sees, or saw before it ended, is accepted and changes nothing
   * more if already Started or ended; an id never issued, or of an event the VM cannot
   * see, is rejected. `through: 'arm'` is ARM's acknowledge on the VM's behalf (see Lifecycle.approve).
   */
  approve(vmName: string, ids: readonly string[], through: ApprovalChannel = 'imds'): void {
    this.tick();
    this.#core.lifecycle.approve(this.fleet.get(vmName), ids, this.now(), through);
    this.#commit();
  }

  /** What is known of an event now: live (a copy), ended (how, and which VMs it named), or nothing. */
  lookup(id: string): EventLookup | undefined {
    this.tick();
    const live = this.#core.live.get(id.toUpperCase());
    if (live) return { live: cloneEvent(live) };
    const ended = this.#core.history.ended.get(id.toUpperCase());
    return ended ? { ended: { resources: [...ended.resources], cancelled: ended.cancelled } } : undefined;
  }

  cancel(id: string): EngineEvent {
    this.tick();
    const event = this.#core.lifecycle.cancel(id, this.now());
    this.#commit();
    return cloneEvent(event);
  }

  complete(id: string): EngineEvent {
    this.tick();
    const event = this.#core.lifecycle.complete(id, this.now());
    this.#commit();
    return cloneEvent(event);
  }

  /** Applies every transition due by now, each at its own time, in order. */
  tick(): void {
    // A listener that reads state mid-tick must see each transition in turn, not trigger the next.
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      const { schedule } = this.#core;
      const now = this.clock.now();
      // Listeners run in #commit() and may change the schedule, so look again after each commit.
      for (let next = schedule.peek(); next && next.at <= now; next = schedule.peek()) {
        const at = next.at;
        while (schedule.peek()?.at === at) this.#apply(schedule.pop()!);
        this.#commit();
      }
    } finally {
      this.#ticking = false;
    }
  }

  /**
   * Back to the start state: the initial fleet, or `fleet` instead, and no events. A new
   * fleet becomes the start fleet unless `keepStartFleet` (a scenario borrows the emulator).
   * [choice] Incarnations carry on upwards, so a consumer polling across a reset still sees a change.
   */
  reset(fleet?: readonly VmSpec[], options: { keepStartFleet?: boolean } = {}): void {
    const { vms, documents } = this.#core;
    // A new fleet is checked whole before anything is cleared.
    let install: VmSpec[] | null = null;
    if (fleet) {
      const check = new Fleet(this.#core.newId);
      for (const spec of fleet) check.add(spec);
      install = [...check.vms.values()].map((vm) => vmToSpec(vm, check.tenantOf(vm)));
    }
    // The start fleet as specs, read before the fleet it may be made of is cleared; not needed
    // when a new fleet becomes the start.
    const keptStart = install !== null && options.keepStartFleet === true;
    const start = install === null || keptStart ? vms.startFleet.specs() : null;
    install ??= start!;
    const before = new Map([...this.fleet.vms.keys()].map((name) => [name, documents.signature(name)]));
    this.#clearState();
    for (const spec of install) {
      vms.place(spec);
      if (!documents.incarnations.has(spec.name)) documents.incarnations.set(spec.name, FIRST_INCARNATION);
    }
    for (const [name, signature] of before) {
      if (!this.fleet.vms.has(name) || documents.signature(name) !== signature) documents.touchName(name);
    }
    // A VM that comes back keeps rising from the incarnation it had.
    for (const name of this.fleet.vms.keys()) if (!before.has(name)) documents.touchName(name);
    if (keptStart) vms.startFleet.are(start!);
    else vms.startFleet.isNow();
    this.#mutated = true;
    this.#commit();
  }

  snapshot(): EngineSnapshot {
    return snapshotOf(this.#core);
  }

  /**
   * What changed since the previous take, for a state file that appends changes rather than
   * rewriting everything; 'everything' on the first take and after a reset or restore, when
   * the caller saves a whole snapshot instead. Values are copies.
   */
  takeDelta(): EngineDelta | 'everything' {
    return deltaOf(this.#core);
  }

  /** Replaces all state with a snapshot, then applies whatever fell due while it was saved. */
  restore(snapshot: EngineSnapshot): void {
    const before = [...this.fleet.vms.keys()];
    this.#clearState();
    this.#core.documents.clearIncarnations();
    restoreInto(this.#core, snapshot);
    this.#mutated = true;
    this.#commit();
    // No incarnation moved, but any VM's document may differ from what a listener holds: report all.
    const reported = [...new Set([...before, ...this.fleet.vms.keys()])];
    if (reported.length > 0) for (const listener of this.#listeners) listener(reported);
    this.tick();
  }

  // ---- internals -------------------------------------------------------------

  /** Forgets the fleet, events, operations and activation; incarnations and listeners stay. */
  #clearState(): void {
    const core = this.#core;
    core.vms.clear();
    core.live.clear();
    core.operations.clear();
    core.activation.clear();
    core.schedule.clear();
    core.history.clear();
  }

  #apply(due: Due): void {
    this.#ownerOf(due).apply(due);
  }

  /** Whether #apply would act on this entry. */
  #stillDue(due: Due): boolean {
    return this.#ownerOf(due).stillDue(due);
  }

  /** The owner of an entry's kind: it applies the entry, and says whether it still would. */
  #ownerOf(due: Due): DueOwner {
    switch (due.kind) {
      case 'start':
      case 'impact':
      case 'end':
        return this.#core.lifecycle;
      case 'step':
        return this.#core.operations;
      case 'enable':
      case 'idle':
        return this.#core.activation;
    }
  }

  /**
   * Drops schedule entries that #apply would ignore, once they outnumber the live work that can
   * be due (an event's start or impact and end, a running operation's step, two activation checks
   * a VM): amortized O(1) a change.
   */
  #compactSchedule(): void {
    const { schedule, live, operations, activation } = this.#core;
    const work = 2 * live.size + operations.running + activation.pending;
    if (schedule.size <= Math.max(SCHEDULE_COMPACT_MIN, 2 * work)) return;
    schedule.compact((due) => this.#stillDue(due));
  }

  /** History past its limit is forgotten; every VM whose visible events changed gets exactly one new incarnation. */
  #commit(): void {
    const { history, operations, documents } = this.#core;
    history.prune(operations.byId);
    this.#compactSchedule();
    const changed = documents.commit();
    if (changed.length > 0) {
      this.#mutated = true;
      for (const listener of this.#listeners) listener(changed);
    }
    if (this.#mutated) {
      this.#mutated = false;
      for (const listener of this.#mutationListeners) listener();
    }
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** What owns a kind of schedule entry; each owner takes only its own kinds, which #ownerOf sees to. */
interface DueOwner {
  apply(due: Due): void;
  stillDue(due: Due): boolean;
}
