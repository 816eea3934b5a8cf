// Objects a test sets up in one line (addNode, addPod, addPdb), built as a real cluster would hold them,
// and the typed views the test API hands back.
import { MIRROR_ANNOTATION } from './workloads.js';
import { timestamp, type KubeObject } from './store.js';

export interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  timeAdded?: string;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface NodeView extends KubeObject {
  spec: { providerID?: string; unschedulable?: boolean; taints?: Taint[]; [key: string]: unknown };
  status: { conditions?: Condition[]; [key: string]: unknown };
}

export interface PodView extends KubeObject {
  spec: {
    nodeName?: string;
    terminationGracePeriodSeconds?: number;
    volumes?: { name: string; emptyDir?: Record<string, unknown>; [key: string]: unknown }[];
    [key: string]: unknown;
  };
  status: { phase?: string; conditions?: Condition[]; [key: string]: unknown };
}

export interface LeaseView extends KubeObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
    [key: string]: unknown;
  };
}

export interface NodeSpec {
  name: string;
  providerID?: string;
  unschedulable?: boolean;
  /** The Ready condition (default true). */
  ready?: boolean;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  taints?: Taint[];
}

export interface PodSpec {
  name: string;
  namespace: string;
  /** Omitted: a Pending pod no node took. */
  nodeName?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Its controller: a ReplicaSet's pod is recreated elsewhere, a DaemonSet's on its node. */
  owner?: { kind: string; name: string };
  /** spec.terminationGracePeriodSeconds (default 30). */
  graceSeconds?: number;
  /** Has an emptyDir volume (local storage). */
  emptyDir?: boolean;
  /** A static pod's mirror (annotation kubernetes.io/config.mirror, owned by the node). */
  mirror?: boolean;
  /** The Ready condition (default true). */
  ready?: boolean;
  /** status.phase (default Running, or Pending without a node). */
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  tolerations?: { key?: string; operator?: 'Exists' | 'Equal'; value?: string; effect?: string }[];
  /** Time from deletion to gone for this pod (still at most its grace period). */
  terminationDelayMs?: number;
  /** Recreated after removal, whatever its owner. */
  recreate?: boolean;
}

export interface PdbSpec {
  name: string;
  namespace: string;
  matchLabels: Record<string, string>;
  minAvailable?: number | string;
  maxUnavailable?: number | string;
  unhealthyPodEvictionPolicy?: 'IfHealthyBudget' | 'AlwaysAllow';
}

/** The store fills uid, resourceVersion and creationTimestamp. */
function meta(name: string, namespace?: string): KubeObject['metadata'] {
  return { name, ...(namespace !== undefined ? { namespace } : {}), uid: '', resourceVersion: '', creationTimestamp: '' };
}

export function buildNode(spec: NodeSpec): KubeObject {
  const now = timestamp();
  const ready = spec.ready ?? true;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      ...meta(spec.name),
      labels: { 'kubernetes.io/hostname': spec.name, 'kubernetes.io/os': 'linux', ...spec.labels },
      annotations: { ...spec.annotations },
    },
    spec: {
      ...(spec.providerID !== undefined ? { providerID: spec.providerID } : {}),
      ...(spec.unschedulable ? { unschedulable: true } : {}),
      ...(spec.taints && spec.taints.length > 0 ? { taints: structuredClone(spec.taints) } : {}),
    },
    status: {
      conditions: [
        {
          type: 'Ready',
          status: ready ? 'True' : 'False',
          reason: ready ? 'KubeletReady' : 'KubeletNotReady',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
      addresses: [{ type: 'Hostname', address: spec.name }],
    },
  };
}

const OWNER_API: Record<string, string> = {
  ReplicaSet: 'apps/v1',
  DaemonSet: 'apps/v1',
  StatefulSet: 'apps/v1',
  Deployment: 'apps/v1',
  Job: 'batch/v1',
  Node: 'v1',
};

export function buildPod(spec: PodSpec, owner: { uid: string } | null, nodeUid: string | null): KubeObject {
  const phase = spec.phase ?? (spec.nodeName === undefined ? 'Pending' : 'Running');
  const ready = (spec.ready ?? true) && phase === 'Running';
  const now = timestamp();
  const ownerReferences = spec.mirror
    ? [{ apiVersion: 'v1', kind: 'Node', name: spec.nodeName ?? '', uid: nodeUid ?? '', controller: true }]
    : spec.owner
      ? [
          {
            apiVersion: OWNER_API[spec.owner.kind] ?? 'apps/v1',
            kind: spec.owner.kind,
            name: spec.owner.name,
            uid: owner?.uid ?? '',
            controller: true,
            blockOwnerDeletion: true,
          },
        ]
      : undefined;
  const annotations = { ...spec.annotations, ...(spec.mirror ? { [MIRROR_ANNOTATION]: `${spec.name}-static` } : {}) };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...meta(spec.name, spec.namespace),
      labels: { ...spec.labels },
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      ...(ownerReferences ? { ownerReferences } : {}),
    },
    spec: {
      ...(spec.nodeName !== undefined ? { nodeName: spec.nodeName } : {}),
      containers: [{ name: 'app', image: 'registry.example/app:1' }],
      terminationGracePeriodSeconds: spec.graceSeconds ?? 30,
      ...(spec.emptyDir ? { volumes: [{ name: 'scratch', emptyDir: {} }] } : {}),
      ...(spec.tolerations ? { tolerations: structuredClone(spec.tolerations) } : {}),
    },
    status: {
      phase,
      conditions: [
        { type: 'PodScheduled', status: spec.nodeName === undefined ? 'False' : 'True', lastTransitionTime: now },
        { type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: now },
      ],
      ...(phase === 'Running' ? { startTime: now } : {}),
    },
  };
}

export function buildPdb(spec: PdbSpec): KubeObject {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: meta(spec.name, spec.namespace),
    spec: {
      selector: { matchLabels: { ...spec.matchLabels } },
      ...(spec.minAvailable !== undefined ? { minAvailable: spec.minAvailable } : {}),
      ...(spec.maxUnavailable !== undefined ? { maxUnavailable: spec.maxUnavailable } : {}),
      ...(spec.unhealthyPodEvictionPolicy !== undefined ? { unhealthyPodEvictionPolicy: spec.unhealthyPodEvictionPolicy } : {}),
    },
  };
}

export function buildNamespace(name: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: meta(name), spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } };
}
