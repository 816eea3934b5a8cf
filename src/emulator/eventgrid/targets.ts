// Where an event is published to Event Grid: the ARM resource (a VM, or its scale set) whose
// scheduledEventsPolicy turns publishing on, with its location and the api-version its payload follows.
import type { ArmComputeType } from '../../protocol/arm.js';
import { DEFAULT_PAYLOAD_API_VERSION } from '../../protocol/eventgrid.js';
import { LATEST_API_VERSION, type ApiVersion } from '../../protocol/versions.js';
import type { Fleet, Vm } from '../engine/fleet.js';
import { armIdsOf } from '../imds/compute.js';
import { INSTANCE_DEFAULTS } from '../imds/instance-defaults.js';

/** One ARM resource an event is published under. */
export interface PublishTarget {
  subscriptionId: string;
  resourceGroup: string;
  resourceType: ArmComputeType;
  resourceName: string;
  location: string;
  /** `data.apiVersion`: the policy's scheduledEventsApiVersion, else Microsoft's sample's. */
  apiVersion: string;
  /** Whose IMDS fields `data.resourceInfo.properties` carries. */
  fields: ApiVersion;
  /** A cloud service's role instances keep their names under 2017-03-01's underscore rule. */
  roleInstances: boolean;
}

/** [azure] "Enabled resource": `scheduledEventsAdditionalPublishingTargets.eventGridAndResourceGraph.enable`. */
function gridSettings(vm: Vm): { enable?: boolean; scheduledEventsApiVersion?: ApiVersion } | undefined {
  return vm.instance.scheduledEventsPolicy?.scheduledEventsAdditionalPublishingTargets?.eventGridAndResourceGraph;
}

/**
 * The resources an event of these VMs is published under, one per VM outside scale sets and one per
 * scale set ([azure] the subject of a scale-set VM's event is the scale set's id, as in Microsoft's
 * sample). [choice] A scale set publishes when any of its VMs named by the event is enabled (their
 * policies are the set's, unless a VM overrides it), with the api-version of the first such VM.
 * VMs no longer in the fleet are skipped.
 */
export function targetsOf(fleet: Fleet, resources: readonly string[]): PublishTarget[] {
  const targets = new Map<string, PublishTarget>();
  for (const name of resources) {
    const vm = fleet.vms.get(name);
    const grid = vm === undefined ? undefined : gridSettings(vm);
    if (vm === undefined || grid?.enable !== true) continue;
    const { subscriptionId, resourceGroupName } = armIdsOf(vm);
    const resourceType: ArmComputeType = vm.scaleSet === null ? 'virtualMachines' : 'virtualMachineScaleSets';
    const resourceName = vm.scaleSet ?? vm.name;
    const key = `${subscriptionId}/${resourceGroupName}/${resourceType}/${resourceName}`;
    if (targets.has(key)) continue;
    const version = grid.scheduledEventsApiVersion;
    targets.set(key, {
      subscriptionId,
      resourceGroup: resourceGroupName,
      resourceType,
      resourceName,
      location: vm.instance.location ?? INSTANCE_DEFAULTS.location,
      apiVersion: version ?? DEFAULT_PAYLOAD_API_VERSION,
      fields: version ?? LATEST_API_VERSION,
      roleInstances: fleet.tenantOf(vm).kind === 'cloudService',
    });
  }
  return [...targets.values()];
}
