// One kubernetes action's whole life on the runtime, against the fake API server: over budget when
// no slot frees in time, the slot given back only once the node is Ready, a rerun after a restart
// that neither waits again nor cordons twice, and a Freeze left alone; the barrier's mark on the node,
// taken off at recovery, and a barrier that cannot list the nodes, opened at the deadline.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { normalizeKubernetes } from '../../../src/agent/config.js';
import { KubeError, type KubeApi } from '../../../src/agent/kubernetes/api.js';
import { PREPARED_ANNOTATION, VM_NAME_ANNOTATION } from '../../../src/agent/kubernetes/barrier.js';
import { Budget } from '../../../src/agent/kubernetes/budget.js';
import { KubernetesRuntime, type KubernetesStep } from '../../../src/agent/kubernetes/runtime.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import type { KubernetesRecord } from '../../../src/agent/types.js';
import type { ScheduledEvent } from '../../../src/client/index.js';
import { agentApi } from '../../support/fake-kube/client.js';
import { DRAIN_ACTION, quiet, runtimeRig } from './runtime-rig.js';
import { startFakeKube, type FakeKube } from '../../support/fake-kube/server.js';

let kube: FakeKube;
let api: KubeApi;
before(async () => {
  kube = await startFakeKube({ terminationDelayMs: 100, readyDelayMs: 100 });
  kube.addNamespace('forewarn');
  api = agentApi(kube);
});
after(() => kube.close());

const ACTION = DRAIN_ACTION;
let n = 0;

function rig(budgetName: string, minPrepareSeconds = 2, now: () => number = Date.now) {
  const node = `rt-node-${++n}`;
  kube.addNode({ name: node });
  kube.addNode({ name: `${node}-spare` });
  return runtimeRig({ api, node, budgetName, minPrepareSeconds, now, readyTimeoutSeconds: 30 });
}

const event = (id: string, type: string, notBeforeInMs: number): ScheduledEvent =>
  ({
    id,
    type,
    status: 'Scheduled',
    notBefore: new Date(Date.now() + notBeforeInMs),
    resources: [],
    description: '',
    source: 'Platform',
    durationInSeconds: -1,
  }) as unknown as ScheduledEvent;

const metricValue = async (metrics: AgentMetrics, name: string) => {
  const line = (await metrics.text()).split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ').pop() ?? 0);
};

