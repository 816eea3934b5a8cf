// The rules of a kubernetes action that need no cluster: is the node this VM, which taint, which
// pods stay, what each event type gets, and when preparation must be over.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeNode, KubePod } from '../../../src/agent/kubernetes/api.js';
import { optedInForFreeze, skipReason } from '../../../src/agent/kubernetes/drain.js';
import {
  aksAtWork,
  CORDON_ANNOTATION,
  checkProviderId,
  cordonIds,
  FIELD_MANAGER,
  otherCordons,
  parseTaint,
  TAINT_ANNOTATION,
  taintIds,
} from '../../../src/agent/kubernetes/node.js';
import { KubernetesRuntime } from '../../../src/agent/kubernetes/runtime.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import { normalizeKubernetes } from '../../../src/agent/config.js';
import type { KubernetesAction } from '../../../src/agent/types.js';
import type { ScheduledEvent } from '../../../src/client/index.js';

const RESOURCE = '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-a';

function node(over: Partial<KubeNode> = {}): KubeNode {
  return {
    name: 'node-a',
    uid: 'u',
    resourceVersion: '1',
    unschedulable: false,
    annotations: {},
    taints: [],
    providerID: `azure://${RESOURCE}`,
    ready: true,
    unschedulableManagers: null,
    aksEvent: null,
    ...over,
  };
}

function pod(over: Partial<KubePod> = {}): KubePod {
  return {
    namespace: 'ns',
    name: 'p',
    uid: 'u',
    ownerKinds: ['ReplicaSet'],
    mirror: false,
    finished: false,
    terminating: false,
    graceSeconds: 30,
    localStorage: false,
    labels: {},
    ...over,
  };
}

describe('kubernetes: the node is this VM', () => {
  it('matches spec.providerID against IMDS resourceId, ignoring case', () => {
    checkProviderId(node(), { name: 'vm-a', resourceId: RESOURCE.toUpperCase() });
    const set = '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/3';
    checkProviderId(node({ providerID: `azure://${set}` }), { name: 'pool_3', resourceId: set });
  });

  it('without a resourceId, the VM name ends the provider id', () => {
    checkProviderId(node(), { name: 'VM-A', resourceId: null });
    assert.throws(() => checkProviderId(node(), { name: 'vm-b', resourceId: null }), /is not this VM/);
  });

  it('refuses another VM, saying both, and a node without a provider id', () => {
    assert.throws(
      () => checkProviderId(node(), { name: 'vm-b', resourceId: RESOURCE.replace('vm-a', 'vm-b') }),
      /node node-a \(NODE_NAME or kubernetes.nodeName\) is not this VM: its spec.providerID is azure:\/\/.*vm-a, but IMDS describes .*vm-b; check NODE_NAME/,
    );
    assert.throws(() => checkProviderId(node({ providerID: null }), { name: 'vm-a', resourceId: RESOURCE }), /has no spec.providerID/);
  });
});

describe('kubernetes: cordon marks and taints', () => {
  it('reads the event ids of Forewarn cordons from the annotation', () => {
    assert.deepEqual(cordonIds(node()), []);
    assert.deepEqual(cordonIds(node({ annotations: { [CORDON_ANNOTATION]: 'a,b' } })), ['a', 'b']);
  });

  it('reads the event ids of Forewarn’s taint from its own annotation', () => {
    assert.deepEqual(
      taintIds(node({ taints: [{ key: 'forewarn.io/maintenance', effect: 'NoSchedule' }] })),
      [],
      'a taint alone is not Forewarn’s',
    );
    assert.deepEqual(taintIds(node({ annotations: { [TAINT_ANNOTATION]: 'a' } })), ['a']);
  });

  it('names whoever else holds the node cordoned: other field managers of spec.unschedulable, AKS’s taint', () => {
    assert.deepEqual(otherCordons(node({ unschedulable: true })), [], 'no managedFields: nothing to tell');
    assert.deepEqual(otherCordons(node({ unschedulableManagers: [FIELD_MANAGER] })), []);
    assert.deepEqual(otherCordons(node({ unschedulableManagers: [FIELD_MANAGER, 'kubectl', 'kubectl'] })), ['field manager kubectl']);
    assert.deepEqual(otherCordons(node({ taints: [{ key: 'remediator.kubernetes.azure.com/unschedulable', effect: 'NoSchedule' }] })), [
      'AKS node auto-drain (taint remediator.kubernetes.azure.com/unschedulable)',
    ]);
    assert.equal(aksAtWork(node({ aksEvent: 'Freeze' })), true);
    assert.equal(aksAtWork(node()), false);
  });

  it('parses key=value:Effect with {type}, and refuses anything else', () => {
    assert.deepEqual(parseTaint('forewarn.io/maintenance={type}:NoSchedule', 'Reboot'), {
      key: 'forewarn.io/maintenance',
      value: 'Reboot',
      effect: 'NoSchedule',
    });
    assert.deepEqual(parseTaint('drain:NoExecute', 'Freeze'), { key: 'drain', effect: 'NoExecute' });
    assert.throws(() => parseTaint('no-effect', 'Reboot'), /is not key=value:Effect/);
  });
});

