// Operations: a request checked and turned into events (at once, or a rolling update one fault
// domain at a time), the counts that tell when each has finished and how, and the holds routine
// maintenance keeps on its tenants. Every operation, running or finished, is here until history
// forgets it.
import { conflict, invalid } from './errors.js';
import { TrackedMap } from './changes.js';
import type { EngineCore } from './core.js';
import type { Vm } from './fleet.js';
import type { History } from './history.js';
import { appended } from './lists.js';
import { MaintenanceHolds } from './maintenance.js';
import { OPERATION_STATUSES, type EngineEvent, type Operation, type OperationRequest, type OperationStatus } from './model.js';
import { OPERATION_TYPES, isOperationType } from './operations.js';
import { pageNewestFirst, type Page, type PageRequest } from './paging.js';
import { POLICIES, type OperationPolicy } from './policies/index.js';
import { planSteps, type RollingStep } from './rolling.js';
import type { Due } from './schedule.js';
import { noticeUntil, resolveTarget, targetField } from './targets.js';
import { ROLLING_STEP_GAP_SECONDS } from './timing.js';

/** A rolling update's next fault domain, in the schedule. */
export type StepDue = Due & { kind: 'step' };

export class OperationBook {
  /** Saved in the state file. */
  readonly byId: TrackedMap<string, Operation>;
  readonly #maintenance = new MaintenanceHolds();
  /** How many events of each running operation are live. */
  readonly #liveByOperation = new Map<string, number>();
  /** How many events of each running operation ended cancelled: its outcome, without reading its events. */
  readonly #cancelledByOperation = new Map<string, number>();
  /** The rolling step each live or ended event of a running rollout belongs to. */
  readonly #stepOf = new Map<string, RollingStep>();
  readonly #core: EngineCore;

  constructor(core: EngineCore) {
    this.#core = core;
    this.byId = new TrackedMap(core.changes);
  }

  get(id: string): Operation | undefined {
    return this.byId.get(id);
  }

  /** How many operations are running: each may have a step due. */
  get running(): number {
    return this.#liveByOperation.size;
  }

  /** Newest first, a page at a time; `status` keeps only those in that state. */
  page(request: PageRequest & { status?: OperationStatus | undefined }): Page<Operation> {
    const { status } = request;
    if (status !== undefined && !OPERATION_STATUSES.includes(status)) {
      throw invalid(`status: must be one of ${OPERATION_STATUSES.join(', ')}, got ${JSON.stringify(status)}`, 'status');
    }
    return pageNewestFirst([...this.byId.values()], request, (o): o is Operation => status === undefined || o.status === status);
  }

  /** Checks a request whole, then creates the operation and its first events; `now` is its time. */
  create(request: OperationRequest, now: number): Operation {
    const { fleet, timing, lifecycle } = this.#core;
    const type = request.type;
    if (!isOperationType(type)) {
      throw invalid(`unknown operation type ${JSON.stringify(type)}; expected one of ${OPERATION_TYPES.join(', ')}`, 'type');
    }
    const policy = POLICIES[type];
    const target = resolveTarget(fleet, type, request);
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
      const problem = policy.check?.(vm, fleet.tenantOf(vm).kind);
      if (problem) throw invalid(problem, targetField(request, i));
    }
    this.#checkOverlap(policy, vms, request);
    const domains = faultDomainsByTenant(vms);
    if (policy.routine) this.#maintenance.check(domains, (id) => this.byId.get(id)?.type);

    // Which VMs get notice; the rest are acted on at once with no event.
    const atOnce = new Map<Vm, 'remove' | 'reimage'>();
    for (const vm of vms) {
      const action = policy.withoutNotice?.(vm) ?? null;
      if (action) atOnce.set(vm, action);
    }
    const noticed = vms.filter((vm) => !atOnce.has(vm));
    const steps = policy.rolls(target) ? planSteps(noticed) : null;
    // Each group is one event (one per tenant); a rollout plans only its first fault domain now.
    const first = steps ? noticed.filter((vm) => vm.faultDomain === steps[0]!.faultDomain) : noticed;
    const plans = [...groupBy(first, (vm) => vm.tenant).values()].map((group) => ({
      tenant: group[0]!.tenant,
      members: group,
      notBefore: noticeUntil(policy, group, now, request, timing),
    }));

    const operation: Operation = {
      id: this.#core.newId().toLowerCase(),
      seq: this.#core.history.nextSeq(),
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
    this.byId.set(operation.id, operation);
    // [seed] A job on a host waits for every tenant on it; other operations give each tenant its own job.
    const sharedJob = target.host !== null ? this.#core.newId().toUpperCase() : null;
    if (steps && plans.length > 0) {
      steps[0]!.status = 'scheduled';
      steps[0]!.at = now;
    }
    for (const plan of plans) {
      lifecycle.create(operation, plan.tenant, plan.members, plan.notBefore, now, sharedJob, steps?.[0] ?? null);
    }
    for (const [vm, action] of atOnce) {
      if (action === 'remove') {
        this.#core.vms.remove(vm.name, { operation: operation.id, at: now });
        operation.removedVms = appended(operation.removedVms, vm.name);
      } else operation.reimagedVms = appended(operation.reimagedVms, vm.name);
    }
    if (policy.holdsTenant(target) && plans.length > 0) this.#maintenance.hold(operation.id, domains);
    this.#settle(operation);
    this.byId.changes.updated(operation.id);
    this.#core.markMutated();
    return operation;
  }