describe('kubernetes runtime', () => {
  it('with every slot held, waits until minPrepareSeconds before the deadline, then prepares over budget and says so', async () => {
    const r = rig('full');
    await new Budget(api, {
      namespace: 'forewarn',
      name: 'full',
      slots: 1,
      leaseDurationSeconds: 60,
      holder: 'someone-else',
      now: Date.now,
    }).tryAcquire();
    kube.addPod({ name: 'app', namespace: 'rt', nodeName: r.node });
    const started = Date.now();
    // NotBefore in 8 s, margin 5 s: the deadline is 3 s away; the wait ends 2 s before it.
    const result = await r.runtime.prepare(ACTION, r.step(event('E-OVER', 'Reboot', 8_000)));
    assert.deepEqual(result, { ok: true, error: null }, 'drained all the same');
    const waited = Date.now() - started;
    assert.ok(waited >= 800, `waited for a slot first (${waited} ms)`);
    assert.deepEqual(r.record(), { node: r.node, cordoned: true, slot: null, overBudget: true });
    assert.equal(await metricValue(r.metrics, 'forewarn_agent_kubernetes_over_budget_total'), 1);
    assert.ok(kube.events({ node: r.node }).some((e) => e.reason === 'OverBudget' && e.type === 'Warning'));
    assert.equal(kube.pods(r.node).length, 0);
  });

  it('gives the slot back only once the node is Ready again, after uncordoning it', async () => {
    const r = rig('ready');
    const e = event('E-READY', 'Reboot', 600_000);
    assert.deepEqual(await r.runtime.prepare(ACTION, r.step(e)), { ok: true, error: null });
    assert.deepEqual(r.record()?.slot, { namespace: 'forewarn', name: 'ready-0' });
    kube.setNodeReady(r.node, false);
    const recovered = r.runtime.recover(r.step(e));
    await sleep(2_500);
    assert.equal(kube.node(r.node).spec.unschedulable, false, 'uncordoned at once');
    assert.equal(kube.lease('forewarn', 'ready-0')?.spec?.holderIdentity, r.node, 'the slot is kept while the node is not Ready');
    kube.setNodeReady(r.node, true);
    assert.deepEqual(await recovered, { ok: true, error: null });
    assert.equal(kube.lease('forewarn', 'ready-0')?.spec?.holderIdentity ?? '', '');
    assert.deepEqual(r.record(), { node: r.node, cordoned: false, slot: null, overBudget: false });
  });

  it('run again after a restart, keeps its slot and its cordon: no second wait, no second Cordoned', async () => {
    const r = rig('rerun');
    const e = event('E-RERUN', 'Redeploy', 600_000);
    await r.runtime.prepare(ACTION, r.step(e));
    await r.runtime.prepare(ACTION, r.step(e));
    assert.equal(kube.events({ node: r.node }).filter((x) => x.reason === 'Cordoned').length, 1);
    assert.equal(kube.lease('forewarn', 'rerun-0')?.spec?.leaseTransitions, 0, 'the same holder throughout');
  });

  it('leaves the node alone for a Freeze by default', async () => {
    const r = rig('freeze');
    assert.deepEqual(await r.runtime.prepare(ACTION, r.step(event('E-FREEZE', 'Freeze', 600_000))), { ok: true, error: null });
    assert.equal(kube.node(r.node).spec.unschedulable ?? false, false);
    assert.equal(r.record(), undefined, 'no slot taken');
  });

  it('stamps the node’s events with the agent’s clock, not the wall clock', async () => {
    // An hour ahead: what the events carry must be this clock's time.
    const ahead = () => Date.now() + 3_600_000;
    const r = rig('clock', 2, ahead);
    const e = { ...event('E-CLOCK', 'Reboot', 0), notBefore: new Date(ahead() + 600_000) } as ScheduledEvent;
    const before = ahead();
    await r.runtime.prepare(ACTION, r.step(e));
    const cordoned = kube.events({ node: r.node }).find((x) => x.reason === 'Cordoned')!;
    const stamped = Date.parse(String((cordoned.object as { firstTimestamp?: unknown }).firstTimestamp));
    assert.ok(stamped >= before - 1000 && stamped <= ahead() + 1000, `stamped ${new Date(stamped).toISOString()}`);
  });

  it('registers the node, marks it prepared once per event, and recovery takes the mark off', async () => {
    const node = `rt-node-${++n}`;
    kube.addNode({ name: node });
    const runtime = new KubernetesRuntime({
      api,
      config: { ...normalizeKubernetes(), readyTimeoutSeconds: 5 },
      nodeName: node,
      metrics: new AgentMetrics({ defaultMetrics: false }),
      log: quiet,
      now: Date.now,
      sleep: (ms, signal) => sleep(ms, undefined, { signal }),
    });
    await runtime.register('vm-x');
    const version = kube.node(node).metadata.resourceVersion;
    await runtime.register('vm-x');
    assert.equal(kube.node(node).metadata.resourceVersion, version, 'registered once: no second patch');
    assert.equal(kube.node(node).metadata.annotations?.[VM_NAME_ANNOTATION], 'vm-x');
    const e1 = event('E-MARK-1', 'Reboot', 600_000);
    const e2 = event('E-MARK-2', 'Reboot', 600_000);
    assert.equal(await runtime.markPrepared(e1, quiet), true);
    assert.equal(await runtime.markPrepared(e1, quiet), true);
    assert.equal(await runtime.markPrepared(e2, quiet), true);
    assert.equal(kube.node(node).metadata.annotations?.[PREPARED_ANNOTATION], 'e-mark-1,e-mark-2');
    let record: KubernetesRecord | undefined;
    const step = (e: ScheduledEvent): KubernetesStep => ({
      event: e,
      signal: new AbortController().signal,
      log: quiet,
      record: () => record,
      save: async (r) => {
        record = r;
        return true;
      },
    });
    assert.deepEqual(await runtime.recover(step(e1)), { ok: true, error: null });
    assert.equal(kube.node(node).metadata.annotations?.[PREPARED_ANNOTATION], 'e-mark-2');
    assert.deepEqual(await runtime.recover(step(e2)), { ok: true, error: null });
    assert.equal(kube.node(node).metadata.annotations?.[PREPARED_ANNOTATION], undefined, 'the last one off removes the annotation');
  });

  it('a barrier that cannot list the nodes waits until the deadline, then opens with a Warning', async () => {
    const node = `rt-node-${++n}`;
    kube.addNode({ name: node });
    const forbidden: KubeApi = Object.assign(Object.create(null) as KubeApi, {
      getNode: (name: string) => api.getNode(name),
      patchNode: (name: string, ops: Parameters<KubeApi['patchNode']>[1]) => api.patchNode(name, ops),
      createEvent: (e: Parameters<KubeApi['createEvent']>[0]) => api.createEvent(e),
      listNodes: async () => {
        throw new KubeError(403, 'cannot list the nodes labelled forewarn.io/agent=true: HTTP 403: forbidden');
      },
    });
    const metrics = new AgentMetrics({ defaultMetrics: false });
    const runtime = new KubernetesRuntime({
      api: forbidden,
      config: { ...normalizeKubernetes(), marginSeconds: 5 },
      nodeName: node,
      metrics,
      log: quiet,
      now: Date.now,
      sleep: (ms, signal) => sleep(ms, undefined, { signal }),
    });
    const warnings: string[] = [];
    const log = {
      ...quiet,
      warn: (_: object, msg?: string) => warnings.push(String(msg)),
      error: (_: object, msg?: string) => warnings.push(String(msg)),
    };
    // NotBefore in 7 s, margin 5 s: the deadline is 2 s away.
    const e = { ...event('E-NOLIST', 'Reboot', 7_000), resources: ['vm-x', 'vm-y'] } as ScheduledEvent;
    const started = Date.now();
    const outcome = await runtime.awaitBarrier({ event: () => e, vmName: 'vm-x', signal: new AbortController().signal, log });
    assert.equal(outcome, 'deadline');
    assert.ok(Date.now() - started >= 1_500, 'waited for the deadline');
    assert.deepEqual(warnings, [
      'cannot list the nodes that run the agent; trying again',
      'the deadline came before every node the event names was prepared: approving anyway',
    ]);
    assert.match(kube.node(node).metadata.annotations?.[PREPARED_ANNOTATION] ?? '', /e-nolist/, 'its own mark written all the same');
    const warning = kube.events({ node }).find((x) => x.reason === 'BarrierDeadline');
    assert.equal(warning?.type, 'Warning');
    assert.match(warning?.message ?? '', /nodes it could not list/);
    assert.equal(await metricValue(metrics, 'forewarn_agent_kubernetes_steps_total{step="barrier-deadline"}'), 1);
  });

  it('an event that names only this node opens the barrier at once, without listing', async () => {
    const node = `rt-node-${++n}`;
    kube.addNode({ name: node });
    let listed = 0;
    const counting: KubeApi = Object.assign(Object.create(null) as KubeApi, {
      getNode: (name: string) => api.getNode(name),
      patchNode: (name: string, ops: Parameters<KubeApi['patchNode']>[1]) => api.patchNode(name, ops),
      listNodes: async (selector: string) => {
        listed += 1;
        return api.listNodes(selector);
      },
    });
    const runtime = new KubernetesRuntime({
      api: counting,
      config: normalizeKubernetes(),
      nodeName: node,
      metrics: new AgentMetrics({ defaultMetrics: false }),
      log: quiet,
      now: Date.now,
      sleep: (ms, signal) => sleep(ms, undefined, { signal }),
    });
    const e = { ...event('E-ALONE', 'Reboot', 600_000), resources: ['VM-Z'] } as ScheduledEvent;
    assert.equal(
      await runtime.awaitBarrier({ event: () => e, vmName: 'vm-z', signal: new AbortController().signal, log: quiet }),
      'complete',
    );
    assert.equal(listed, 0);
  });
});
