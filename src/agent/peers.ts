// The clients of outside systems (Kubernetes, etcd, Azure Storage and Identity) are optional peer
// dependencies: `npm install -D forewarn` for tests stays lean, and only a config that uses one needs
// it. This module knows which config needs which package, finds those missing before the agent
// starts, and turns a failed import into an error that names the package to install.
import { createRequire } from 'node:module';
import type { AgentConfig } from './types.js';

/** The range forewarn is tested with: package.json's peerDependencies, the one owner of the versions. */
function rangeOf(name: string): string {
  const manifest = createRequire(import.meta.url)('../../package.json') as { peerDependencies?: Record<string, string> };
  return manifest.peerDependencies?.[name] ?? 'latest';
}

export interface NeededPeer {
  name: string;
  /** What in the config needs it, as the user wrote it. */
  neededBy: string;
}

/** Each optional package and what loads it: the one table of them. */
export const PEERS = {
  kubernetes: { name: '@kubernetes/client-node', neededBy: 'a kubernetes action' },
  etcd: { name: 'etcd3', neededBy: 'budget.backend: etcd' },
  blob: { name: '@azure/storage-blob', neededBy: 'budget.backend: azure-blob' },
  identity: { name: '@azure/identity', neededBy: 'budget.backend: azure-blob with a managed identity' },
  armIdentity: { name: '@azure/identity', neededBy: 'the controller’s arm.credential (managedIdentity or servicePrincipal)' },
} as const satisfies Record<string, NeededPeer>;

export function usesKubernetes(config: AgentConfig): boolean {
  return config.rules.some((r) => [...r.actions, ...r.onComplete, ...r.onCancel].some((a) => a.type === 'kubernetes'));
}

/** The optional packages this config loads; the Blob store needs the identity only without a connection string. */
export function neededPeers(config: AgentConfig, env: NodeJS.ProcessEnv): NeededPeer[] {
  const needed: NeededPeer[] = [];
  if (usesKubernetes(config)) needed.push(PEERS.kubernetes);
  if (config.budget?.backend === 'etcd') needed.push(PEERS.etcd);
  if (config.budget?.backend === 'azure-blob') {
    needed.push(PEERS.blob);
    if (!env.AZURE_STORAGE_CONNECTION_STRING) needed.push(PEERS.identity);
  }
  return needed;
}

/** The command that installs `names` beside forewarn, at the versions it is tested with. */
export function installCommand(names: readonly string[]): string {
  return `npm install ${names.map((n) => `${n}@${rangeOf(n)}`).join(' ')}`;
}

export function missingText(peer: NeededPeer): string {
  return `${peer.neededBy} needs the package ${peer.name}, which is not installed: ${installCommand([peer.name])} (beside forewarn; add -g for a global forewarn)`;
}

export class MissingPeerError extends Error {
  constructor(readonly peer: NeededPeer) {
    super(missingText(peer));
    this.name = 'MissingPeerError';
  }
}

/** Those of the needed packages that cannot be found from here. */
export function missingPeers(config: AgentConfig, env: NodeJS.ProcessEnv): NeededPeer[] {
  return neededPeers(config, env).filter((peer) => !resolvable(peer.name));
}

/** Whether the package `name` can be found from here. */
export function resolvable(name: string): boolean {
  try {
    import.meta.resolve(name);
    return true;
  } catch (err) {
    return !isMissing(err, name);
  }
}

/** Node's error for an import of `name` that is not installed (not a module inside it that failed). */
function isMissing(err: unknown, name: string): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return (
    (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') &&
    typeof e.message === 'string' &&
    (e.message.includes(`'${name}'`) || e.message.includes(`"${name}"`))
  );
}

/** Runs `load` (a dynamic import of a module that imports `peer.name`); a missing package becomes a MissingPeerError. */
export async function loadPeer<T>(peer: NeededPeer, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    throw isMissing(err, peer.name) ? new MissingPeerError(peer) : err;
  }
}
