// The drain state machine, the cordon and the budget, with the real client (client-node) against
// the fake API server: PodDisruptionBudgets, 404s, grace cut to the time left, the deadline report.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeApi } from '../../../src/agent/kubernetes/api.js';
import { Budget } from '../../../src/agent/kubernetes/budget.js';
import { describeRemaining, drainNode, type DrainOptions } from '../../../src/agent/kubernetes/drain.js';
import { CORDON_ANNOTATION, cordon, uncordon } from '../../../src/agent/kubernetes/node.js';
import { agentApi } from '../../support/fake-kube/client.js';
import { startFakeKube, type FakeKube } from '../../support/fake-kube/server.js';

let kube: FakeKube;
let api: KubeApi;

before(async () => {
  kube = await startFakeKube({ terminationDelayMs: 150, readyDelayMs: 150 });
  kube.addNamespace('forewarn');
  api = agentApi(kube);
});
after(() => kube.close());

let n = 0;
/** A fresh node, cordoned as a drain finds it, and a spare one for replacements, per test. */
function freshNode(cordoned = true): string {
  const name = `node-${++n}`;
  kube.addNode({ name, unschedulable: cordoned });
  kube.addNode({ name: `${name}-spare` });
  return name;
}

/** `api` with some calls replaced (the client's private fields rule out Object.create). */
function wrap(over: Partial<KubeApi>): KubeApi {
  return {
    getNode: (name) => api.getNode(name),
    patchNode: (name, ops) => api.patchNode(name, ops),
    listNodes: (selector) => api.listNodes(selector),
    listPodsOnNode: (node) => api.listPodsOnNode(node),
    evict: (pod, grace) => api.evict(pod, grace),
    createEvent: (event) => api.createEvent(event),
    getLease: (ns, name) => api.getLease(ns, name),
    createLease: (lease) => api.createLease(lease),
    replaceLease: (lease) => api.replaceLease(lease),
    ...over,
  };
}

const options = (node: string, over: Partial<DrainOptions> = {}): DrainOptions => ({
  node,
  deadline: Date.now() + 10_000,
  localStorage: 'evict',
  now: Date.now,
  sleep: (ms, signal) => sleep(ms, undefined, { signal }),
  signal: new AbortController().signal,
  ...over,
});

