// The emulator's kernel: fleet, events, lifecycle and incarnations, driven by an injected clock.
// Each operation kind's rules (notice, impact, what happens to the VM) live in its policy under
// `policies/`; the kernel runs them all alike and keeps every index incrementally, so an operation,
// a tick or a release costs in proportion to what it touches, never to the fleet's size.
import { randomUUID } from 'node:crypto';
import type { EventView } from '../../protocol/types.js';
import { ActivationTracker, type ActivationOptions, type ActivationState, type ActivationStatus } from './activation.js';
import type { Clock } from '../../shared/clock.js';
import { ChangeLog, TrackedMap, takeTable } from './changes.js';
import { conflict, invalid, notFound } from './errors.js';
import { Fleet, vmToSpec, type Vm, type VmSpec } from './fleet.js';
import { History } from './history.js';
import { noticeUntil, resolveTarget, targetField } from './targets.js';
import { LiveEvents } from './live-events.js';
import { MaintenanceHolds } from './maintenance.js';
import {
  OPERATION_STATUSES,
  SNAPSHOT_VERSION,
  type DocumentState,
  type EndedEvent,
  type EngineDelta,
  type EngineEvent,
  type EngineSnapshot,
  type JobMember,
  type Operation,
  type OperationRequest,
  type OperationStatus,
  type StartCause,
} from './model.js';
import { OPERATION_TYPES, isOperationType } from './operations.js';
import { pageNewestFirst, type Page, type PageRequest } from './paging.js';
import { POLICIES, type OperationPolicy, type VmActions } from './policies/index.js';
import { planSteps, type RollingStep } from './rolling.js';
import { Schedule, type Due } from './schedule.js';
import { ROLLING_STEP_GAP_SECONDS, Timing } from './timing.js';
import { STATE_WHILE_STARTED, type DeletedVm, type VmState } from './vm-state.js';

export * from './model.js';

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