describe('kubernetes: which pods a drain leaves', () => {
  it('leaves DaemonSet, mirror and finished pods; local storage by option', () => {
    assert.equal(skipReason(pod(), 'evict'), null);
    assert.match(skipReason(pod({ ownerKinds: ['DaemonSet'] }), 'evict')!, /DaemonSet/);
    assert.match(skipReason(pod({ mirror: true }), 'evict')!, /mirror/);
    assert.match(skipReason(pod({ finished: true }), 'evict')!, /finished/);
    assert.equal(skipReason(pod({ localStorage: true }), 'evict'), null);
    assert.match(skipReason(pod({ localStorage: true }), 'skip')!, /local storage/);
  });

  it('before a Freeze, only pods labelled for it: Forewarn’s label or AKS’s, any value, either spelling', () => {
    const aks = pod({ labels: { 'remediator.kubernetes.azure.com/onFreeze': '' } });
    assert.equal(optedInForFreeze(aks), true);
    assert.equal(optedInForFreeze(pod({ labels: { 'remediator.kubernetes.azure.com/OnFreeze': '' } })), true);
    assert.equal(optedInForFreeze(pod({ labels: { 'forewarn.io/evict-on-freeze': 'yes' } })), true);
    assert.equal(optedInForFreeze(pod({ labels: { app: 'web' } })), false);
    assert.equal(skipReason(aks, 'evict', 'freeze-opt-in'), null);
    assert.match(skipReason(pod(), 'evict', 'freeze-opt-in')!, /not labelled for eviction on a Freeze/);
    assert.match(
      skipReason({ ...aks, ownerKinds: ['DaemonSet'] }, 'evict', 'freeze-opt-in')!,
      /DaemonSet/,
      'the label moves no DaemonSet pod',
    );
  });
});

describe('kubernetes: policy and deadline', () => {
  const action: KubernetesAction = { type: 'kubernetes', name: 'k', drain: true, timeoutSeconds: 600 };
  const runtime = (policy: Record<string, 'none' | 'cordon' | 'drain'> = {}) =>
    new KubernetesRuntime({
      api: {} as never,
      config: { ...normalizeKubernetes(), policy, marginSeconds: 5 },
      nodeName: 'node-a',
      metrics: new AgentMetrics({ defaultMetrics: false }),
      log: { info() {}, warn() {}, error() {} },
      now: () => 0,
      sleep: async () => {},
    });
  const event = (over: Partial<ScheduledEvent>): ScheduledEvent => ({
    ...({} as ScheduledEvent),
    type: 'Reboot',
    status: 'Scheduled',
    notBefore: null,
    ...over,
  });

  it('rides out a Freeze and drains the rest by default; the config and drain: false say otherwise', () => {
    assert.equal(runtime().policyFor(action, 'Freeze'), 'none');
    for (const type of ['Reboot', 'Redeploy', 'Preempt', 'Terminate']) assert.equal(runtime().policyFor(action, type), 'drain');
    assert.equal(runtime({ freeze: 'cordon' }).policyFor(action, 'Freeze'), 'cordon');
    assert.equal(runtime({ Reboot: 'none' }).policyFor(action, 'reboot'), 'none');
    assert.equal(runtime().policyFor({ ...action, drain: false }, 'Reboot'), 'cordon');
  });

  it('must be over by NotBefore minus the margin, or the timeout if sooner', () => {
    const r = runtime();
    assert.equal(r.deadline(action, event({ notBefore: new Date(30_000) }), 0), 25_000);
    assert.equal(r.deadline(action, event({ notBefore: new Date(3_600_000) }), 0), 600_000);
    assert.equal(
      r.deadline(action, event({ status: 'Started', notBefore: new Date(30_000) }), 1000),
      601_000,
      'Started: the timeout alone',
    );
  });
});
