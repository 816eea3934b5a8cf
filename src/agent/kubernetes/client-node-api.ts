// The agent's KubeApi over @kubernetes/client-node.
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Event,
  type V1Lease,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import {
  KubeError,
  type EvictionOutcome,
  type JsonPatchOp,
  type KubeApi,
  type KubeNode,
  type KubePod,
  type Lease,
  type LeaseWrite,
  type NodeEvent,
} from './api.js';

/** Where the agent finds the API server (SPEC §4): the file KUBECONFIG names, else the pod's service account. */
export function loadKubeConfig(env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const kc = new KubeConfig();
  const file = env.KUBECONFIG;
  try {
    if (file !== undefined && file !== '') kc.loadFromFile(file);
    else kc.loadFromCluster();
  } catch (err) {
    const from = file ? `the kubeconfig ${file} (KUBECONFIG)` : "the pod's service account";
    throw new Error(`cannot load Kubernetes credentials from ${from}: ${(err as Error).message}`, { cause: err });
  }
  if (kc.getCurrentCluster() === null) {
    throw new Error(
      file
        ? `the kubeconfig ${file} (KUBECONFIG) names no current cluster`
        : 'not running in a Kubernetes pod (no service account) and KUBECONFIG is not set',
    );
  }
  return kc;
}

export class ClientNodeApi implements KubeApi {
  readonly #core: CoreV1Api;
  readonly #coordination: CoordinationV1Api;

  constructor(kc: KubeConfig) {
    this.#core = kc.makeApiClient(CoreV1Api);
    this.#coordination = kc.makeApiClient(CoordinationV1Api);
  }

