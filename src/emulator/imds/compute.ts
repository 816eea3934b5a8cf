// /metadata/instance/compute: a VM's identity from the fleet, in Azure's documented schema (newest version; gated elsewhere).
import { uniformInstanceId } from '../engine/computer-name.js';
import type { Vm } from '../engine/fleet.js';
import { DEFAULT_IMAGES, INSTANCE_DEFAULTS as D, stableGuid } from './instance-defaults.js';
import type { MetadataNode } from './instance.js';

/** Where the VM sits in ARM: compute's ids, and the managed identity's `xms_mirid`. */
export function armIdsOf(vm: Vm): { subscriptionId: string; resourceGroupName: string; scaleSetId: string; resourceId: string } {
  const subscriptionId = vm.instance.subscriptionId ?? D.subscriptionId;
  const resourceGroupName = vm.instance.resourceGroup ?? D.resourceGroup;
  const group = `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroupName}/providers/Microsoft.Compute`;
  const scaleSetId = vm.scaleSet === null ? '' : `${group}/virtualMachineScaleSets/${vm.scaleSet}`;
  // [imds] A Uniform instance is a child of its scale set, with its instance id: the digits after the last
  // '_' of `<set>_<id>` (else its name). A Flexible scale set's VMs are ordinary VMs, under their own name.
  const resourceId =
    vm.scaleSet === null || vm.orchestrationMode === 'Flexible'
      ? `${group}/virtualMachines/${vm.name}`
      : `${scaleSetId}/virtualMachines/${uniformInstanceId(vm.name) ?? vm.name}`;
  return { subscriptionId, resourceGroupName, scaleSetId, resourceId };
}

export function computeMetadata(vm: Vm): MetadataNode {
  const s = vm.instance;
  const { subscriptionId, resourceGroupName, scaleSetId, resourceId } = armIdsOf(vm);
  const osType = s.osType ?? D.osType;
  const image = DEFAULT_IMAGES[osType];
  const tags = Object.entries(s.tags ?? {});
  const osDiskName = `${vm.name}_OsDisk`;
  const no = 'false';
  return {
    additionalCapabilities: { hibernationEnabled: no },
    azEnvironment: D.azEnvironment,
    customData: '',
    evictionPolicy: vm.priority === 'Spot' ? D.spotEvictionPolicy : '',
    extendedLocation: { type: '', name: '' },
    host: { id: '' },
    hostGroup: { id: '' },
    isHostCompatibilityLayerVm: no,
    licenseType: '',
    location: s.location ?? D.location,
    name: vm.name,
    offer: image.offer,
    osProfile: {
      adminUsername: D.adminUsername,
      computerName: vm.computerName,
      disablePasswordAuthentication: osType === 'Linux' ? 'true' : no,
    },
    osType,
    // [choice] Each FC tenant of a scale set is one placement group, with a stable id.
    placementGroupId: vm.scaleSet === null ? '' : stableGuid(`${subscriptionId}/${resourceGroupName}/${vm.tenant}`),
    plan: { name: '', product: '', publisher: '' },
    platformFaultDomain: String(vm.faultDomain),
    platformSubFaultDomain: '',
    platformUpdateDomain: String(vm.updateDomain),
    priority: vm.priority,
    provider: 'Microsoft.Compute',
    publicKeys: [],
    publisher: image.publisher,
    resourceGroupName,
    resourceId,
    securityProfile: { secureBootEnabled: no, virtualTpmEnabled: no, encryptionAtHost: no, securityType: '' },
    sku: image.sku,
    storageProfile: {
      dataDisks: [],
      imageReference: { id: '', offer: image.offer, publisher: image.publisher, sku: image.sku, version: image.version },
      osDisk: {
        caching: 'ReadWrite',
        createOption: 'FromImage',
        diffDiskSettings: { option: '' },
        diskSizeGB: D.osDiskSizeGB,
        encryptionSettings: { enabled: no },
        image: { uri: '' },
        managedDisk: {
          id: `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroupName}/providers/Microsoft.Compute/disks/${osDiskName}`,
          storageAccountType: D.storageAccountType,
        },
        name: osDiskName,
        osType,
        vhd: { uri: '' },
        writeAcceleratorEnabled: no,
      },
      resourceDisk: { size: D.resourceDiskSizeMB },
    },
    subscriptionId,
    tags: tags.map(([k, v]) => `${k}:${v}`).join(';'),
    tagsList: tags.map(([name, value]) => ({ name, value })),
    userData: '',
    version: image.version,
    virtualMachineScaleSet: { id: scaleSetId },
    vmId: vm.vmId,
    vmScaleSetName: vm.scaleSet ?? '',
    vmSize: s.vmSize ?? D.vmSize,
    zone: s.zone ?? '',
  };
}