  /** A new event of this operation, in this step of its rollout if it rolls. */
  attach(operation: Operation, event: EngineEvent, step: RollingStep | null): void {
    if (step) {
      step.events = appended(step.events, event.id);
      this.#stepOf.set(event.id, step);
    }
    operation.events = appended(operation.events, event.id);
    this.byId.changes.updated(operation.id);
  }

  /** An event of this operation is live (new, or restored from a state file). */
  eventInserted(event: EngineEvent): void {
    this.#liveByOperation.set(event.operationId, (this.#liveByOperation.get(event.operationId) ?? 0) + 1);
  }

  eventStarted(event: EngineEvent): void {
    this.byId.changes.updated(event.operationId);
    const step = this.#stepOf.get(event.id);
    if (step) step.status = 'started';
  }

  /** An event of this operation is no longer live; its operation's id if that is still running. */
  eventLeft(event: EngineEvent, cancelled: boolean): string | null {
    const opId = event.operationId;
    if (this.byId.get(opId)?.status !== 'running') return null;
    this.#liveByOperation.set(opId, this.#liveByOperation.get(opId)! - 1);
    if (cancelled) this.#cancelledByOperation.set(opId, (this.#cancelledByOperation.get(opId) ?? 0) + 1);
    return opId;
  }

  /** An event has ended and its effects are done: the rollout moves on, or the operation may be finished. */
  eventEnded(event: EngineEvent, at: number, cancelled: boolean): void {
    const operation = this.byId.get(event.operationId);
    if (!operation) return;
    this.byId.changes.updated(operation.id);
    const step = this.#stepOf.get(event.id);
    if (step) this.#advanceRolling(operation, step, at, cancelled);
    else this.#settle(operation);
  }

  /** A rolling update's next fault domain falls due. */
  apply(due: StepDue): void {
    const operation = this.byId.get(due.ref);
    if (operation) this.#runStep(operation, due.at);
  }

  stillDue(due: StepDue): boolean {
    const operation = this.byId.get(due.ref);
    return operation?.status === 'running' && (operation.steps?.some((s) => s.status === 'pending' && s.at === due.at) ?? false);
  }

  /** Operations from a state file, with the holds, counts and steps of those still running. */
  restore(operations: readonly Operation[]): void {
    const { fleet, schedule } = this.#core;
    for (const op of operations) {
      this.byId.set(op.id, op);
      if (op.status !== 'running') continue;
      this.#liveByOperation.set(op.id, 0);
      for (const step of op.steps ?? []) for (const id of step.events) this.#stepOf.set(id, step);
      if (POLICIES[op.type].holdsTenant(op))
        this.#maintenance.hold(op.id, faultDomainsByTenant(op.vms.flatMap((n) => fleet.vms.get(n) ?? [])));
      const pending = op.steps?.find((step) => step.status === 'pending' && step.at !== null);
      if (pending) schedule.push(pending.at!, op.id, 'step');
    }
  }

  /** Once restored events are live again: a running operation's outcome counts the cancelled events it has in history. */
  countCancelled(history: History): void {
    for (const e of history.ended.values()) {
      const op = e.event?.operationId;
      if (e.cancelled && op !== undefined && this.#liveByOperation.has(op)) {
        this.#cancelledByOperation.set(op, (this.#cancelledByOperation.get(op) ?? 0) + 1);
      }
    }
  }

  clear(): void {
    this.byId.clear();
    this.#maintenance.clear();
    this.#liveByOperation.clear();
    this.#cancelledByOperation.clear();
    this.#stepOf.clear();
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
      for (const e of this.#core.live.naming(vm.name)) {
        if (policy.exclusiveWith.includes(e.type)) {
          throw conflict(
            `VM '${vm.name}' already has a ${e.type} event under way (${e.id}); a second ${policy.type} is refused`,
            targetField(request, i),
          );
        }
      }
    }
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
    this.byId.changes.updated(operation.id);
    this.#maintenance.release(operation.id);
    this.#liveByOperation.delete(operation.id);
    this.#cancelledByOperation.delete(operation.id);
    for (const step of operation.steps ?? []) for (const id of step.events) this.#stepOf.delete(id);
    this.#core.history.operationFinished(operation);
  }

  /** A rolling update's step event has ended: plan the next fault domain shortly after, or finish. */
  #advanceRolling(operation: Operation, step: RollingStep, at: number, cancelled: boolean): void {
    if (step.events.some((id) => this.#core.live.has(id))) return;
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
    next.at = at + this.#core.timing.ms(ROLLING_STEP_GAP_SECONDS);
    this.#core.schedule.push(next.at, operation.id, 'step');
  }

  /** Schedules a rolling update's next fault domain (an event per tenant), skipping one whose VMs have all gone. */
  #runStep(operation: Operation, at: number): void {
    const step = operation.steps?.find((s) => s.status === 'pending' && s.at === at);
    if (!step || operation.status !== 'running') return;
    const { fleet, timing } = this.#core;
    const members = step.vms
      .map((n) => fleet.vms.get(n))
      .filter(
        (vm): vm is Vm =>
          vm !== undefined &&
          (operation.tenant === null || vm.tenant === operation.tenant) &&
          vm.faultDomain === step.faultDomain &&
          vm.powerState === 'running',
      );
    if (members.length === 0) {
      step.status = 'skipped';
      this.byId.changes.updated(operation.id);
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
      this.#core.lifecycle.create(operation, group[0]!.tenant, group, noticeUntil(policy, group, at, {}, timing), at, null, step);
    }
    this.byId.changes.updated(operation.id);
    this.#core.markMutated();
  }
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
