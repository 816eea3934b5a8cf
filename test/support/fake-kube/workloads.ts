// What the kubelet, the scheduler and the workload controllers do, compressed in time: a deleted pod
// terminates (its deletionTimestamp set) and is gone after a short delay; a ReplicaSet's pod comes back
// under a new name on the least-loaded node that takes it, Ready a little later; a DaemonSet's or a
// static (mirror) pod comes back on its own node. A pod no node takes stays Pending until one does.
import { randomInt } from 'node:crypto';
import { resourceByName } from './paths.js';
import { type KubeObject, type Store, timestamp } from './store.js';

const PODS = resourceByName('', 'pods')!;
const NODES = resourceByName('', 'nodes')!;

export const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

type Json = Record<string, unknown>;

interface Taint {
  key: string;
  value?: string;
  effect: string;
}

interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}

/** How the fake treats one pod, beyond its Kubernetes fields. */
export interface PodBehaviour {
  /** Time from deletion to gone, in place of the server's option (still at most the grace period). */
  terminationDelayMs?: number;
  /** Comes back after removal, as a ReplicaSet's pod does. */
  recreate?: boolean;
}

export interface WorkloadOptions {
  terminationDelayMs: number;
  readyDelayMs: number;
}

function spec(o: KubeObject): Json {
  return (o.spec ??= {}) as Json;
}

function status(o: KubeObject): Json {
  return (o.status ??= {}) as Json;
}

function conditions(pod: KubeObject): Json[] {
  const s = status(pod);
  if (!Array.isArray(s.conditions)) s.conditions = [];
  return s.conditions as Json[];
}

/** Sets a pod or node condition, with its transition time when the status changes. */
export function setCondition(object: KubeObject, type: string, value: boolean, reason?: string): void {
  const list = conditions(object);
  const wanted = value ? 'True' : 'False';
  const found = list.find((c) => c.type === type);
  if (found && found.status === wanted) return;
  const condition: Json = { type, status: wanted, lastTransitionTime: timestamp(), ...(reason ? { reason } : {}) };
  if (found) Object.assign(found, condition);
  else list.push(condition);
}

