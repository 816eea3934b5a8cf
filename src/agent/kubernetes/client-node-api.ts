// The agent's KubeApi over @kubernetes/client-node.
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
  type CoreV1Event,
  type V1Lease,
  type V1Node,
  type V1Pod,
  type V1Taint,
} from '@kubernetes/client-node';
import {
  KubeError,
  type EvictionOutcome,
  type JsonPatchOp,
  type KubeApi,
  type KubeNode,
  type KubePod,
  type Lease,
  type ListedNode,
  type LeaseWrite,
  type NodeEvent,
  type Taint,
} from './api.js';
import { AKS_CONDITION, FIELD_MANAGER } from './node.js';

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
    // Under the agent's own field manager, so managedFields tell its writes from anyone else's (node.ts).
    return toNode(await call(`patch node ${name}`, () => this.#core.patchNode({ name, body: ops, fieldManager: FIELD_MANAGER }, options)));
  }

  async listNodes(labelSelector: string): Promise<ListedNode[]> {
    const list = await call(`list the nodes labelled ${labelSelector}`, () => this.#core.listNode({ labelSelector }));
    return list.items.map((node) => ({ ...toNode(node), labels: { ...(node.metadata?.labels ?? {}) } }));
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
  const scheduled = conditions.find((c) => c.type === AKS_CONDITION && c.status === 'True');
  return {
    name: node.metadata?.name ?? '',
    uid: node.metadata?.uid ?? '',
    resourceVersion: node.metadata?.resourceVersion ?? '',
    unschedulable: node.spec?.unschedulable === true,
    annotations: { ...(node.metadata?.annotations ?? {}) },
    taints: (node.spec?.taints ?? []).map(toTaint),
    providerID: node.spec?.providerID ?? null,
    ready: conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    unschedulableManagers: unschedulableManagers(node),
    aksEvent: scheduled === undefined ? null : (scheduled.message ?? ''),
  };
}

/** Managers whose managedFields entry (of the object, not a subresource) holds `f:spec` → `f:unschedulable`; null without managedFields. */
function unschedulableManagers(node: V1Node): string[] | null {
  const entries = node.metadata?.managedFields ?? [];
  if (entries.length === 0) return null;
  const owns = (fields: unknown): boolean => {
    const spec = isObject(fields) ? fields['f:spec'] : undefined;
    return isObject(spec) && 'f:unschedulable' in spec;
  };
  return entries.filter((e) => (e.subresource ?? '') === '' && owns(e.fieldsV1)).map((e) => e.manager ?? '');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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
    labels: { ...(pod.metadata?.labels ?? {}) },
  };
}

/** A taint as read, its timeAdded kept (as Go's RFC 3339, whole seconds) so that writing the list back changes nothing of it. */
function toTaint(t: V1Taint): Taint {
  const added = t.timeAdded === undefined || t.timeAdded === null ? undefined : new Date(t.timeAdded);
  return {
    key: t.key,
    effect: t.effect,
    ...(t.value !== undefined ? { value: t.value } : {}),
    ...(added !== undefined && !Number.isNaN(added.getTime()) ? { timeAdded: added.toISOString().replace(/\.\d{3}Z$/, 'Z') } : {}),
  };
}

function toLease(lease: V1Lease): Lease {
  return {
    namespace: lease.metadata?.namespace ?? '',
    name: lease.metadata?.name ?? '',
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    holder: lease.spec?.holderIdentity || null,
    renewedAt: microTimeMs(lease.spec?.renewTime),
    acquiredAt: microTimeMs(lease.spec?.acquireTime),
    durationSeconds: lease.spec?.leaseDurationSeconds ?? null,
    transitions: lease.spec?.leaseTransitions ?? 0,
  };
}

/**
 * A MicroTime read back, in epoch ms, whatever its precision: client-node hands the server's string
 * over as it came ("2026-11-27T03:25:11.084000Z", typed as a Date); a Date is taken as it is.
 */
function microTimeMs(value: Date | string | null | undefined): number | null {
  if (value === undefined || value === null) return null;
  const ms = value instanceof Date ? value.getTime() : Date.parse(String(value));
  return Number.isNaN(ms) ? null : ms;
}

function leaseBody(lease: LeaseWrite): V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: lease.name, namespace: lease.namespace },
    spec: {
      // An empty holder is a free slot; null would be dropped from the body and keep the old one on update.
      holderIdentity: lease.holder ?? '',
      // An int32 on the server, which refuses a fraction: rounded up, so the slot lasts at least as long.
      leaseDurationSeconds: Math.ceil(lease.durationSeconds),
      // MicroTimes: the server parses them as RFC3339Micro and refuses anything but six fractional
      // digits (SPEC §4); a Date would serialise with three, a V1MicroTime writes six.
      renewTime: new V1MicroTime(lease.renewedAt),
      ...(lease.acquiredAt !== undefined ? { acquireTime: new V1MicroTime(lease.acquiredAt) } : {}),
      ...(lease.transitions !== undefined ? { leaseTransitions: lease.transitions } : {}),
    },
  };
}
