// Draining a node through the Eviction API, so PodDisruptionBudgets are respected: evict each pod
// that can move, back off while a budget says no, and call the node drained only once every
// evicted pod has terminated (an accepted eviction is not yet a stopped pod).
import type { EvictionOutcome, KubeApi, KubePod } from './api.js';

/** Between looks at the node's pods while evicted pods terminate. */
export const DRAIN_POLL_MS = 500;
/** A pod a budget blocks is tried again after 1 s, doubling up to this. */
export const BLOCKED_BACKOFF_MAX_MS = 10_000;
const BLOCKED_BACKOFF_FIRST_MS = 1_000;

/**
 * Pod labels that opt a pod in to eviction before a Freeze, whatever the value (AKS documents an empty
 * one). Forewarn's own, and AKS node auto-drain's, so a workload labelled for AKS gets the same from
 * Forewarn: `remediator.kubernetes.azure.com/onFreeze` (learn.microsoft.com/azure/aks/node-auto-drain-evict-on-freeze;
 * an earlier version of that page spelled it `OnFreeze`, so the key is matched ignoring case).
 */
export const FREEZE_OPT_IN_LABELS: readonly string[] = ['forewarn.io/evict-on-freeze', 'remediator.kubernetes.azure.com/onFreeze'];

/** The pod carries one of FREEZE_OPT_IN_LABELS. */
export function optedInForFreeze(pod: KubePod): boolean {
  const wanted = FREEZE_OPT_IN_LABELS.map((l) => l.toLowerCase());
  return Object.keys(pod.labels ?? {}).some((key) => wanted.includes(key.toLowerCase()));
}

/** Which pods a drain evicts: every pod that can move, or (before a Freeze) only those that opted in. */
export type DrainSelection = 'all' | 'freeze-opt-in';

export interface DrainOptions {
  node: string;
  /** Default `all`. */
  select?: DrainSelection;
  /** Epoch ms: pods still there then make the drain fail. */
  deadline: number;
  localStorage: 'evict' | 'skip';
  now: () => number;
  /** Must reject when the signal aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  signal: AbortSignal;
  /** Each eviction request's outcome ('error' when it failed otherwise), for logs and metrics. */
  onEviction?: (pod: KubePod, outcome: EvictionOutcome['kind'] | 'error', detail: string | null) => void;
}

export interface BlockedPod {
  pod: string;
  /** The PodDisruptionBudget that refused, when the API named it. */
  budget: string | null;
  message: string;
}

export interface DrainReport {
  drained: boolean;
  /** `namespace/name` of every pod evicted. */
  evicted: string[];
  /** Pods left on the node on purpose, and why. */
  skipped: { pod: string; why: string }[];
  /** Pods still there at the deadline, and what held each. */
  remaining: BlockedPod[];
  /** Why the drain stopped short: null when drained. */
  failure: 'deadline' | 'aborted' | null;
}

const podName = (p: KubePod) => `${p.namespace}/${p.name}`;

/**
 * Why a pod stays: DaemonSet pods come back at once, a mirror pod belongs to the kubelet, a finished pod
 * runs no more; before a Freeze (`freeze-opt-in`), a pod that did not opt in rides it out.
 */
export function skipReason(pod: KubePod, localStorage: 'evict' | 'skip', select: DrainSelection = 'all'): string | null {
  if (pod.ownerKinds.includes('DaemonSet')) return 'managed by a DaemonSet';
  if (pod.mirror) return 'a static (mirror) pod';
  if (pod.finished) return 'already finished';
  if (select === 'freeze-opt-in' && !optedInForFreeze(pod)) return 'not labelled for eviction on a Freeze';
  if (pod.localStorage && localStorage === 'skip') return 'has local storage (emptyDir) and kubernetes.localStorage is skip';
  return null;
}