function nodeReady(node: KubeObject): boolean {
  return conditions(node).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** The node's taints plus those the node controller adds for cordoned and NotReady nodes. */
function effectiveTaints(node: KubeObject): Taint[] {
  const taints = Array.isArray(spec(node).taints) ? [...(spec(node).taints as Taint[])] : [];
  if (spec(node).unschedulable === true) taints.push({ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' });
  if (!nodeReady(node)) taints.push({ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' });
  return taints;
}

function tolerates(tolerations: Toleration[], taint: Taint): boolean {
  return tolerations.some((t) => {
    if (t.effect !== undefined && t.effect !== '' && t.effect !== taint.effect) return false;
    if (t.operator === 'Exists') return t.key === undefined || t.key === '' || t.key === taint.key;
    return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
  });
}

export function ownerKind(pod: KubeObject): string | undefined {
  const refs = pod.metadata.ownerReferences ?? [];
  return (refs.find((r) => r.controller) ?? refs[0])?.kind;
}

const SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** `web-7d4f9-x2k8q` → `web-7d4f9-` plus five new characters, as controllers name pods. */
function replacementName(name: string): string {
  const prefix = /-[a-z0-9]{5}$/.test(name) ? name.slice(0, -6) : name;
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += SUFFIX_ALPHABET[randomInt(SUFFIX_ALPHABET.length)];
  return `${prefix}-${suffix}`;
}

export class Workloads {
  readonly behaviour = new Map<string, PodBehaviour>(); // by pod uid
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly store: Store,
    private readonly options: WorkloadOptions,
  ) {}

  stop(): void {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
  }

  #later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms);
    timer.unref();
    this.#timers.add(timer);
  }

  /** The pod now stored under the same name, if it is still this one. */
  #current(pod: KubeObject): KubeObject | undefined {
    const now = this.store.get(PODS, pod.metadata.namespace ?? null, pod.metadata.name);
    return now?.metadata.uid === pod.metadata.uid ? now : undefined;
  }

  /** Starts a graceful deletion; a pod already terminating keeps its clock. */
  terminate(pod: KubeObject, graceSeconds: number): void {
    if (pod.metadata.deletionTimestamp !== undefined) return;
    const grace = Math.max(0, Math.floor(graceSeconds));
    pod.metadata.deletionTimestamp = timestamp(new Date(Date.now() + grace * 1000));
    pod.metadata.deletionGracePeriodSeconds = grace;
    this.store.touch(pod);
    const delay = this.behaviour.get(pod.metadata.uid)?.terminationDelayMs ?? this.options.terminationDelayMs;
    const ms = Math.min(grace * 1000, delay);
    if (ms <= 0) this.remove(pod);
    else
      this.#later(ms, () => {
        if (this.#current(pod)) this.remove(pod);
      });
  }

  /** The pod is gone; its controller (if any) makes another. */
  remove(pod: KubeObject): void {
    this.store.delete(PODS, pod.metadata.namespace ?? null, pod.metadata.name);
    const behaviour = this.behaviour.get(pod.metadata.uid) ?? {};
    this.behaviour.delete(pod.metadata.uid);
    const kind = ownerKind(pod);
    const mirror = pod.metadata.annotations?.[MIRROR_ANNOTATION] !== undefined;
    const nodeName = typeof spec(pod).nodeName === 'string' ? (spec(pod).nodeName as string) : null;
    if (mirror || kind === 'DaemonSet') {
      // Bound to its node: back there while the node exists. A static pod keeps its name.
      if (nodeName !== null && this.store.get(NODES, null, nodeName)) {
        this.#recreate(pod, mirror ? pod.metadata.name : replacementName(pod.metadata.name), nodeName, behaviour);
      }
    } else if (kind === 'ReplicaSet' || behaviour.recreate) {
      this.#recreate(pod, replacementName(pod.metadata.name), null, behaviour);
    }
    this.schedulePending();
  }

  #recreate(old: KubeObject, name: string, nodeName: string | null, behaviour: PodBehaviour): void {
    const { labels, annotations, ownerReferences, namespace } = old.metadata;
    const podSpec = structuredClone(spec(old));
    delete podSpec.nodeName;
    const pod: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace,
        uid: '',
        resourceVersion: '',
        creationTimestamp: '',
        ...(labels ? { labels: { ...labels } } : {}),
        ...(annotations ? { annotations: { ...annotations } } : {}),
        ...(ownerReferences ? { ownerReferences: structuredClone(ownerReferences) } : {}),
      },
      spec: podSpec,
      status: { phase: 'Pending', conditions: [] },
    };
    this.store.create(PODS, pod);
    this.behaviour.set(pod.metadata.uid, behaviour);
    if (nodeName !== null) this.#bind(pod, nodeName);
    else setCondition(pod, 'PodScheduled', false, 'Unschedulable');
  }

  /** Puts a pod on a node; it turns Running and Ready after the ready delay. */
  #bind(pod: KubeObject, nodeName: string): void {
    spec(pod).nodeName = nodeName;
    setCondition(pod, 'PodScheduled', true);
    setCondition(pod, 'Ready', false, 'ContainersNotReady');
    this.store.touch(pod);
    this.#later(this.options.readyDelayMs, () => {
      const now = this.#current(pod);
      if (!now || now.metadata.deletionTimestamp !== undefined) return;
      status(now).phase = 'Running';
      status(now).startTime ??= timestamp();
      setCondition(now, 'Ready', true);
      this.store.touch(now);
    });
  }

  /** The schedulable node with the fewest live pods that takes `pod`, or null. */
  nodeFor(pod: KubeObject): string | null {
    const tolerations = Array.isArray(spec(pod).tolerations) ? (spec(pod).tolerations as Toleration[]) : [];
    const live = this.store.list(PODS).filter((p) => p.metadata.deletionTimestamp === undefined);
    const candidates = this.store
      .list(NODES)
      .filter((n) => effectiveTaints(n).every((t) => !['NoSchedule', 'NoExecute'].includes(t.effect) || tolerates(tolerations, t)))
      .map((n) => ({ name: n.metadata.name, load: live.filter((p) => spec(p).nodeName === n.metadata.name).length }));
    candidates.sort((a, b) => a.load - b.load || a.name.localeCompare(b.name));
    return candidates[0]?.name ?? null;
  }

  /** Places Pending pods that have no node, now that one may take them. */
  schedulePending(): void {
    for (const pod of this.store.list(PODS)) {
      if (spec(pod).nodeName !== undefined || pod.metadata.deletionTimestamp !== undefined) continue;
      const nodeName = this.nodeFor(pod);
      if (nodeName !== null) this.#bind(pod, nodeName);
    }
  }

  /** A pod just created through the API: bound to its node if it names one, else scheduled. */
  place(pod: KubeObject): void {
    const nodeName = spec(pod).nodeName;
    if (typeof nodeName === 'string') this.#bind(pod, nodeName);
    else this.schedulePending();
  }
}
