// A KubernetesRuntime for one node, with the journal record an action would keep, for tests that
// drive prepare and recover directly against the fake API server.
import { setTimeout as sleep } from 'node:timers/promises';
import { normalizeKubernetes } from '../../../src/agent/config.js';
import type { KubeApi } from '../../../src/agent/kubernetes/api.js';
import { KubernetesRuntime, type KubernetesStep } from '../../../src/agent/kubernetes/runtime.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import type { KubernetesAction, KubernetesConfig, KubernetesRecord } from '../../../src/agent/types.js';
import type { ScheduledEvent } from '../../../src/client/index.js';

export const DRAIN_ACTION: KubernetesAction = { type: 'kubernetes', name: 'drain', drain: true, timeoutSeconds: 60 };
export const quiet = { info() {}, warn() {}, error() {} };

export interface RigOptions {
  api: KubeApi;
  node: string;
  budgetName: string;
  minPrepareSeconds?: number;
  readyTimeoutSeconds?: number;
  now?: () => number;
  /** Settings over the rig's (a taint, no budget). */
  overrides?: Partial<KubernetesConfig>;
}

export function runtimeRig(o: RigOptions) {
  const metrics = new AgentMetrics({ defaultMetrics: false });
  const runtime = new KubernetesRuntime({
    api: o.api,
    config: {
      ...normalizeKubernetes(),
      ...(o.readyTimeoutSeconds !== undefined ? { readyTimeoutSeconds: o.readyTimeoutSeconds } : {}),
      budget: {
        slots: 1,
        namespace: 'forewarn',
        name: o.budgetName,
        leaseDurationSeconds: 60,
        minPrepareSeconds: o.minPrepareSeconds ?? 2,
      },
      ...o.overrides,
    },
    nodeName: o.node,
    metrics,
    log: quiet,
    now: o.now ?? Date.now,
    sleep: (ms, signal) => sleep(ms, undefined, { signal }),
  });
  let record: KubernetesRecord | undefined;
  const step = (event: ScheduledEvent): KubernetesStep => ({
    event,
    signal: new AbortController().signal,
    log: quiet,
    record: () => record,
    save: async (r) => {
      record = structuredClone(r);
      return true;
    },
  });
  return { node: o.node, metrics, runtime, step, record: () => record };
}
