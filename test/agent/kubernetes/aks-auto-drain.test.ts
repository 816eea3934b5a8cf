// Side by side with AKS node auto-drain, against the fake API server with the real client. AKS's
// names, from Microsoft's pages:
// - learn.microsoft.com/azure/aks/node-auto-drain: "The spot node … may receive a taint with
//   "remediator.kubernetes.azure.com/unschedulable" when a scheduled event occurs on that node."
// - learn.microsoft.com/azure/aks/node-auto-drain-evict-on-freeze: "any node that receives a
//   VMEventScheduled condition with a Freeze message is cordoned and labeled pods are evicted";
//   "mark individual pods for eviction by applying the remediator.kubernetes.azure.com/onFreeze label"
//   (`OnFreeze` in the page's version of 02/18/2026).
// Forewarn never undoes AKS's cordon or taint, and offers the same per-pod opt-in for a Freeze.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeApi } from '../../../src/agent/kubernetes/api.js';
import { FREEZE_OPT_IN_LABELS } from '../../../src/agent/kubernetes/drain.js';
import { AKS_CONDITION, AKS_TAINT_KEYS, CORDON_ANNOTATION, cordon, FIELD_MANAGER, uncordon } from '../../../src/agent/kubernetes/node.js';
import type { KubernetesAction } from '../../../src/agent/types.js';
import type { ScheduledEvent } from '../../../src/client/index.js';
import { agentApi } from '../../support/fake-kube/client.js';
import { DRAIN_ACTION, runtimeRig } from './runtime-rig.js';
import { startFakeKube, type FakeKube } from '../../support/fake-kube/server.js';

let kube: FakeKube;
let api: KubeApi;
before(async () => {
  kube = await startFakeKube({ terminationDelayMs: 100, readyDelayMs: 100 });
  kube.addNamespace('forewarn');
  api = agentApi(kube);
});
after(() => kube.close());

const AKS_TAINT = { key: 'remediator.kubernetes.azure.com/unschedulable', effect: 'NoSchedule' as const };
const FOREWARN_TAINT = { key: 'forewarn.io/maintenance', value: 'Redeploy', effect: 'NoSchedule' as const };

let n = 0;
function freshNode(spec: { unschedulable?: boolean; taints?: (typeof AKS_TAINT)[] } = {}): string {
  const name = `aks-${++n}`;
  kube.addNode({ name, ...spec });
  kube.addNode({ name: `${name}-spare` });
  return name;
}

describe('AKS node auto-drain: its names', () => {
  it('are the ones Microsoft documents', () => {
    assert.equal(AKS_TAINT_KEYS[0], 'remediator.kubernetes.azure.com/unschedulable');
    assert.equal(AKS_CONDITION, 'VMEventScheduled');
    assert.ok(FREEZE_OPT_IN_LABELS.includes('remediator.kubernetes.azure.com/onFreeze'));
  });
});

describe('Forewarn never undoes AKS’s cordon or taint', () => {
  it('a node AKS cordoned and tainted before Forewarn came stays so after Forewarn’s recovery', async () => {
    const node = freshNode({ unschedulable: true, taints: [AKS_TAINT] });
    const cordoned = await cordon(api, node, 'E1', FOREWARN_TAINT);
    assert.equal(cordoned.outcome, 'operator');
    assert.equal(cordoned.aks, true);
    assert.equal((await uncordon(api, node, 'E1', FOREWARN_TAINT.key)).outcome, 'not-ours');
    assert.equal(kube.node(node).spec.unschedulable, true);
    assert.deepEqual(kube.node(node).spec.taints, [AKS_TAINT]);
  });

  it('AKS’s taint arriving while Forewarn’s cordon holds keeps the node cordoned; only Forewarn’s taint goes', async () => {
    const node = freshNode();
    assert.equal((await cordon(api, node, 'E2', FOREWARN_TAINT)).outcome, 'cordoned');
    kube.patchNode(node, { spec: { taints: [FOREWARN_TAINT, AKS_TAINT] } });
    const result = await uncordon(api, node, 'E2', FOREWARN_TAINT.key);
    assert.equal(result.outcome, 'kept');
    assert.deepEqual(result.heldBy, ['AKS node auto-drain (taint remediator.kubernetes.azure.com/unschedulable)']);
    assert.equal(result.taintRemoved, true);
    const after = kube.node(node);
    assert.equal(after.spec.unschedulable, true);
    assert.deepEqual(after.spec.taints, [AKS_TAINT]);
    assert.equal(after.metadata.annotations?.[CORDON_ANNOTATION], undefined);
  });

  it('the taint’s older name counts as AKS’s too', async () => {
    const node = freshNode();
    await cordon(api, node, 'E3', null);
    const older = { key: 'remediator.aks.microsoft.com/unschedulable', effect: 'NoSchedule' as const };
    kube.patchNode(node, { spec: { taints: [older] } });
    assert.equal((await uncordon(api, node, 'E3', null)).outcome, 'kept');
    assert.deepEqual(kube.node(node).spec.taints, [older]);
  });

  it('managedFields naming another manager for spec.unschedulable (AKS’s, whatever its name) keep it cordoned', async () => {
    const node = freshNode();
    await cordon(api, node, 'E4', null);
    const owns = (manager: string) => ({
      apiVersion: 'v1',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:spec': { 'f:unschedulable': {} } },
      manager,
      operation: 'Update',
      time: '2026-01-01T00:00:00Z',
    });
    // Microsoft does not publish the remediator's field manager; any manager but Forewarn's holds the cordon.
    kube.patchNode(node, { metadata: { managedFields: [owns(FIELD_MANAGER), owns('aks-remediator')] } });
    const result = await uncordon(api, node, 'E4', null);
    assert.deepEqual([result.outcome, result.heldBy], ['kept', ['field manager aks-remediator']]);
    assert.equal(kube.node(node).spec.unschedulable, true);
  });

  it('sees AKS at work from its VMEventScheduled condition', async () => {
    const node = freshNode();
    const ready = kube.node(node).status.conditions!.find((c) => c.type === 'Ready')!;
    kube.patchNode(node, {
      status: { conditions: [ready, { type: AKS_CONDITION, status: 'True', reason: 'VMEventScheduled', message: 'Freeze scheduled' }] },
    });
    assert.equal((await api.getNode(node)).aksEvent, 'Freeze scheduled');
    assert.equal((await cordon(api, node, 'E5', null)).aks, true);
    assert.equal((await uncordon(api, node, 'E5', null)).outcome, 'uncordoned', 'the condition alone is no cordon of AKS’s');
  });
});

