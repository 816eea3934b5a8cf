// The slice of /metadata/instance/compute an agent needs to know who it is.
import type { Vm } from '../engine/fleet.js';

export interface ComputeMetadata {
  name: string;
  vmId: string;
  vmScaleSetName: string;
  /** IMDS sends the domains as strings. */
  platformFaultDomain: string;
  platformUpdateDomain: string;
  priority: 'Regular' | 'Spot';
}

export function computeMetadata(vm: Vm): ComputeMetadata {
  return {
    name: vm.name,
    vmId: vm.vmId,
    vmScaleSetName: vm.scaleSet ?? '',
    platformFaultDomain: String(vm.faultDomain),
    platformUpdateDomain: String(vm.updateDomain),
    priority: vm.priority,
  };
}