describe('drain', () => {
  it('evicts what can move, leaves DaemonSet, mirror and finished pods, and ends once evicted pods have terminated', async () => {
    const node = freshNode();
    kube.addPod({ name: 'app', namespace: 'a', nodeName: node, owner: { kind: 'ReplicaSet', name: 'app' } });
    kube.addPod({ name: 'bare', namespace: 'a', nodeName: node });
    kube.addPod({ name: 'ds', namespace: 'a', nodeName: node, owner: { kind: 'DaemonSet', name: 'ds' } });
    kube.addPod({ name: 'static', namespace: 'a', nodeName: node, mirror: true });
    const report = await drainNode(api, options(node));
    assert.equal(report.drained, true);
    assert.deepEqual(report.evicted.sort(), ['a/app', 'a/bare']);
    assert.deepEqual(report.skipped.map((s) => s.pod).sort(), ['a/ds', 'a/static']);
    assert.deepEqual(
      kube
        .pods(node)
        .map((p) => p.metadata.name)
        .sort(),
      ['ds', 'static'],
      'the evicted pods are gone, not just terminating',
    );
  });

  it('backs off while a PodDisruptionBudget says no, and evicts once the replacement is Ready', async () => {
    const node = freshNode();
    kube.addPod({ name: 'web-0', namespace: 'b', nodeName: node, labels: { app: 'web' }, owner: { kind: 'ReplicaSet', name: 'web' } });
    kube.addPod({ name: 'web-1', namespace: 'b', nodeName: node, labels: { app: 'web' }, owner: { kind: 'ReplicaSet', name: 'web' } });
    kube.addPdb({ name: 'web', namespace: 'b', matchLabels: { app: 'web' }, maxUnavailable: 1 });
    const outcomes: string[] = [];
    const report = await drainNode(api, options(node, { onEviction: (_pod, outcome) => outcomes.push(outcome) }));
    assert.equal(report.drained, true);
    assert.ok(outcomes.includes('blocked'), `one eviction waited for the budget: ${outcomes.join(', ')}`);
    const blocked = kube.evictions.filter((e) => e.namespace === 'b' && e.status === 429);
    assert.ok(blocked.length <= 3, `backed off, not a hot loop: ${blocked.length} refusals`);
  });

  it('at the deadline, fails with each pod left and the budget that held it', async () => {
    const node = freshNode();
    kube.addPod({ name: 'db-0', namespace: 'c', nodeName: node, labels: { app: 'db' }, owner: { kind: 'StatefulSet', name: 'db' } });
    kube.addPdb({ name: 'db-pdb', namespace: 'c', matchLabels: { app: 'db' }, minAvailable: 1 });
    const started = Date.now();
    const report = await drainNode(api, options(node, { deadline: started + 3_000 }));
    assert.equal(report.drained, false);
    assert.equal(report.failure, 'deadline');
    assert.ok(Date.now() - started < 4_500, 'it stops at the deadline');
    assert.deepEqual(
      report.remaining.map((r) => [r.pod, r.budget]),
      [['c/db-0', 'db-pdb']],
    );
    assert.match(
      describeRemaining(report),
      /^c\/db-0 \(PodDisruptionBudget db-pdb: The disruption budget db-pdb needs 1 healthy pods and has 1 currently\)$/,
    );
    const tries = kube.evictions.filter((e) => e.namespace === 'c').length;
    assert.ok(tries >= 2 && tries <= 5, `retried with backoff over 3 s: ${tries} tries`);
  });

  it('cuts each pod’s grace to the time left', async () => {
    const node = freshNode();
    kube.addPod({ name: 'slow', namespace: 'd', nodeName: node, graceSeconds: 600 });
    const seen: number[] = [];
    const spy = wrap({
      evict: (pod, grace) => {
        seen.push(grace);
        return api.evict(pod, grace);
      },
    });
    await drainNode(spy, options(node, { deadline: Date.now() + 8_000 }));
    assert.equal(seen.length, 1);
    assert.ok(seen[0]! <= 8 && seen[0]! >= 6, `grace ${seen[0]} s, not the pod's 600 s`);
  });

  it('takes a pod that went meanwhile (404) as gone', async () => {
    const node = freshNode();
    kube.addPod({ name: 'ghost', namespace: 'e', nodeName: node });
    const spy = wrap({
      evict: async (pod, grace) => {
        kube.removePod(pod.namespace, pod.name);
        return api.evict(pod, grace);
      },
    });
    const outcomes: string[] = [];
    const report = await drainNode(spy, options(node, { onEviction: (_p, o) => outcomes.push(o) }));
    assert.equal(report.drained, true);
    assert.deepEqual(outcomes, ['gone']);
  });

  it('leaves pods with local storage when told to', async () => {
    const node = freshNode();
    kube.addPod({ name: 'cache', namespace: 'f', nodeName: node, emptyDir: true });
    const report = await drainNode(api, options(node, { localStorage: 'skip' }));
    assert.equal(report.drained, true);
    assert.deepEqual(
      report.skipped.map((s) => s.pod),
      ['f/cache'],
    );
    assert.equal(kube.pods(node).length, 1);
  });

  it('stops when aborted, saying so', async () => {
    const node = freshNode();
    kube.addPod({ name: 'db-1', namespace: 'g', nodeName: node, labels: { app: 'db' } });
    kube.addPdb({ name: 'db', namespace: 'g', matchLabels: { app: 'db' }, minAvailable: 1 });
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 300);
    const report = await drainNode(api, options(node, { signal: stop.signal }));
    assert.equal(report.failure, 'aborted');
  });
});

