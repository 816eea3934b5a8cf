// An event's life: created Scheduled, Started by approval of every tenant in its job, by NotBefore or
// at once, its impact on the VMs, and its end (completed or cancelled). The one place an event
// changes status; what an event does to its VMs comes from its operation's policy.
import { conflict, invalid, notFound } from './errors.js';
import type { EngineCore } from './core.js';
import type { Vm } from './fleet.js';
import type { EngineEvent, Operation, StartCause } from './model.js';
import type { OperationPolicy } from './policies/index.js';
import { POLICIES } from './policies/index.js';
import type { RollingStep } from './rolling.js';
import { approvesAutomatically } from './scheduled-events-policy.js';
import type { Due } from './schedule.js';
import { STATE_WHILE_STARTED, type VmState } from './vm-state.js';

/** The schedule's entries that an event's lifecycle owns. */
export type EventDue = Due & { kind: 'start' | 'impact' | 'end' };

/** Where an approval came from: a VM's POST to IMDS, or ARM's acknowledge on its behalf. */
export type ApprovalChannel = 'imds' | 'arm';

/** What the engine knows of an event id: the live event, or how an ended one ended and which VMs it named. */
export type EventLookup = { live: EngineEvent } | { ended: { resources: string[]; cancelled: boolean } };

export class Lifecycle {
  /** Events created since the engine started: a figure for benchmarks and metrics. */
  created = 0;
  readonly #core: EngineCore;

  constructor(core: EngineCore) {
    this.#core = core;
  }

  /** A new Scheduled event of an operation for one tenant's VMs; one that starts at once Starts now. */
  create(
    operation: Operation,
    tenant: string,
    members: readonly Vm[],
    notBefore: number,
    at: number,
    jobId: string | null,
    step: RollingStep | null,
  ): EngineEvent {
    const policy = POLICIES[operation.type];
    const id = this.#core.newId().toUpperCase();
    this.created++;
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
    this.#core.operations.attach(operation, event, step);
    this.insert(event);
    this.#core.transitioned(event, 'Scheduled', at);
    if (policy.startsAtOnce) this.#start(event, at, 'failure');
    else if (autoApproved(policy, members)) this.#start(event, at, 'policy');
    else this.#core.schedule.push(event.notBefore, event.id, 'start');
    return event;
  }

  /** Puts an event among the live ones: its operation counts it, and its VMs' documents change. */
  insert(event: EngineEvent): void {
    this.#core.live.add(event);
    this.#core.operations.eventInserted(event);
    this.#core.documents.touch(event);
  }

  /** A live event already saved in a state file, with its transitions scheduled again. */
  restore(event: EngineEvent, savedAt: number): void {
    const { schedule } = this.#core;
    this.insert(event);
    if (event.status === 'Scheduled') schedule.push(event.notBefore, event.id, 'start');
    else if (event.endsAt !== null) {
      // An impact that was over when the file was saved has had its effect already.
      const impactEnd = this.impactEndsAt(event);
      if (impactEnd > savedAt) schedule.push(impactEnd, event.id, 'impact');
      schedule.push(event.endsAt, event.id, 'end');
    }
  }

  /**
   * An approval POSTed by `vm`. All ids are checked before any takes effect.
   * [choice] An id the VM sees, or saw before it ended, is accepted and changes nothing
   * more if already Started or ended; an id never issued, or of an event the VM cannot
   * see, is rejected.
   */
  approve(vm: Vm, ids: readonly string[], now: number, through: ApprovalChannel = 'imds'): void {
    const { live, history, documents } = this.#core;
    const toApprove: EngineEvent[] = [];
    for (const raw of ids) {
      const id = raw.toUpperCase();
      const known = live.get(id) ?? history.ended.get(id);
      if (!known) throw invalid(`unknown EventId (never issued, or ended longer ago than the emulator keeps: --history-limit): ${raw}`);
      // [choice] ARM acknowledges for the resource, from outside the VM: an event of the VM's tenant counts whether or
      // not the VM shows it in its document now (Scheduled Events not yet enabled by a first request, VM deallocated).
      const mayApprove = through === 'arm' ? known.tenant === vm.tenant : documents.visible(vm, known);
      if (!mayApprove) throw invalid(`EventId ${raw} is not an event that VM '${vm.name}' can see`);
      const event = live.get(id);
      if (event) toApprove.push(event);
    }
    for (const event of toApprove) {
      if (event.status !== 'Scheduled' || event.approvals.some((a) => a.vm === vm.name)) continue;
      event.approvals.push({ vm: vm.name, at: now });
      live.updated(event);
      this.#core.markMutated();
      this.#startJobIfApproved(event.jobId, now);
    }
  }

