// The store a `budget` section names, its client loaded only then: a VM on etcd never loads Azure's SDK.
// `memory` is the controller's own (memory.ts).
import { PEERS, loadPeer } from '../peers.js';
import type { FleetBudgetConfig } from '../types.js';
import type { FleetStore, StoreOptions } from './store.js';

/** [choice] Every store request gives up after 5 s: the agent retries, and an unreachable store never hangs a wait past its deadline. */
export const STORE_REQUEST_TIMEOUT_MS = 5_000;

export async function createStore(config: FleetBudgetConfig, vm: string, env: NodeJS.ProcessEnv): Promise<FleetStore> {
  const options: StoreOptions = {
    group: config.group,
    slots: config.slots,
    vm,
    leaseSeconds: config.leaseSeconds,
    requestTimeoutMs: STORE_REQUEST_TIMEOUT_MS,
  };
  if (config.backend === 'memory') {
    const { MemoryStore } = await import('./memory.js');
    return new MemoryStore(options);
  }
  if (config.backend === 'etcd') {
    const { EtcdStore } = await loadPeer(PEERS.etcd, () => import('./etcd.js'));
    return new EtcdStore({ ...options, endpoints: config.endpoints });
  }
  const { AzureBlobStore } = await import('./azure-blob.js');
  return new AzureBlobStore({ ...options, containerUrl: config.containerUrl!, clientId: config.clientId, env });
}