  async getNode(name: string): Promise<KubeNode> {
    return toNode(await call(`read node ${name}`, () => this.#core.readNode({ name })));
  }

  async patchNode(name: string, ops: JsonPatchOp[]): Promise<KubeNode> {
    const options = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
    return toNode(await call(`patch node ${name}`, () => this.#core.patchNode({ name, body: ops }, options)));
  }

  async listPodsOnNode(node: string): Promise<KubePod[]> {
    const list = await call(`list the pods of node ${node}`, () =>
      this.#core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` }),
    );
    return list.items.map(toPod);
  }

  async evict(pod: KubePod, graceSeconds: number): Promise<EvictionOutcome> {
    const body = {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: pod.name, namespace: pod.namespace },
      deleteOptions: { gracePeriodSeconds: graceSeconds },
    };
    try {
      await this.#core.createNamespacedPodEviction({ name: pod.name, namespace: pod.namespace, body });
      return { kind: 'evicted' };
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return { kind: 'gone' };
      if (err instanceof ApiException && err.code === 429) return blocked(String(err.body));
      throw asKubeError(`evict pod ${pod.namespace}/${pod.name}`, err);
    }
  }

  async createEvent({ node, type, reason, message, at }: NodeEvent): Promise<void> {
    const now = new Date(at);
    // As the kubelet does, a node's events live in the default namespace.
    const body: CoreV1Event = {
      metadata: { generateName: `${node.name}.forewarn.`, namespace: 'default' },
      involvedObject: { kind: 'Node', name: node.name, uid: node.uid, apiVersion: 'v1' },
      type,
      reason,
      message,
      source: { component: 'forewarn-agent', host: node.name },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      reportingComponent: 'forewarn-agent',
      reportingInstance: node.name,
    };
    await call(`record event ${reason} on node ${node.name}`, () => this.#core.createNamespacedEvent({ namespace: 'default', body }));
  }

  async getLease(namespace: string, name: string): Promise<Lease | null> {
    try {
      return toLease(await this.#coordination.readNamespacedLease({ name, namespace }));
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return null;
      throw asKubeError(`read lease ${namespace}/${name}`, err);
    }
  }

  async createLease(lease: LeaseWrite): Promise<Lease | null> {
    try {
      return toLease(await this.#coordination.createNamespacedLease({ namespace: lease.namespace, body: leaseBody(lease) }));
    } catch (err) {
      if (err instanceof ApiException && err.code === 409) return null;
      throw asKubeError(`create lease ${lease.namespace}/${lease.name}`, err);
    }
  }

  async replaceLease(lease: LeaseWrite & { resourceVersion: string; transitions: number }): Promise<Lease | null> {
    try {
      const body = leaseBody(lease);
      body.metadata!.resourceVersion = lease.resourceVersion;
      return toLease(await this.#coordination.replaceNamespacedLease({ name: lease.name, namespace: lease.namespace, body }));
    } catch (err) {
      if (err instanceof ApiException && err.code === 409) return null;
      throw asKubeError(`update lease ${lease.namespace}/${lease.name}`, err);
    }
  }
}

async function call<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw asKubeError(what, err);
  }
}

/** One line: what failed, the status, and the server's own message (its Status object), never a stack. */
export function asKubeError(what: string, err: unknown): KubeError {
  if (err instanceof KubeError) return err;
  if (err instanceof ApiException) {
    return new KubeError(err.code, `cannot ${what}: HTTP ${err.code}: ${statusMessage(String(err.body))}`);
  }
  const e = err as Error & { cause?: { code?: string } };
  return new KubeError(0, `cannot ${what}: ${e.message}${e.cause?.code ? ` (${e.cause.code})` : ''}`);
}

function statusMessage(body: string): string {
  try {
    const status = JSON.parse(body) as { message?: unknown };
    if (typeof status.message === 'string') return status.message;
  } catch {
    // Not a Status object: show the body as sent.
  }
  return body.length > 300 ? `${body.slice(0, 300)}…` : body;
}

/** A 429 from the Eviction API: the budget's name is in its cause ("The disruption budget NAME needs …"). */
function blocked(body: string): EvictionOutcome {
  let message = statusMessage(body);
  let budget: string | null = null;
  try {
    const status = JSON.parse(body) as { details?: { causes?: { reason?: string; message?: string }[] } };
    for (const cause of status.details?.causes ?? []) {
      const match = /disruption budget (\S+)/i.exec(cause.message ?? '');
      if (match) {
        budget = match[1]!;
        message = cause.message!;
        break;
      }
    }
  } catch {
    // The message alone then.
  }
  return { kind: 'blocked', budget, message };
}

function toNode(node: V1Node): KubeNode {
  const conditions = node.status?.conditions ?? [];
  return {
    name: node.metadata?.name ?? '',
    uid: node.metadata?.uid ?? '',
    resourceVersion: node.metadata?.resourceVersion ?? '',
    unschedulable: node.spec?.unschedulable === true,
    annotations: { ...(node.metadata?.annotations ?? {}) },
    taints: (node.spec?.taints ?? []).map((t) => ({ key: t.key, effect: t.effect, ...(t.value !== undefined ? { value: t.value } : {}) })),
    providerID: node.spec?.providerID ?? null,
    ready: conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
  };
}

function toPod(pod: V1Pod): KubePod {
  const phase = pod.status?.phase;
  return {
    namespace: pod.metadata?.namespace ?? 'default',
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    ownerKinds: (pod.metadata?.ownerReferences ?? []).map((o) => o.kind),
    mirror: pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined,
    finished: phase === 'Succeeded' || phase === 'Failed',
    terminating: pod.metadata?.deletionTimestamp !== undefined && pod.metadata?.deletionTimestamp !== null,
    // Kubernetes' own default when the pod names none.
    graceSeconds: pod.spec?.terminationGracePeriodSeconds ?? 30,
    localStorage: (pod.spec?.volumes ?? []).some((v) => v.emptyDir !== undefined && v.emptyDir !== null),
  };
}

function toLease(lease: V1Lease): Lease {
  const renew = lease.spec?.renewTime;
  return {
    namespace: lease.metadata?.namespace ?? '',
    name: lease.metadata?.name ?? '',
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    holder: lease.spec?.holderIdentity || null,
    renewedAt: renew === undefined || renew === null ? null : new Date(renew).getTime(),
    durationSeconds: lease.spec?.leaseDurationSeconds ?? null,
    transitions: lease.spec?.leaseTransitions ?? 0,
  };
}

function leaseBody(lease: LeaseWrite): V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: lease.name, namespace: lease.namespace },
    spec: {
      // An empty holder is a free slot; null would be dropped from the body and keep the old one on update.
      holderIdentity: lease.holder ?? '',
      leaseDurationSeconds: lease.durationSeconds,
      renewTime: new Date(lease.renewedAt),
      ...(lease.acquiredAt !== undefined ? { acquireTime: new Date(lease.acquiredAt) } : {}),
      ...(lease.transitions !== undefined ? { leaseTransitions: lease.transitions } : {}),
    },
  };
}