describe('the per-pod opt-in to eviction on a Freeze', () => {
  const ACTION = DRAIN_ACTION;
  const rig = () => runtimeRig({ api, node: freshNode(), budgetName: `freeze-${n}` });
  const event = (id: string, type: string): ScheduledEvent =>
    ({
      id,
      type,
      status: 'Scheduled',
      notBefore: new Date(Date.now() + 600_000),
      resources: [],
      description: '',
      source: 'Platform',
      durationInSeconds: 9,
    }) as unknown as ScheduledEvent;
  const pod = (node: string, name: string, labels: Record<string, string> = {}) =>
    kube.addPod({ name, namespace: `freeze-${n}`, nodeName: node, labels: { app: name, ...labels }, owner: { kind: 'ReplicaSet', name } });

  it('with the default policy (none), evicts only the labelled pods, AKS’s label or Forewarn’s, and cordons while they go', async () => {
    const r = rig();
    pod(r.node, 'aks', { 'remediator.kubernetes.azure.com/onFreeze': '' });
    pod(r.node, 'aks-old-spelling', { 'remediator.kubernetes.azure.com/OnFreeze': '' });
    pod(r.node, 'ours', { 'forewarn.io/evict-on-freeze': 'true' });
    pod(r.node, 'plain');
    const e = event('E-FREEZE-1', 'Freeze');
    assert.equal(r.runtime.policyFor(ACTION, 'Freeze'), 'none');
    assert.deepEqual(await r.runtime.prepare(ACTION, r.step(e)), { ok: true, error: null });
    assert.deepEqual(
      kube.pods(r.node).map((p) => p.metadata.name),
      ['plain'],
      'the labelled pods are gone, their replacements elsewhere since the node is cordoned',
    );
    assert.equal(kube.node(r.node).spec.unschedulable, true);
    assert.deepEqual(r.record(), { node: r.node, cordoned: true, slot: null, overBudget: false }, 'no budget slot for a Freeze');
    assert.deepEqual(await r.runtime.recover(r.step(e)), { ok: true, error: null });
    assert.equal(kube.node(r.node).spec.unschedulable, false, 'uncordoned after the Freeze');
  });

  it('without a labelled pod, a Freeze leaves the node as it is', async () => {
    const r = rig();
    pod(r.node, 'plain');
    assert.deepEqual(await r.runtime.prepare(ACTION, r.step(event('E-FREEZE-2', 'Freeze'))), { ok: true, error: null });
    assert.equal(kube.node(r.node).spec.unschedulable ?? false, false);
    assert.equal(r.record(), undefined);
    assert.equal(kube.pods(r.node).length, 1);
  });

  it('the label is for a Freeze only, and an action with drain: false evicts nothing', async () => {
    const r = rig();
    pod(r.node, 'aks', { 'remediator.kubernetes.azure.com/onFreeze': '' });
    const cordonOnly = { ...ACTION, drain: false };
    assert.deepEqual(await r.runtime.prepare(cordonOnly, r.step(event('E-FREEZE-3', 'Freeze'))), { ok: true, error: null });
    assert.equal(kube.pods(r.node).length, 1);
    assert.equal(kube.node(r.node).spec.unschedulable ?? false, false);
  });
});

describe('recovery next to AKS', () => {
  it('says so, in an Event on the node, when the node stays cordoned for AKS', async () => {
    const {
      node,
      runtime,
      step: stepFor,
      record: recorded,
    } = runtimeRig({
      api,
      node: freshNode(),
      budgetName: 'unused',
      overrides: { taint: 'forewarn.io/maintenance={type}:NoSchedule', budget: null },
    });
    const step = stepFor({
      id: 'E-KEPT',
      type: 'Redeploy',
      status: 'Scheduled',
      notBefore: new Date(Date.now() + 600_000),
      resources: [],
    } as unknown as ScheduledEvent);
    const cordonOnly: KubernetesAction = { type: 'kubernetes', name: 'cordon', drain: false, timeoutSeconds: 60 };
    assert.deepEqual(await runtime.prepare(cordonOnly, step), { ok: true, error: null });
    assert.deepEqual(recorded(), { node, cordoned: true, slot: null, overBudget: false, taintPlaced: true });
    kube.patchNode(node, { spec: { taints: [...kube.node(node).spec.taints!, AKS_TAINT] } });
    assert.deepEqual(await runtime.recover(step), { ok: true, error: null });
    assert.equal(kube.node(node).spec.unschedulable, true);
    assert.deepEqual(kube.node(node).spec.taints, [AKS_TAINT]);
    assert.deepEqual(recorded(), { node, cordoned: false, slot: null, overBudget: false, taintPlaced: false });
    const kept = kube.events({ node, reason: 'CordonKept' });
    assert.equal(kept.length, 1);
    assert.match(kept[0]!.message, /stays cordoned by AKS node auto-drain \(taint remediator\.kubernetes\.azure\.com\/unschedulable\)/);
  });
});
