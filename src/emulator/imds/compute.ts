// The slice of /metadata/instance/compute an agent needs to know who it is.
import type { Fleet, Vm } from '../engine/fleet.js';

export interface ComputeMetadata {
  name: string;
  vmId: string;
  vmScaleSetName: string;
  /** IMDS sends the domains as strings. */
  platformFaultDomain: string;
  platformUpdateDomain: string;
  priority: 'Regular' | 'Spot';
}

export function computeMetadata(fleet: Fleet, vm: Vm): ComputeMetadata {
  const tenant = fleet.tenantOf(vm);
  return {
    name: vm.name,
    vmId: vm.vmId,
    vmScaleSetName: tenant.kind === 'scaleSet' ? tenant.name : '',
    platformFaultDomain: String(vm.faultDomain),
    platformUpdateDomain: String(vm.updateDomain),
    priority: vm.priority,
  };
}