export async function drainNode(api: KubeApi, options: DrainOptions): Promise<DrainReport> {
  const { node, deadline, now, sleep, signal } = options;
  const evicted = new Map<string, string>();
  const blocked = new Map<string, BlockedPod>();
  const retryAt = new Map<string, { at: number; backoffMs: number }>();
  const errors = new Map<string, string>();
  let skipped: DrainReport['skipped'] = [];
  let pending: KubePod[] = [];
  const report = (failure: DrainReport['failure']): DrainReport => ({
    drained: failure === null,
    evicted: [...evicted.values()],
    skipped,
    remaining: pending.map((p) => {
      const held = blocked.get(p.uid);
      if (held) return held;
      const error = errors.get(p.uid);
      const message = error ?? (evicted.has(p.uid) || p.terminating ? 'still terminating' : 'not evicted yet');
      return { pod: podName(p), budget: null, message };
    }),
    failure,
  });

  for (;;) {
    if (signal.aborted) return report('aborted');
    let pods: KubePod[] | null = null;
    try {
      pods = await api.listPodsOnNode(node);
    } catch {
      // Listing again next round; the deadline bounds it.
    }
    if (pods !== null) {
      skipped = [];
      pending = [];
      for (const pod of pods) {
        const why = skipReason(pod, options.localStorage, options.select);
        if (why === null) pending.push(pod);
        else skipped.push({ pod: podName(pod), why });
      }
      if (pending.length === 0) return report(null);
    }
    const t = now();
    if (t >= deadline) return report('deadline');
    for (const pod of pods === null ? [] : pending) {
      if (signal.aborted) return report('aborted');
      if (pod.terminating || evicted.has(pod.uid)) continue;
      const retry = retryAt.get(pod.uid);
      if (retry !== undefined && retry.at > now()) continue;
      // Each pod's own grace, cut to the time left: its containers get SIGTERM, then the rest of it.
      const left = Math.floor((deadline - now()) / 1000);
      const grace = Math.max(0, Math.min(pod.graceSeconds, left));
      let outcome: EvictionOutcome;
      try {
        outcome = await api.evict(pod, grace);
      } catch (err) {
        const message = (err as Error).message;
        errors.set(pod.uid, message);
        options.onEviction?.(pod, 'error', message);
        backOff(retryAt, pod.uid, now());
        continue;
      }
      errors.delete(pod.uid);
      options.onEviction?.(pod, outcome.kind, outcome.kind === 'blocked' ? outcome.message : null);
      if (outcome.kind === 'blocked') {
        blocked.set(pod.uid, { pod: podName(pod), budget: outcome.budget, message: outcome.message });
        backOff(retryAt, pod.uid, now());
      } else {
        blocked.delete(pod.uid);
        retryAt.delete(pod.uid);
        // A 404 means it went meanwhile: nothing to wait for, but it is off the node all the same.
        if (outcome.kind === 'evicted') evicted.set(pod.uid, podName(pod));
      }
    }
    try {
      await sleep(Math.max(0, Math.min(DRAIN_POLL_MS, deadline - now())), signal);
    } catch {
      return report('aborted');
    }
  }
}

function backOff(retryAt: Map<string, { at: number; backoffMs: number }>, uid: string, now: number): void {
  const previous = retryAt.get(uid)?.backoffMs;
  const backoffMs = previous === undefined ? BLOCKED_BACKOFF_FIRST_MS : Math.min(BLOCKED_BACKOFF_MAX_MS, previous * 2);
  // ±20 %, so agents blocked by one budget do not all ask again at the same moment.
  const jitter = backoffMs * 0.2 * (2 * Math.random() - 1);
  retryAt.set(uid, { at: now + backoffMs + jitter, backoffMs });
}

/** One line per remaining pod, for the log, the node's Warning event and the action's error. */
export function describeRemaining(report: DrainReport): string {
  return report.remaining
    .map((r) => (r.budget !== null ? `${r.pod} (PodDisruptionBudget ${r.budget}: ${r.message})` : `${r.pod} (${r.message})`))
    .join('; ');
}
