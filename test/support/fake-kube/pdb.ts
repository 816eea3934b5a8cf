// The Eviction API's PodDisruptionBudget check, as the API server makes it: a pod covered by a budget
// may go only while the budget keeps its desired number of healthy pods.
import { selects, type LabelSelector } from './selectors.js';
import { KubeStatusError } from './status.js';
import type { KubeObject } from './store.js';

type Json = Record<string, unknown>;

function spec(o: KubeObject): Json {
  return (o.spec ?? {}) as Json;
}

function status(o: KubeObject): Json {
  return (o.status ?? {}) as Json;
}

export function isReady(pod: KubeObject): boolean {
  const conditions = Array.isArray(status(pod).conditions) ? (status(pod).conditions as Json[]) : [];
  return conditions.some((c) => c.type === 'Ready' && c.status === 'True');
}

/** Counts toward a budget: Running, Ready and not on its way out. */
export function isHealthy(pod: KubeObject): boolean {
  return status(pod).phase === 'Running' && isReady(pod) && pod.metadata.deletionTimestamp === undefined;
}

function scaled(value: unknown, expected: number): number {
  if (typeof value === 'number') return value;
  const m = /^(\d+)%$/.exec(String(value));
  // Percentages round up, for minAvailable and maxUnavailable alike.
  return m ? Math.ceil((Number(m[1]) * expected) / 100) : 0;
}

export interface BudgetState {
  name: string;
  expected: number;
  healthy: number;
  desired: number;
}

/** Where a budget stands: `expected` counts every pod it selects (the fake's stand-in for the controllers' scale). */
export function budgetState(pdb: KubeObject, pods: KubeObject[]): BudgetState {
  const selector = spec(pdb).selector as LabelSelector | undefined;
  const covered = pods.filter((p) => p.metadata.namespace === pdb.metadata.namespace && selects(selector, p.metadata.labels ?? {}));
  const expected = covered.length;
  const healthy = covered.filter(isHealthy).length;
  const { minAvailable, maxUnavailable } = spec(pdb);
  let desired = 0;
  if (minAvailable !== undefined && minAvailable !== null) desired = scaled(minAvailable, expected);
  else if (maxUnavailable !== undefined && maxUnavailable !== null) desired = Math.max(0, expected - scaled(maxUnavailable, expected));
  return { name: pdb.metadata.name, expected, healthy, desired };
}

/** Why evicting `pod` now is refused (429, or 500 for several budgets), or null when it may go. */
export function evictionRefusal(pod: KubeObject, pods: KubeObject[], pdbs: KubeObject[]): KubeStatusError | null {
  const phase = status(pod).phase;
  // Finished and not-yet-running pods disrupt nothing: the server evicts them without asking budgets.
  if (phase === 'Succeeded' || phase === 'Failed' || phase === 'Pending') return null;
  const covering = pdbs.filter(
    (b) =>
      b.metadata.namespace === pod.metadata.namespace && selects(spec(b).selector as LabelSelector | undefined, pod.metadata.labels ?? {}),
  );
  if (covering.length === 0) return null;
  if (covering.length > 1) {
    return new KubeStatusError(
      500,
      'InternalError',
      'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
    );
  }
  const pdb = covering[0]!;
  const state = budgetState(pdb, pods);
  // An unhealthy pod costs the budget nothing: it may go while the budget is met (IfHealthyBudget), or always (AlwaysAllow).
  const allowed = isHealthy(pod)
    ? state.healthy - 1 >= state.desired
    : spec(pdb).unhealthyPodEvictionPolicy === 'AlwaysAllow' || state.healthy >= state.desired;
  if (allowed) return null;
  return new KubeStatusError(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.", {
    causes: [
      {
        reason: 'DisruptionBudget',
        message: `The disruption budget ${state.name} needs ${state.desired} healthy pods and has ${state.healthy} currently`,
      },
    ],
  });
}
