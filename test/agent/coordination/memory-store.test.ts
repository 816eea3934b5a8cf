// The agent's in-process store keeps the contract etcd and Azure Blob keep, so tests that use it
// (the coordinator's, the agent's) rely on nothing the real stores would not do.
import { MemoryServer, MemoryStore } from './memory-store.js';
import { storeContract } from './store-contract.js';

const server = new MemoryServer();

storeContract('memory', () => ({
  make: async (options) => new MemoryStore(server, options),
  unreachable: async (options) => {
    const down = new MemoryServer();
    down.down = true;
    return new MemoryStore(down, options);
  },
  leaseSeconds: 1,
}));