  cancel(id: string, now: number): EngineEvent {
    const event = this.#liveOrThrow(id);
    if (event.status !== 'Scheduled') {
      throw conflict(`event ${event.id} has already Started and can no longer be cancelled`);
    }
    // [choice] Azure cancels a job, not a tenant's share of it: every event of the job goes.
    for (const e of [...this.#core.live.ofJob(event.jobId)]) this.end(e, now, true);
    return event;
  }

  complete(id: string, now: number): EngineEvent {
    const event = this.#liveOrThrow(id);
    if (event.status !== 'Started') {
      throw conflict(`event ${event.id} is still Scheduled; approve it or let NotBefore pass before completing it`);
    }
    this.end(event, now, false);
    return event;
  }

  /** The one way an event ends: out of the live set into history, its operation told. */
  end(event: EngineEvent, at: number, cancelled: boolean): void {
    const { documents, live, history, operations } = this.#core;
    documents.touch(event);
    live.remove(event);
    const runningOperation = operations.eventLeft(event, cancelled);
    // No longer live, so nothing changes it from here on.
    history.recordEnded(event, at, cancelled, runningOperation);
    this.#core.transitioned(event, cancelled ? 'Canceled' : 'Completed', at);
    // Completed before its impact was over (through the control API): the impact's effect is due now.
    if (!cancelled && event.status === 'Started' && this.impactEndsAt(event) > at)
      this.#affect(event, at, this.#policyOf(event)?.onImpactEnd);
    operations.eventEnded(event, at, cancelled);
  }

  impactEndsAt(event: EngineEvent): number {
    return (event.startedAt ?? event.notBefore) + this.#core.timing.impactMs(event.type, event.durationInSeconds);
  }

  /**
   * What each VM is going through now; a VM missing from the map is running. A Started event
   * marks its VMs only during its impact: after that they run again while it stays in the document.
   */
  vmStates(now: number): Map<string, VmState> {
    const { live, fleet } = this.#core;
    const states = new Map<string, VmState>();
    for (const e of live.values()) {
      if (e.status !== 'Started' || this.impactEndsAt(e) <= now) continue;
      for (const name of e.resources) if (fleet.vms.has(name)) states.set(name, STATE_WHILE_STARTED[e.type]);
    }
    for (const name of this.#core.vms.deallocated) states.set(name, 'deallocated');
    return states;
  }

  apply(due: EventDue): void {
    const { live } = this.#core;
    const event = live.get(due.ref);
    if (!event || !this.stillDue(due)) return;
    switch (due.kind) {
      case 'start':
        for (const e of [...live.ofJob(event.jobId)]) if (e.status === 'Scheduled') this.#start(e, due.at, 'notBefore');
        return;
      case 'impact':
        // Nothing in the document changes, but what the VMs go through does.
        this.#core.markMutated();
        this.#affect(event, due.at, this.#policyOf(event)?.onImpactEnd);
        return;
      case 'end':
        this.end(event, due.at, false);
        return;
    }
  }

  /** Whether apply() would act on this entry: the same tests, without the action. */
  stillDue(due: EventDue): boolean {
    const event = this.#core.live.get(due.ref);
    switch (due.kind) {
      case 'start':
        return event?.status === 'Scheduled' && event.notBefore === due.at;
      case 'impact':
        return event?.status === 'Started' && this.impactEndsAt(event) === due.at;
      case 'end':
        return event?.status === 'Started' && event.endsAt === due.at;
    }
  }

  #liveOrThrow(id: string): EngineEvent {
    const event = this.#core.live.get(id.toUpperCase());
    if (event) return event;
    if (this.#core.history.has(id.toUpperCase())) throw conflict(`event ${id} has already ended`);
    throw notFound(`no event with id ${id}`);
  }

  /** [seed] A job starts once every tenant in it has approved. */
  #startJobIfApproved(jobId: string, at: number): void {
    const job = this.#core.live.ofJob(jobId);
    if (job.every((e) => e.approvals.length > 0)) {
      for (const e of [...job]) if (e.status === 'Scheduled') this.#start(e, at, 'approval');
    }
  }

  #start(event: EngineEvent, at: number, cause: StartCause): void {
    const { schedule, timing } = this.#core;
    event.status = 'Started';
    event.startedAt = at;
    event.startedBy = cause;
    event.endsAt = at + timing.startedMs(event.type, event.durationInSeconds);
    this.#core.live.updated(event);
    // The impact ends first when both fall at once, so its effect precedes the removal.
    schedule.push(this.impactEndsAt(event), event.id, 'impact');
    schedule.push(event.endsAt, event.id, 'end');
    this.#core.documents.touch(event);
    this.#core.transitioned(event, 'Started', at);
    this.#core.operations.eventStarted(event);
    this.#affect(event, at, this.#policyOf(event)?.onImpactStart);
  }

  /** Runs a policy's effect on each VM of the event that is still in the fleet. */
  #affect(event: EngineEvent, at: number, effect: OperationPolicy['onImpactStart']): void {
    if (!effect) return;
    const act = this.#core.vms.actions(event, at);
    for (const name of event.resources) {
      const vm = this.#core.fleet.vms.get(name);
      if (vm) effect(vm, act);
    }
  }

  #policyOf(event: EngineEvent): OperationPolicy | undefined {
    const type = this.#core.operations.get(event.operationId)?.type;
    return type === undefined ? undefined : POLICIES[type];
  }
}

/**
 * [choice] A user-initiated event starts at once when every VM it names has its kind's automatic
 * approval on; a VM that asked to be waited for is waited for.
 */
function autoApproved(policy: OperationPolicy, members: readonly Vm[]): boolean {
  const setting = policy.autoApproval;
  return setting !== undefined && members.every((vm) => approvesAutomatically(vm.instance.scheduledEventsPolicy, setting));
}
