// [choice] What /metadata/instance shows for settings a fleet leaves out: one table, documented in docs/fleet-files.md.
import { createHash } from 'node:crypto';
import { DEFAULT_OS_TYPE, type OsType } from '../engine/fleet.js';

export const INSTANCE_DEFAULTS = {
  location: 'eastus',
  vmSize: 'Standard_D2s_v3',
  osType: DEFAULT_OS_TYPE,
  resourceGroup: 'forewarn',
  subscriptionId: '00000000-0000-0000-0000-000000000000',
  azEnvironment: 'AzurePublicCloud',
  adminUsername: 'azureuser',
  osDiskSizeGB: '30',
  resourceDiskSizeMB: '16384',
  storageAccountType: 'Premium_LRS',
  /** Spot VMs are deallocated on eviction unless told otherwise, as in Azure. */
  spotEvictionPolicy: 'Deallocate',
  /** The private IP's subnet is the /24 that holds it. */
  subnetPrefix: '24',
} as const;

/** A marketplace image per OS type, as imageReference shows it. */
export const DEFAULT_IMAGES: Readonly<Record<OsType, { publisher: string; offer: string; sku: string; version: string }>> = {
  Linux: { publisher: 'Canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts-gen2', version: '22.04.202401010' },
  Windows: {
    publisher: 'MicrosoftWindowsServer',
    offer: 'WindowsServer',
    sku: '2022-datacenter-azure-edition',
    version: '20348.2227.240104',
  },
};

/** Microsoft's OUI, which Azure NICs carry. */
const AZURE_OUI = '000D3A';

/** A MAC for a VM that declares none: Azure's OUI and three bytes of a hash of its vmId, so it is stable across restarts. */
export function defaultMacAddress(vmId: string): string {
  return AZURE_OUI + createHash('sha256').update(vmId.toLowerCase()).digest('hex').slice(0, 6).toUpperCase();
}

/** A GUID-shaped id that is the same for the same input (placement group ids). */
export function stableGuid(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