/** [choice] A VM's first document has incarnation 1, as in the seed's example sequence. */
export const FIRST_INCARNATION = 1;

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
  readonly #newId: () => string;
  #initialFleet: VmSpec[] = [];
  /** Which entities changed since the state file last took them; declared before the maps it tracks. */
  readonly #changes = new ChangeLog();
  readonly #vmChanges = this.#changes.table<string>();
  readonly #live = new LiveEvents(this.#changes);
  readonly #operations = new TrackedMap<string, Operation>(this.#changes);
  readonly #maintenance = new MaintenanceHolds();
  /** How many events of each running operation are live. */
  readonly #liveByOperation = new Map<string, number>();
  /** How many events of each running operation ended cancelled: its outcome, without reading its events. */
  readonly #cancelledByOperation = new Map<string, number>();
  /** The rolling step each live or ended event of a running rollout belongs to. */
  readonly #stepOf = new Map<string, RollingStep>();
  /** VMs a Spot eviction deallocated. */
  readonly #deallocated = new Set<string>();
  readonly #activation: ActivationTracker;
  readonly #incarnations = new TrackedMap<string, number>(this.#changes);
  readonly #history: History;
  /** Events created since the engine started: a figure for benchmarks and metrics. */
  #eventsCreated = 0;
  readonly #schedule = new Schedule();
  readonly #touched = new Set<string>();
  readonly #listeners = new Set<ChangeListener>();
  readonly #mutationListeners = new Set<() => void>();
  #mutated = false;
  #ticking = false;

  constructor(options: EngineOptions) {
    this.clock = options.clock;
    this.timing = options.timing ?? new Timing(1);
    this.#newId = options.newId ?? (() => randomUUID().toUpperCase());
    this.#activation = new ActivationTracker(options.activation ?? { mode: 'off' }, this.#changes, {
      timing: this.timing,
      schedule: this.#schedule,
      hasVm: (name) => this.fleet.vms.has(name),
      touchVm: (name) => this.#touchVm(name),
      markMutated: () => (this.#mutated = true),
    });
    const historyLimit = options.historyLimit ?? DEFAULT_HISTORY_LIMIT;
    if (!Number.isInteger(historyLimit) || historyLimit < 0) {
      throw invalid(`historyLimit must be an integer of 0 or more, got ${String(options.historyLimit)}`);
    }
    this.#history = new History(historyLimit, this.#changes);
    this.fleet = new Fleet(this.#newId);
    for (const spec of options.fleet ?? []) this.#addVm(spec);
    this.#initialFleet = this.#fleetSpecs();
  }

  // ---- queries -------------------------------------------------------------

  now(): number {
    return this.clock.now();
  }

  /** The document a VM sees now, independent of api-version. */
  documentFor(name: string): DocumentState {
    this.tick();
    const vm = this.fleet.get(name);
    const events: EventView[] = [];
    for (const e of this.#live.ofTenant(vm.tenant)) {
      if (this.#visible(vm, e)) events.push(toView(e));
    }
    return { vm: name, incarnation: this.#incarnation(name), events };
  }

  /** Cheap check for renderers that cache by incarnation. */
  incarnationOf(name: string): number {
    this.tick();
    this.fleet.get(name);
    return this.#incarnation(name);
  }

  events(): EngineEvent[] {
    this.tick();
    return [...this.#live.values()].map(cloneEvent);
  }

  event(id: string): EngineEvent {
    this.tick();
    const e = this.#live.get(id.toUpperCase());
    if (!e) throw notFound(this.#history.has(id.toUpperCase()) ? `event ${id} has already ended` : `no event with id ${id}`);
    return cloneEvent(e);
  }

  hasEnded(id: string): boolean {
    return this.#history.has(id.toUpperCase());
  }

  /** Ended events whose history is known, newest first, a page at a time. */
  history(request: PageRequest = {}): Page<EndedEvent & { event: EngineEvent }> {
    this.tick();
    const page = this.#history.page(request);
    return { items: page.items.map((e) => ({ ...e, resources: [...e.resources], event: cloneEvent(e.event) })), next: page.next };
  }

  /**
   * What each VM is going through now; a VM missing from the map is running. A Started event
   * marks its VMs only during its impact: after that they run again while it stays in the document.
   */
  vmStates(): Map<string, VmState> {
    this.tick();
    const now = this.now();
    const states = new Map<string, VmState>();
    for (const e of this.#live.values()) {
      if (e.status !== 'Started' || this.#impactEndsAt(e) <= now) continue;
      for (const name of e.resources) if (this.fleet.vms.has(name)) states.set(name, STATE_WHILE_STARTED[e.type]);
    }
    for (const name of this.#deallocated) states.set(name, 'deallocated');
    return states;
  }

  /** VMs that a delete removed, until a VM of the same name is added again. */
  deletedVms(): DeletedVm[] {
    // Like the other queries: a Terminate that has run its course by now has deleted its VMs.
    this.tick();
    return [...this.#history.deleted.values()].map((d) => ({ ...d }));
  }

  /** Operations newest first, a page at a time; `status` keeps only those in that state. */
  operations(request: PageRequest & { status?: OperationStatus | undefined } = {}): Page<Operation> {
    this.tick();
    const { status } = request;
    if (status !== undefined && !OPERATION_STATUSES.includes(status)) {
      throw invalid(`status: must be one of ${OPERATION_STATUSES.join(', ')}, got ${JSON.stringify(status)}`, 'status');
    }
    const page = pageNewestFirst(
      [...this.#operations.values()],
      request,
      (o): o is Operation => status === undefined || o.status === status,
    );
    return { items: page.items.map((o) => structuredClone(o)), next: page.next };
  }

  operation(id: string): Operation {
    this.tick();
    const op = this.#operations.get(id.toLowerCase());
    if (!op) throw notFound(`no operation with id ${id}`);
    return structuredClone(op);
  }

  /** The tenants of an event's job and whether each has approved. */
  jobMembers(eventId: string): JobMember[] {
    const event = this.#live.get(eventId.toUpperCase());
    if (!event) return [];
    return this.#live.ofJob(event.jobId).map((e) => ({ tenant: e.tenant, event: e.id, approved: e.approvals.length > 0 }));
  }

  get activationMode(): ActivationOptions['mode'] {
    return this.#activation.mode;
  }

  activationOf(name: string): { status: ActivationStatus } & ActivationState {
    this.fleet.get(name);
    return this.#activation.of(name);
  }

  /** Entries waiting in the schedule, stale ones included: for tests and benchmarks. */
  get pendingTransitions(): number {
    return this.#schedule.size;
  }

  /** How many events this engine has created, ended ones included. */
  get eventsCreated(): number {
    return this.#eventsCreated;
  }

  /** When the next lifecycle transition is due, for runtimes that sleep until then. */
  nextDue(): number | undefined {
    return this.#schedule.peek()?.at;
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

  // ---- mutations -----------------------------------------------------------

  /**
   * A Scheduled Events request from a VM. With the realistic activation profile the first
   * request of a disabled VM enables it after a delay; the answer says how long the caller
   * should hold that request (simulated ms).
   */
  recordRequest(name: string): { delayMs: number } {
    if (this.#activation.mode === 'off') return { delayMs: 0 };
    this.tick();
    this.fleet.get(name);
    const now = this.now();
    if (this.#activation.request(name, now)) {
      this.#mutated = true;
      this.#commit();
      // A zero delay enables at once.
      this.tick();
    }
    return { delayMs: this.#activation.delayMs(name, now) };
  }

  addVm(spec: VmSpec): Vm {
    this.tick();
    const vm = this.#addVm(spec);
    this.#commit();
    return { ...vm };
  }

  removeVm(name: string): Vm {
    this.tick();
    const vm = this.#removeVm(name);
    this.#commit();
    return vm;
  }

  /** [seed] Starts a VM a Spot eviction deallocated: it runs, and sees its tenant's events, again. */
  startVm(name: string): Vm {
    this.tick();
    const vm = this.fleet.get(name);
    if (vm.powerState !== 'deallocated')
      throw conflict(`VM '${name}' is ${vm.powerState}, not deallocated; only a deallocated VM can be started`);
    vm.powerState = 'running';
    this.#deallocated.delete(name);
    this.#vmChanges.updated(name);
    this.#touchVm(name);
    this.#mutated = true;
    this.#commit();
    return { ...vm };
  }

  createOperation(request: OperationRequest): Operation {
    this.tick();
    const now = this.now();
    const type = request.type;
    if (!isOperationType(type)) {
      throw invalid(`unknown operation type ${JSON.stringify(type)}; expected one of ${OPERATION_TYPES.join(', ')}`, 'type');
    }
    const policy = POLICIES[type];
    const target = resolveTarget(this.fleet, type, request);
    const vms = target.vms;

    const duration = request.durationInSeconds ?? policy.durationInSeconds;
    if (!Number.isInteger(duration) || duration < -1) {
      throw invalid(`durationInSeconds must be an integer of -1 or more, got ${duration}`, 'durationInSeconds');
    }
    if (request.notBefore !== undefined && !Number.isFinite(request.notBefore)) throw invalid('notBefore is not a valid time', 'notBefore');
    if (policy.startsAtOnce && request.notBefore !== undefined) {
      throw invalid(`'${type}' starts at once and takes no notBefore`, 'notBefore');
    }
    for (const [i, vm] of vms.entries()) {
      const problem = policy.check?.(vm, this.fleet.tenantOf(vm).kind);
      if (problem) throw invalid(problem, targetField(request, i));
    }
    this.#checkOverlap(policy, vms, request);
    const domains = faultDomainsByTenant(vms);
    if (policy.routine) this.#maintenance.check(domains, (id) => this.#operations.get(id)?.type);

    // Which VMs get notice; the rest are acted on at once with no event.
    const atOnce = new Map<Vm, 'remove' | 'reimage'>();
    for (const vm of vms) {
      const action = policy.withoutNotice?.(vm) ?? null;
      if (action) atOnce.set(vm, action);
    }
    const noticed = vms.filter((vm) => !atOnce.has(vm));
    // [seed] Routine maintenance over a tenant rolls, one fault domain at a time. [choice] VMs named
    // one by one are what a tester asked for, all at once: only a tenant target rolls.
    const rolling = policy.routine && target.tenant !== null;
    const steps = rolling ? planSteps(noticed) : null;
    // Each group is one event (one per tenant); a rollout plans only its first fault domain now.
    const first = steps ? noticed.filter((vm) => vm.faultDomain === steps[0]!.faultDomain) : noticed;
    const plans = [...groupBy(first, (vm) => vm.tenant).values()].map((group) => ({
      tenant: group[0]!.tenant,
      members: group,
      notBefore: noticeUntil(policy, group, now, request, this.timing),
    }));

    const operation: Operation = {
      id: this.#newId().toLowerCase(),
      seq: this.#history.nextSeq(),
      type,
      createdAt: now,
      vms: vms.map((vm) => vm.name),
      host: target.host,
      tenant: target.tenant,
      status: 'running',
      events: [],
      removedVms: [],
      reimagedVms: [],
      steps,
      durationInSeconds: duration,
      description: request.description ?? null,
    };
    this.#operations.set(operation.id, operation);
    // [seed] A job on a host waits for every tenant on it; other operations give each tenant its own job.
    const sharedJob = target.host !== null ? this.#newId().toUpperCase() : null;
    if (steps && plans.length > 0) {
      steps[0]!.status = 'scheduled';
      steps[0]!.at = now;
    }
    for (const plan of plans) {
      this.#createEvent(operation, plan.tenant, plan.members, plan.notBefore, now, sharedJob, steps?.[0] ?? null);
    }
    for (const [vm, action] of atOnce) {
      if (action === 'remove') {
        this.#removeVm(vm.name, { operation: operation.id, at: now });
        operation.removedVms.push(vm.name);
      } else operation.reimagedVms.push(vm.name);
    }
    // [choice] A rollout holds its tenant, and so does a host update anywhere (one at a time, as before rollouts
    // of other kinds existed); a routine job on named VMs or a host is checked against holds but takes none.
    if (holdsTenant(policy, target) && plans.length > 0) this.#maintenance.hold(operation.id, domains);
    this.#settle(operation);
    this.#operations.changes.updated(operation.id);
    this.#mutated = true;
    this.#commit();
    return structuredClone(operation);
  }

  /** [seed] A deallocated VM gets no further events; a policy may refuse a VM already going through one of its kind. */
  #checkOverlap(policy: OperationPolicy, vms: readonly Vm[], request: OperationRequest): void {
    for (const [i, vm] of vms.entries()) {
      if (vm.powerState === 'deallocated') {
        throw conflict(
          `VM '${vm.name}' is deallocated (evicted) and gets no further events until it is started again`,
          targetField(request, i),
        );
      }
      if (policy.exclusiveWith.length === 0) continue;
      for (const e of this.#live.naming(vm.name)) {
        if (policy.exclusiveWith.includes(e.type)) {
          throw conflict(
            `VM '${vm.name}' already has a ${e.type} event under way (${e.id}); a second ${policy.type} is refused`,
            targetField(request, i),
          );
        }
      }
    }
  }

  /**
   * An approval POSTed by `vmName`. All ids are checked before any takes effect.
   * [choice] An id the VM sees, or saw before it ended, is accepted and changes nothing
   * more if already Started or ended; an id never issued, or of an event the VM cannot
   * see, is rejected.
   */
  approve(vmName: string, ids: readonly string[]): void {
    this.tick();
    const vm = this.fleet.get(vmName);
    const toApprove: EngineEvent[] = [];
    for (const raw of ids) {
      const id = raw.toUpperCase();
      const known = this.#live.get(id) ?? this.#history.ended.get(id);
      if (!known) throw invalid(`unknown EventId (never issued, or ended longer ago than the emulator keeps: --history-limit): ${raw}`);
      if (!this.#visible(vm, known)) throw invalid(`EventId ${raw} is not an event that VM '${vm.name}' can see`);
      const live = this.#live.get(id);
      if (live) toApprove.push(live);
    }
    const now = this.now();
    for (const event of toApprove) {
      if (event.status !== 'Scheduled' || event.approvals.some((a) => a.vm === vm.name)) continue;
      event.approvals.push({ vm: vm.name, at: now });
      this.#live.updated(event);
      this.#mutated = true;
      this.#startJobIfApproved(event.jobId, now);
    }
    this.#commit();
  }

  cancel(id: string): EngineEvent {
    this.tick();
    const event = this.#liveOrThrow(id);
    if (event.status !== 'Scheduled') {
      throw conflict(`event ${event.id} has already Started and can no longer be cancelled`);
    }
    // [choice] Azure cancels a job, not a tenant's share of it: every event of the job goes.
    for (const e of [...this.#live.ofJob(event.jobId)]) this.#end(e, this.now(), true);
    this.#commit();
    return cloneEvent(event);
  }

  complete(id: string): EngineEvent {
    this.tick();
    const event = this.#liveOrThrow(id);
    if (event.status !== 'Started') {
      throw conflict(`event ${event.id} is still Scheduled; approve it or let NotBefore pass before completing it`);
    }
    this.#end(event, this.now(), false);
    this.#commit();
    return cloneEvent(event);
  }

  /** Applies every transition due by now, each at its own time, in order. */
  tick(): void {
    // A listener that reads state mid-tick must see each transition in turn, not trigger the next.
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      const now = this.clock.now();
      // Listeners run in #commit() and may change the schedule, so look again after each commit.
      for (let next = this.#schedule.peek(); next && next.at <= now; next = this.#schedule.peek()) {
        const at = next.at;
        while (this.#schedule.peek()?.at === at) this.#apply(this.#schedule.pop()!);
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
    // A new fleet is checked whole before anything is cleared.
    let install = this.#initialFleet;
    if (fleet) {
      const check = new Fleet(this.#newId);
      for (const spec of fleet) check.add(spec);
      install = [...check.vms.values()].map((vm) => vmToSpec(vm, check.tenantOf(vm)));
      if (!options.keepStartFleet) this.#initialFleet = install;
    }
    const before = new Map([...this.fleet.vms.keys()].map((name) => [name, this.#signature(name)]));
    this.#clearState();
    for (const spec of install) {
      this.#placeVm(spec);
      if (!this.#incarnations.has(spec.name)) this.#incarnations.set(spec.name, FIRST_INCARNATION);
    }
    for (const [name, signature] of before) {
      if (!this.fleet.vms.has(name) || this.#signature(name) !== signature) this.#touched.add(name);
    }
    // A VM that comes back keeps rising from the incarnation it had.
    for (const name of this.fleet.vms.keys()) if (!before.has(name)) this.#touched.add(name);
    this.#mutated = true;
    this.#commit();
  }

  /** Forgets the fleet, events, operations and activation; incarnations and listeners stay. */
  #clearState(): void {
    this.fleet.clear();
    this.#live.clear();
    this.#operations.clear();
    this.#maintenance.clear();
    this.#liveByOperation.clear();
    this.#cancelledByOperation.clear();
    this.#stepOf.clear();
    this.#deallocated.clear();
    this.#activation.clear();
    this.#schedule.clear();
    this.#history.clear();
  }

  /** Identifies a VM's visible events and their states, to tell whether its document changed. */
  #signature(name: string): string {
    const vm = this.fleet.vms.get(name);
    if (!vm) return '';
    return this.#live
      .ofTenant(vm.tenant)
      .filter((e) => this.#visible(vm, e))
      .map((e) => `${e.id}:${e.status}`)
      .join(',');
  }

  snapshot(): EngineSnapshot {
    return {
      format: 'forewarn-state',
      version: SNAPSHOT_VERSION,
      savedAt: this.now(),
      initialFleet: structuredClone(this.#initialFleet),
      vms: this.#fleetSpecs(),
      events: [...this.#live.values()].map(cloneEvent),
      ended: this.#history.snapshot().ended,
      operations: [...this.#operations.values()].map((o) => structuredClone(o)),
      incarnations: Object.fromEntries(this.#incarnations),
      activation: this.#activation.snapshot(),
      // Not deletedVms(): its tick would change the state halfway through the snapshot.
      deleted: this.#history.snapshot().deleted,
    };
  }

  /**
   * What changed since the previous take, for a state file that appends changes rather than
   * rewriting everything; 'everything' on the first take and after a reset or restore, when
   * the caller saves a whole snapshot instead. Values are copies.
   */
  takeDelta(): EngineDelta | 'everything' {
    // restart clears every table of the log, #vmChanges included.
    if (this.#changes.restart()) return 'everything';
    const delta: EngineDelta = { savedAt: this.now() };
    const vms = takeTable(
      this.#vmChanges,
      (name) => this.fleet.vms.get(name),
      (vm) => vmToSpec(vm, this.fleet.tenantOf(vm)),
    );
    const events = takeTable(this.#live.byId.changes, (id) => this.#live.get(id), cloneEvent);
    const ended = takeTable(
      this.#history.ended.changes,
      (id) => this.#history.ended.get(id),
      (e) => structuredClone(e),
    );
    const operations = takeTable(
      this.#operations.changes,
      (id) => this.#operations.get(id),
      (o) => structuredClone(o),
    );
    const incarnations = takeTable(
      this.#incarnations.changes,
      (name) => this.#incarnations.get(name),
      (n, name): [string, number] => [name, n],
    );
    const activation = takeTable(
      this.#activation.states.changes,
      (name) => this.#activation.states.get(name),
      (a, name): [string, ActivationState] => [name, { ...a }],
    );
    const deleted = takeTable(
      this.#history.deleted.changes,
      (name) => this.#history.deleted.get(name),
      (d) => ({ ...d }),
    );
    if (vms) delta.vms = vms;
    if (events) delta.events = events;
    if (ended) delta.ended = ended;
    if (operations) delta.operations = operations;
    if (incarnations) delta.incarnations = incarnations;
    if (activation) delta.activation = activation;
    if (deleted) delta.deleted = deleted;
    return delta;
  }

  /** Replaces all state with a snapshot, then applies whatever fell due while it was saved. */
  restore(snapshot: EngineSnapshot): void {
    const before = [...this.fleet.vms.keys()];
    this.#clearState();
    this.#incarnations.clear();
    this.#initialFleet = structuredClone(snapshot.initialFleet);
    for (const spec of snapshot.vms) this.#placeVm(spec);
    for (const [name, n] of Object.entries(snapshot.incarnations)) this.#incarnations.set(name, n);
    const operations = this.#history.restore(snapshot, (name) => this.fleet.vms.has(name));
    for (const op of operations) {
      this.#operations.set(op.id, op);
      if (op.status !== 'running') continue;
      this.#liveByOperation.set(op.id, 0);
      for (const step of op.steps ?? []) for (const id of step.events) this.#stepOf.set(id, step);
      if (holdsTenant(POLICIES[op.type], op))
        this.#maintenance.hold(op.id, faultDomainsByTenant(op.vms.flatMap((n) => this.fleet.vms.get(n) ?? [])));
      const pending = op.steps?.find((step) => step.status === 'pending' && step.at !== null);
      if (pending) this.#schedule.push(pending.at!, op.id, 'step');
    }
    for (const e of snapshot.events) {
      const event = cloneEvent(e);
      this.#insert(event);
      if (event.status === 'Scheduled') this.#schedule.push(event.notBefore, event.id, 'start');
      else if (event.endsAt !== null) {
        // An impact that was over when the file was saved has had its effect already.
        const impactEnd = this.#impactEndsAt(event);
        if (impactEnd > snapshot.savedAt) this.#schedule.push(impactEnd, event.id, 'impact');
        this.#schedule.push(event.endsAt, event.id, 'end');
      }
    }
    // A running operation's outcome counts the cancelled events it holds in history.
    for (const e of this.#history.ended.values()) {
      const op = e.event?.operationId;
      if (e.cancelled && op !== undefined && this.#liveByOperation.has(op)) {
        this.#cancelledByOperation.set(op, (this.#cancelledByOperation.get(op) ?? 0) + 1);
      }
    }
    this.#activation.restore(snapshot.activation ?? {});
    // Restored documents are the saved ones, under their saved incarnations.
    this.#touched.clear();
    this.#mutated = true;
    this.#commit();
    // No incarnation moved, but any VM's document may differ from what a listener holds: report all.
    const reported = [...new Set([...before, ...this.fleet.vms.keys()])];
    if (reported.length > 0) for (const listener of this.#listeners) listener(reported);
    this.tick();
  }

  // ---- internals -------------------------------------------------------------

  /** Adds a VM to the fleet and to the kernel's own index of deallocated VMs. */
  #placeVm(spec: VmSpec): Vm {
    const vm = this.fleet.add(spec);
    if (vm.powerState === 'deallocated') this.#deallocated.add(vm.name);
    return vm;
  }

  #addVm(spec: VmSpec): Vm {
    const vm = this.#placeVm(spec);
    this.#vmChanges.inserted(vm.name);
    this.#history.forgetDeleted(vm.name);
    this.#mutated = true;
    // A returning name must not show an old incarnation with new events.
    if (this.#incarnations.has(vm.name)) this.#touched.add(vm.name);
    else this.#incarnations.set(vm.name, FIRST_INCARNATION);
    return vm;
  }

  /**
   * `deletedBy` marks a VM a delete operation removed, as opposed to one taken out through the
   * control API; `cause` is the event whose impact removed it, which ends completed, not cancelled.
   */
  #removeVm(name: string, deletedBy?: { operation: string; at: number }, cause?: EngineEvent): Vm {
    const vm = this.fleet.get(name);
    this.#touched.add(name);
    this.fleet.remove(name);
    this.#deallocated.delete(name);
    this.#live.forgetVm(name);
    this.#vmChanges.deleted(name);
    if (deletedBy) {
      const { tenant, host, faultDomain, updateDomain } = vm;
      this.#history.recordDeleted({
        name,
        tenant,
        host,
        faultDomain,
        updateDomain,
        deletedAt: deletedBy.at,
        operation: deletedBy.operation,
      });
    }
    this.#mutated = true;
    // Events of a tenant with no VMs left have nobody to tell; they end silently. One that has
    // Started has had its impact, so it ends completed; only a Scheduled one is called off.
    if (!this.fleet.tenants.has(vm.tenant)) {
      for (const e of [...this.#live.ofTenant(vm.tenant)]) this.#end(e, this.now(), e !== cause && e.status === 'Scheduled');
    }
    return { ...vm };
  }

  /** What a policy may do to a VM, carried out with the kernel's indexes and history kept right. */
  #actions(event: EngineEvent, at: number): VmActions {
    return {
      moveToNewHost: (vm) => {
        // [choice] A new host, named after a fresh id; never one the fleet already has.
        const base = `host-${this.#newId().slice(-12).toLowerCase()}`;
        let host = base;
        for (let n = 2; this.fleet.hosts.has(host); n++) host = `${base}-${n}`;
        this.fleet.moveToHost(vm.name, host);
        this.#vmChanges.updated(vm.name);
        this.#mutated = true;
      },
      remove: (vm) => {
        if (this.fleet.vms.has(vm.name)) this.#removeVm(vm.name, { operation: event.operationId, at }, event);
      },
      deallocate: (vm) => {
        if (!this.fleet.vms.has(vm.name) || vm.powerState === 'deallocated') return;
        // Its document empties: a stopped VM sees no events.
        this.#touchVm(vm.name);
        vm.powerState = 'deallocated';
        this.#deallocated.add(vm.name);
        this.#vmChanges.updated(vm.name);
        this.#mutated = true;
      },
    };
  }

  /** Runs a policy's effect on each VM of the event that is still in the fleet. */
  #affect(event: EngineEvent, at: number, effect: OperationPolicy['onImpactStart']): void {
    if (!effect) return;
    const act = this.#actions(event, at);
    for (const name of event.resources) {
      const vm = this.fleet.vms.get(name);
      if (vm) effect(vm, act);
    }
  }

  #policyOf(event: EngineEvent): OperationPolicy | undefined {
    const type = this.#operations.get(event.operationId)?.type;
    return type === undefined ? undefined : POLICIES[type];
  }

  #impactEndsAt(event: EngineEvent): number {
    return (event.startedAt ?? event.notBefore) + this.timing.impactMs(event.type, event.durationInSeconds);
  }

  #fleetSpecs(): VmSpec[] {
    return [...this.fleet.vms.values()].map((vm) => vmToSpec(vm, this.fleet.tenantOf(vm)));
  }

  #incarnation(name: string): number {
    return this.#incarnations.get(name) ?? FIRST_INCARNATION;
  }

  #createEvent(
    operation: Operation,
    tenant: string,
    members: readonly Vm[],
    notBefore: number,
    at: number,
    jobId: string | null,
    step: RollingStep | null,
  ): EngineEvent {
    const policy = POLICIES[operation.type];
    const id = this.#newId().toUpperCase();
    this.#eventsCreated++;
    const event: EngineEvent = {
      id,
      operationId: operation.id,
      jobId: jobId ?? id,
      tenant,
      type: policy.eventType,
      source: policy.source,
      description: operation.description ?? policy.description,
      durationInSeconds: operation.durationInSeconds,
      resources: members.map((vm) => vm.name),
      status: 'Scheduled',
      createdAt: at,
      notBefore: policy.startsAtOnce ? at : notBefore,
      startedAt: null,
      endsAt: null,
      startedBy: null,
      approvals: [],
    };
    if (step) {
      step.events.push(id);
      this.#stepOf.set(id, step);
    }
    this.#insert(event);
    operation.events.push(event.id);
    this.#operations.changes.updated(operation.id);
    if (policy.startsAtOnce) this.#start(event, at, 'failure');
    else this.#schedule.push(event.notBefore, event.id, 'start');
    return event;
  }

  /** Marks an operation finished once nothing of it is live or still to come. */
  #settle(operation: Operation): void {
    if (operation.status !== 'running') return;
    if ((this.#liveByOperation.get(operation.id) ?? 0) > 0) return;
    if (operation.steps?.some((step) => step.status === 'pending' || step.status === 'scheduled' || step.status === 'started')) return;
    const cancelled = this.#cancelledByOperation.get(operation.id) ?? 0;
    this.#finish(operation, operation.events.length > 0 && cancelled === operation.events.length ? 'cancelled' : 'completed');
  }

  /** The one way an operation finishes: its tenants are released and its history may be forgotten. */
  #finish(operation: Operation, status: Exclude<OperationStatus, 'running'>): void {
    operation.status = status;
    this.#operations.changes.updated(operation.id);
    this.#maintenance.release(operation.id);
    this.#liveByOperation.delete(operation.id);
    this.#cancelledByOperation.delete(operation.id);
    for (const step of operation.steps ?? []) for (const id of step.events) this.#stepOf.delete(id);
    this.#history.operationFinished(operation);
  }

  /** A rolling update's step event has ended: plan the next fault domain shortly after, or finish. */
  #advanceRolling(operation: Operation, step: RollingStep, at: number, cancelled: boolean): void {
    if (step.events.some((id) => this.#live.has(id))) return;
    const steps = operation.steps!;
    if (cancelled) {
      // [choice] A cancelled step means Azure judged the rollout too risky: the rest is called off.
      step.status = 'cancelled';
      for (const s of steps) if (s.status === 'pending') s.status = 'cancelled';
      this.#finish(operation, 'cancelled');
      return;
    }
    step.status = 'done';
    const next = steps.find((s) => s.status === 'pending');
    if (!next) return this.#settle(operation);
    next.at = at + this.timing.ms(ROLLING_STEP_GAP_SECONDS);
    this.#schedule.push(next.at, operation.id, 'step');
  }

  /** Schedules a rolling update's next fault domain (an event per tenant), skipping one whose VMs have all gone. */
  #runStep(operation: Operation, at: number): void {
    const step = operation.steps?.find((s) => s.status === 'pending' && s.at === at);
    if (!step || operation.status !== 'running') return;
    const members = step.vms
      .map((n) => this.fleet.vms.get(n))
      .filter(
        (vm): vm is Vm =>
          vm !== undefined &&
          (operation.tenant === null || vm.tenant === operation.tenant) &&
          vm.faultDomain === step.faultDomain &&
          vm.powerState === 'running',
      );
    if (members.length === 0) {
      step.status = 'skipped';
      this.#operations.changes.updated(operation.id);
      const next = operation.steps!.find((s) => s.status === 'pending');
      if (next) {
        next.at = at;
        this.#runStep(operation, at);
      } else this.#settle(operation);
      return;
    }
    const policy = POLICIES[operation.type];
    step.status = 'scheduled';
    for (const group of groupBy(members, (vm) => vm.tenant).values()) {
      this.#createEvent(operation, group[0]!.tenant, group, noticeUntil(policy, group, at, {}, this.timing), at, null, step);
    }
    this.#operations.changes.updated(operation.id);
    this.#mutated = true;
  }

  #visible(vm: Vm, event: { tenant: string; resources: readonly string[] }): boolean {
    return (
      event.tenant === vm.tenant &&
      vm.powerState === 'running' &&
      (!this.fleet.seesOnlyOwnEvents(vm) || event.resources.includes(vm.name)) &&
      this.#activation.enabled(vm.name)
    );
  }

  /** Marks a VM changed if enabling or disabling it (or stopping and starting it) changes what it sees. */
  #touchVm(name: string): void {
    const vm = this.fleet.vms.get(name);
    if (!vm) return;
    const own = this.fleet.seesOnlyOwnEvents(vm);
    if (this.#live.ofTenant(vm.tenant).some((e) => !own || e.resources.includes(name))) this.#touched.add(name);
  }

  /** Marks every VM that sees this event as having a changed document. */
  #touch(event: EngineEvent): void {
    const tenant = this.fleet.tenants.get(event.tenant);
    if (!tenant) return;
    for (const name of tenant.vms) {
      if (this.#visible(this.fleet.vms.get(name)!, event)) this.#touched.add(name);
    }
  }

  #insert(event: EngineEvent): void {
    this.#live.add(event);
    this.#liveByOperation.set(event.operationId, (this.#liveByOperation.get(event.operationId) ?? 0) + 1);
    this.#touch(event);
  }

  #liveOrThrow(id: string): EngineEvent {
    const event = this.#live.get(id.toUpperCase());
    if (event) return event;
    if (this.#history.has(id.toUpperCase())) throw conflict(`event ${id} has already ended`);
    throw notFound(`no event with id ${id}`);
  }

  /** [seed] A job starts once every tenant in it has approved. */
  #startJobIfApproved(jobId: string, at: number): void {
    const job = this.#live.ofJob(jobId);
    if (job.every((e) => e.approvals.length > 0)) {
      for (const e of [...job]) if (e.status === 'Scheduled') this.#start(e, at, 'approval');
    }
  }

  #start(event: EngineEvent, at: number, cause: StartCause): void {
    event.status = 'Started';
    event.startedAt = at;
    event.startedBy = cause;
    event.endsAt = at + this.timing.startedMs(event.type, event.durationInSeconds);
    this.#live.updated(event);
    this.#operations.changes.updated(event.operationId);
    // The impact ends first when both fall at once, so its effect precedes the removal.
    this.#schedule.push(this.#impactEndsAt(event), event.id, 'impact');
    this.#schedule.push(event.endsAt, event.id, 'end');
    this.#touch(event);
    const step = this.#stepOf.get(event.id);
    if (step) step.status = 'started';
    this.#affect(event, at, this.#policyOf(event)?.onImpactStart);
  }

  #end(event: EngineEvent, at: number, cancelled: boolean): void {
    this.#touch(event);
    this.#live.remove(event);
    const opId = event.operationId;
    const operation = this.#operations.get(opId);
    const running = operation?.status === 'running';
    if (running) {
      this.#liveByOperation.set(opId, this.#liveByOperation.get(opId)! - 1);
      if (cancelled) this.#cancelledByOperation.set(opId, (this.#cancelledByOperation.get(opId) ?? 0) + 1);
    }
    // No longer live, so nothing changes it from here on.
    this.#history.recordEnded(event, at, cancelled, running ? opId : null);
    // Completed before its impact was over (through the control API): the impact's effect is due now.
    if (!cancelled && event.status === 'Started' && this.#impactEndsAt(event) > at)
      this.#affect(event, at, this.#policyOf(event)?.onImpactEnd);
    if (operation) this.#operations.changes.updated(opId);
    const step = this.#stepOf.get(event.id);
    if (operation && step) this.#advanceRolling(operation, step, at, cancelled);
    else if (operation) this.#settle(operation);
  }

  #apply(due: Due): void {
    switch (due.kind) {
      case 'start': {
        const event = this.#live.get(due.ref);
        if (event?.status === 'Scheduled' && event.notBefore === due.at) {
          for (const e of [...this.#live.ofJob(event.jobId)]) if (e.status === 'Scheduled') this.#start(e, due.at, 'notBefore');
        }
        return;
      }
      case 'impact': {
        const event = this.#live.get(due.ref);
        if (event?.status !== 'Started' || this.#impactEndsAt(event) !== due.at) return;
        // Nothing in the document changes, but what the VMs go through does.
        this.#mutated = true;
        this.#affect(event, due.at, this.#policyOf(event)?.onImpactEnd);
        return;
      }
      case 'end': {
        const event = this.#live.get(due.ref);
        if (event?.status === 'Started' && event.endsAt === due.at) this.#end(event, due.at, false);
        return;
      }
      case 'step': {
        const operation = this.#operations.get(due.ref);
        if (operation) this.#runStep(operation, due.at);
        return;
      }
      case 'enable':
      case 'idle':
        this.#activation.apply(due);
        return;
    }
  }

  /**
   * Drops schedule entries that #apply would ignore, once they outnumber the live work that can
   * be due (an event's start or impact and end, a running operation's step, two activation checks
   * a VM): amortized O(1) a change.
   */
  #compactSchedule(): void {
    const live = 2 * this.#live.size + this.#liveByOperation.size + this.#activation.pending;
    if (this.#schedule.size <= Math.max(SCHEDULE_COMPACT_MIN, 2 * live)) return;
    this.#schedule.compact((due) => this.#stillDue(due));
  }

  /** Whether #apply would act on this entry; the same tests, without the action. */
  #stillDue(due: Due): boolean {
    switch (due.kind) {
      case 'start': {
        const event = this.#live.get(due.ref);
        return event?.status === 'Scheduled' && event.notBefore === due.at;
      }
      case 'impact': {
        const event = this.#live.get(due.ref);
        return event?.status === 'Started' && this.#impactEndsAt(event) === due.at;
      }
      case 'end': {
        const event = this.#live.get(due.ref);
        return event?.status === 'Started' && event.endsAt === due.at;
      }
      case 'step': {
        const operation = this.#operations.get(due.ref);
        return operation?.status === 'running' && (operation.steps?.some((s) => s.status === 'pending' && s.at === due.at) ?? false);
      }
      case 'enable':
      case 'idle':
        return this.#activation.stillDue(due);
    }
  }

  /** Every VM whose visible events changed gets exactly one new incarnation. */
  #commit(): void {
    this.#history.prune(this.#operations);
    this.#compactSchedule();
    if (this.#touched.size > 0) {
      const changed = [...this.#touched];
      this.#touched.clear();
      this.#mutated = true;
      for (const name of changed) this.#incarnations.set(name, this.#incarnation(name) + 1);
      for (const listener of this.#listeners) listener(changed);
    }
    if (this.#mutated) {
      this.#mutated = false;
      for (const listener of this.#mutationListeners) listener();
    }
  }
}

function toView(e: EngineEvent): EventView {
  return {
    id: e.id,
    status: e.status,
    type: e.type,
    resources: e.resources,
    notBefore: e.status === 'Started' ? null : e.notBefore,
    description: e.description,
    source: e.source,
    durationInSeconds: e.durationInSeconds,
  };
}

function cloneEvent(e: EngineEvent): EngineEvent {
  return { ...e, resources: [...e.resources], approvals: e.approvals.map((a) => ({ ...a })) };
}

function holdsTenant(policy: OperationPolicy, target: { tenant: string | null }): boolean {
  return policy.routine && (target.tenant !== null || policy.type === 'host-update');
}

/** The fault domains of the VMs in each tenant. */
function faultDomainsByTenant(vms: readonly Vm[]): Map<string, number[]> {
  const domains = new Map<string, number[]>();
  for (const vm of vms) {
    const fds = domains.get(vm.tenant);
    if (!fds) domains.set(vm.tenant, [vm.faultDomain]);
    else if (!fds.includes(vm.faultDomain)) fds.push(vm.faultDomain);
  }
  return domains;
}

function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}
