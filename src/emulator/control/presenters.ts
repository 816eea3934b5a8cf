// What the control API shows of the engine's model: the JSON of VMs, events, operations, the clock
// and the fleet. Kept apart from the routes, so the model and its presentation change separately.
import { formatIso } from '../../protocol/time.js';
import type { ControlContext } from '../context.js';
import type { Engine, EngineEvent, JobMember, Operation } from '../engine/engine.js';
import { vmToSpec, type Vm } from '../engine/fleet.js';
import type { VmState } from '../engine/vm-state.js';
import type {
  ClockResponse,
  EndedEventResponse,
  EventResponse,
  FleetResponse,
  OperationResponse,
  RollingStepResponse,
  VmResponse,
} from './schemas.js';

const iso = (ms: number | null) => (ms === null ? null : formatIso(ms));

/** `detail` adds the VM's last Scheduled Events request, for the single-VM route. */
export function vmJson(ctx: ControlContext, vm: Vm, detail = false, states = ctx.engine.vmStates()): VmResponse {
  const activation = ctx.engine.activationOf(vm.name);
  return {
    ...vmToSpec(vm, ctx.engine.fleet.tenantOf(vm)),
    state: states.get(vm.name) ?? 'running',
    incarnation: ctx.engine.incarnationOf(vm.name),
    scheduledEvents: activation.status,
    ...(detail ? { lastRequestAt: iso(activation.lastRequestAt) } : {}),
  };
}

/** `members` is the job as it was, for an event that has just ended (cancel, complete). */
export function eventJson(engine: Engine, e: EngineEvent, members: JobMember[] = engine.jobMembers(e.id)): EventResponse {
  return { ...eventFields(e), job: { id: e.jobId, tenants: members.map((m) => ({ ...m })) } };
}

export function eventFields(e: EngineEvent): Omit<EventResponse, 'job'> {
  return {
    id: e.id,
    operation: e.operationId,
    tenant: e.tenant,
    type: e.type,
    source: e.source,
    status: e.status,
    resources: [...e.resources],
    description: e.description,
    durationInSeconds: e.durationInSeconds,
    createdAt: formatIso(e.createdAt),
    notBefore: formatIso(e.notBefore),
    startedAt: iso(e.startedAt),
    endsAt: iso(e.endsAt),
    startedBy: e.startedBy,
    approvals: e.approvals.map((a) => ({ vm: a.vm, at: formatIso(a.at) })),
  };
}

export function endedJson(ended: ReturnType<Engine['history']>['items'][number]): EndedEventResponse {
  return { ...eventFields(ended.event), endedAt: formatIso(ended.endedAt), outcome: ended.cancelled ? 'cancelled' : 'completed' };
}

export function stepsJson(o: Operation): RollingStepResponse[] | null {
  return o.steps?.map((step) => ({ ...step, vms: [...step.vms], events: [...step.events], at: iso(step.at) })) ?? null;
}

export function operationJson(o: Operation): OperationResponse {
  const steps = stepsJson(o);
  return {
    id: o.id,
    type: o.type,
    createdAt: formatIso(o.createdAt),
    vms: o.vms,
    host: o.host,
    tenant: o.tenant,
    status: o.status,
    events: o.events,
    removedVms: o.removedVms,
    reimagedVms: o.reimagedVms,
    steps,
    progress: steps && {
      done: steps.filter((s) => s.status === 'done' || s.status === 'skipped').length,
      total: steps.length,
    },
    durationInSeconds: o.durationInSeconds,
    description: o.description,
  };
}

export function clockJson(ctx: ControlContext): ClockResponse {
  return {
    now: formatIso(ctx.clock.now()),
    mode: ctx.clock.mode,
    factor: ctx.engine.timing.factor,
    activation: ctx.engine.activationMode,
  };
}

export function fleetJson(ctx: ControlContext): FleetResponse {
  const { fleet } = ctx.engine;
  const states: Map<string, VmState> = ctx.engine.vmStates();
  return {
    vms: [...fleet.vms.values()].map((vm) => vmJson(ctx, vm, false, states)),
    tenants: [...fleet.tenants.values()].map((t) => ({
      name: t.name,
      kind: t.kind,
      faultDomainCount: t.faultDomainCount,
      updateDomainCount: t.updateDomainCount,
      vms: [...t.vms],
    })),
    hosts: [...fleet.hosts.values()].map((h) => ({
      name: h.name,
      vms: [...h.vms],
      tenants: [...new Set([...h.vms].map((name) => fleet.vms.get(name)!.tenant))],
    })),
    deleted: ctx.engine.deletedVms().map((d) => ({ ...d, state: 'deleted' as const, deletedAt: formatIso(d.deletedAt) })),
  };
}