describe('cordon', () => {
  it('cordons with the annotation and taint, shares the cordon between events, and the last one off uncordons', async () => {
    const node = freshNode(false);
    const taint = { key: 'forewarn.io/maintenance', value: 'Reboot', effect: 'NoSchedule' };
    assert.equal((await cordon(api, node, 'E1', taint)).outcome, 'cordoned');
    assert.equal((await cordon(api, node, 'e1', taint)).outcome, 'already-ours', 'a rerun after a restart');
    assert.equal((await cordon(api, node, 'E2', taint)).outcome, 'cordoned');
    let n1 = kube.node(node);
    assert.equal(n1.spec.unschedulable, true);
    assert.equal(n1.metadata.annotations?.[CORDON_ANNOTATION], 'e1,e2');
    assert.deepEqual(n1.spec.taints, [taint]);
    assert.equal((await uncordon(api, node, 'E1', taint.key)).outcome, 'others-remain');
    assert.equal(kube.node(node).spec.unschedulable, true);
    assert.equal((await uncordon(api, node, 'E2', taint.key)).outcome, 'uncordoned');
    n1 = kube.node(node);
    assert.equal(n1.spec.unschedulable, false);
    assert.equal(n1.metadata.annotations?.[CORDON_ANNOTATION], undefined);
    assert.deepEqual(n1.spec.taints, []);
    assert.equal((await uncordon(api, node, 'E2', taint.key)).outcome, 'not-ours', 'twice is harmless');
  });

  it('never takes over, or undoes, a cordon an operator made', async () => {
    const node = freshNode(false);
    kube.patchNode(node, { spec: { unschedulable: true } });
    assert.equal((await cordon(api, node, 'E3', null)).outcome, 'operator');
    assert.equal((await uncordon(api, node, 'E3', null)).outcome, 'not-ours');
    assert.equal(kube.node(node).spec.unschedulable, true);
  });

  it('reads the node again when it changed between the read and the patch', async () => {
    const node = freshNode(false);
    let raced = false;
    const spy = wrap({
      getNode: async (name) => {
        const read = await api.getNode(name);
        if (!raced) {
          raced = true;
          kube.patchNode(node, { metadata: { labels: { touched: 'yes' } } });
        }
        return read;
      },
    });
    assert.equal((await cordon(spy, node, 'E4', null)).outcome, 'cordoned');
    const after = kube.node(node);
    assert.equal(after.metadata.labels?.touched, 'yes', 'the other change is kept');
    assert.equal(after.spec.unschedulable, true);
  });
});

describe('budget', () => {
  const budget = (holder: string, now = Date.now) =>
    new Budget(api, { namespace: 'forewarn', name: `slots-${n}`, slots: 1, leaseDurationSeconds: 10, holder, now });

  it('gives one slot to one node at a time, again to the same node, and to the next once given back', async () => {
    n++;
    const a = budget('node-a');
    const b = budget('node-b');
    const slot = await a.tryAcquire();
    assert.deepEqual(slot, { namespace: 'forewarn', name: `slots-${n}-0` });
    assert.equal(await b.tryAcquire(), null);
    assert.deepEqual(await a.tryAcquire(), slot, 'after a restart, its own slot again');
    assert.equal(await a.renew(slot!), true);
    await a.release(slot!);
    assert.deepEqual(await b.tryAcquire(), slot);
    assert.equal(kube.lease('forewarn', slot!.name)?.spec?.holderIdentity, 'node-b');
  });

  it('takes over the slot of a holder that stopped renewing once its lease has run out', async () => {
    n++;
    const dead = budget('node-dead');
    const slot = await dead.tryAcquire();
    assert.ok(slot);
    assert.equal(await budget('node-live').tryAcquire(), null, 'not before the lease runs out');
    const later = budget('node-live', () => Date.now() + 11_000);
    assert.deepEqual(await later.tryAcquire(), slot);
    assert.equal(await dead.renew(slot), false, 'the old holder learns it lost the slot');
  });
});
