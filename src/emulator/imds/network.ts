// /metadata/instance/network: the VM's primary NIC, from its declared or default addresses.
import type { Vm } from '../engine/fleet.js';
import { INSTANCE_DEFAULTS, defaultMacAddress } from './instance-defaults.js';
import type { MetadataNode } from './instance.js';

export function networkMetadata(vm: Vm): MetadataNode {
  const [a, b, c] = vm.privateIp.split('.');
  return {
    interface: [
      {
        ipv4: {
          ipAddress: [{ privateIpAddress: vm.privateIp, publicIpAddress: vm.instance.publicIp ?? '' }],
          subnet: [{ address: `${a}.${b}.${c}.0`, prefix: INSTANCE_DEFAULTS.subnetPrefix }],
        },
        ipv6: { ipAddress: [] },
        macAddress: vm.instance.macAddress ?? defaultMacAddress(vm.vmId),
      },
    ],
  };
}
