// The few Kubernetes calls the agent makes, and the shapes it reads back: a port of our own, so the
// drain, cordon and budget logic never sees the client's types (client-node-api.ts implements it,
// loaded only by an agent with a kubernetes action: the client takes ~0.3 s to import).

export interface Taint {
  key: string;
  value?: string;
  effect: string;
  /** RFC 3339, kept as read: a NoExecute toleration's tolerationSeconds count from it, so a rewrite must not drop it. */
  timeAdded?: string;
}

export interface KubeNode {
  name: string;
  uid: string;
  resourceVersion: string;
  unschedulable: boolean;
  annotations: Record<string, string>;
  taints: Taint[];
  providerID: string | null;
  /** The node's Ready condition is True. */
  ready: boolean;
  /**
   * The field managers that own spec.unschedulable in metadata.managedFields (who last set it, or
   * applied it); null or absent when the API sent no managedFields, so it cannot tell.
   */
  unschedulableManagers?: string[] | null;
  /** AKS node auto-drain's VMEventScheduled condition while True: its message (it names the event type); else null or absent. */
  aksEvent?: string | null;
}

/** A node as a list shows it: its labels too (the agent's nodes are selected by label). */
export interface ListedNode extends KubeNode {
  labels: Record<string, string>;
}

export interface KubePod {
  namespace: string;
  name: string;
  uid: string;
  /** Kinds of its controllers (ReplicaSet, DaemonSet, …). */
  ownerKinds: string[];
  /** A static pod's API mirror: the kubelet owns it; eviction cannot move it. */
  mirror: boolean;
  /** Succeeded or Failed: it runs no more. */
  finished: boolean;
  terminating: boolean;
  graceSeconds: number;
  /** Has an emptyDir volume, whose data goes with the pod. */
  localStorage: boolean;
  /** metadata.labels (the opt-in to eviction on a Freeze is one); absent: none. */
  labels?: Record<string, string>;
}

export interface Lease {
  namespace: string;
  name: string;
  resourceVersion: string;
  holder: string | null;
  /** Epoch ms; null when never renewed. */
  renewedAt: number | null;
  /** Epoch ms the holder took it; null when unknown. Kept across renewals, as client-go's leader election keeps it. */
  acquiredAt: number | null;
  durationSeconds: number | null;
  transitions: number;
}

export type EvictionOutcome =
  | { kind: 'evicted' }
  | { kind: 'gone' }
  /** A PodDisruptionBudget allows no disruption now (429): `budget` names it when the answer does. */
  | { kind: 'blocked'; budget: string | null; message: string };

/** An answer the agent did not expect: its status (0 for no answer) and what the server said. */
export class KubeError extends Error {
  override name = 'KubeError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** What an event names of its node. */
export interface NodeRef {
  name: string;
  uid: string;
}

export interface NodeEvent {
  node: NodeRef;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** Epoch ms, from the agent's clock. */
  at: number;
}

/** What the agent asks of the API server; tests and the real client both implement it. */
export interface KubeApi {
  getNode(name: string): Promise<KubeNode>;
  /** An RFC 6902 JSON patch; a failed `test` op (the node changed meanwhile) throws KubeError 409 or 422. */
  patchNode(name: string, ops: JsonPatchOp[]): Promise<KubeNode>;
  /** Nodes with these labels (a label selector, e.g. `forewarn.io/agent=true`). */
  listNodes(labelSelector: string): Promise<ListedNode[]>;
  listPodsOnNode(node: string): Promise<KubePod[]>;
  evict(pod: KubePod, graceSeconds: number): Promise<EvictionOutcome>;
  createEvent(event: NodeEvent): Promise<void>;
  /** null when there is none. */
  getLease(namespace: string, name: string): Promise<Lease | null>;
  /** null when another holder created it first (409). */
  createLease(lease: LeaseWrite): Promise<Lease | null>;
  /** null when it changed since `resourceVersion` was read (409). */
  replaceLease(lease: LeaseWrite & { resourceVersion: string; transitions: number }): Promise<Lease | null>;
}

export interface LeaseWrite {
  namespace: string;
  name: string;
  holder: string | null;
  renewedAt: number;
  durationSeconds: number;
  acquiredAt?: number;
  transitions?: number;
}

export type JsonPatchOp =
  { op: 'test'; path: string; value: unknown } | { op: 'add' | 'replace'; path: string; value: unknown } | { op: 'remove'; path: string };
