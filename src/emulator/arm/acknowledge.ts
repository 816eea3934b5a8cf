// ARM's acknowledge of scheduled events (Microsoft.Maintenance), on the emulator's engine: which VMs the
// named resource is, which events are its own, and the approval itself, which is the engine's as for an
// IMDS POST (a shared job still waits for its other tenants).
import { armError, armResourceNotFound, parentArmId, type ArmErrorBody, type ScheduledEventResourceId } from '../../protocol/arm.js';
import type { Engine } from '../engine/engine.js';
import type { Vm } from '../engine/fleet.js';
import { armIdsOf } from '../imds/compute.js';

/** An ARM answer other than 200: its status and ARM's body. */
export class ArmHttpError extends Error {
  override name = 'ArmHttpError';
  constructor(
    readonly statusCode: number,
    readonly body: ArmErrorBody,
  ) {
    super(body.error.message);
  }
}

const sameName = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * The VMs the resource is, in fleet order; 404 when there are none. ARM names are compared without case.
 * [choice] `virtualMachines/NAME` is a VM whose own ARM id that is: a standalone VM, or a VM of a Flexible
 * scale set. A Uniform instance's id lies under its scale set (`virtualMachineScaleSets/SET/virtualMachines/ID`,
 * armIdsOf), so it is acknowledged through its scale set. `virtualMachineScaleSets/NAME` is every VM of that set.
 */
export function vmsOfResource(engine: Engine, target: ScheduledEventResourceId): Vm[] {
  const wanted = parentArmId(target);
  const matches = (vm: Vm) => {
    const ids = armIdsOf(vm);
    return sameName(target.resourceType === 'virtualMachines' ? ids.resourceId : ids.scaleSetId, wanted);
  };
  // A VM named as it is written is found without reading the whole fleet; other cases of its name are not.
  const named = target.resourceType === 'virtualMachines' ? engine.fleet.vms.get(target.resourceName) : undefined;
  if (named !== undefined && matches(named)) return [named];
  const vms = [...engine.fleet.vms.values()].filter(matches);
  if (vms.length > 0) return vms;
  throw new ArmHttpError(404, armResourceNotFound(`Microsoft.Compute/${target.resourceType}`, target.resourceName, target.resourceGroup));
}

/** [choice] ARM's 404 for an event that is not a child of the named resource; `why` says which case. */
const notUnder = (id: string, under: string, why: string) =>
  new ArmHttpError(
    404,
    armError(
      'ResourceNotFound',
      `The Resource 'Microsoft.Maintenance/scheduledevents/${id}' under resource '${under}' was not found: ${why}.`,
    ),
  );

/** [choice] A change that can no longer be made: only a Scheduled event can be acknowledged. */
const tooLate = (id: string, what: string) =>
  new ArmHttpError(
    409,
    armError('Conflict', `The scheduled event '${id}' has already ${what}; only a Scheduled event can be acknowledged.`),
  );

/** [choice] Errors where Microsoft documents none: ARM's shape and codes, the emulator's words. */
const eventErrors = {
  unknown: (id: string, under: string) =>
    notUnder(id, under, 'no event has this id (never issued, or ended longer ago than the emulator keeps: --history-limit)'),
  otherResource: (id: string, under: string) =>
    notUnder(id, under, 'the event concerns other VMs (its Resources name no VM of this resource)'),
  started: (id: string) => tooLate(id, 'Started'),
  ended: (id: string, cancelled: boolean) => tooLate(id, cancelled ? 'been Canceled' : 'Completed'),
};

/**
 * Acknowledges `ids` for the resource: every id is checked before any is approved (all or nothing, as an
 * IMDS POST). [choice] An event is the resource's when its Resources name one of the resource's VMs (its
 * ARM id lies under that resource); it is approved as that VM's IMDS POST would approve it. [choice] An event
 * that is not Scheduled any more is a 409, where IMDS answers 200 and changes nothing: ARM's caller asked for
 * a change that can no longer be made. [choice] The resource's scheduledEventsPolicy is not consulted:
 * eventGridAndResourceGraph enables publishing, not approval, and IMDS approvals never depended on it.
 */
export function acknowledge(engine: Engine, target: ScheduledEventResourceId, ids: readonly string[]): void {
  const vms = vmsOfResource(engine, target);
  const under = `Microsoft.Compute/${target.resourceType}/${target.resourceName}`;
  const byVm = new Map<string, string[]>();
  for (const id of ids) {
    const known = engine.lookup(id);
    if (known === undefined) throw eventErrors.unknown(id, under);
    const resources = 'live' in known ? known.live.resources : known.ended.resources;
    const approver = vms.find((vm) => resources.includes(vm.name));
    if (approver === undefined) throw eventErrors.otherResource(id, under);
    if ('ended' in known) throw eventErrors.ended(id, known.ended.cancelled);
    if (known.live.status !== 'Scheduled') throw eventErrors.started(id);
    byVm.set(approver.name, [...(byVm.get(approver.name) ?? []), known.live.id]);
  }
  for (const [vm, approved] of byVm) engine.approve(vm, approved, 'arm');
}
