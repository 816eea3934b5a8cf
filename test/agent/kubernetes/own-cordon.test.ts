// The agent removes only what it added (SPEC §4): its own cordon, never an operator's, and a taint
// only if it placed it. Against the fake API server with the real client. The fake keeps no
// managedFields of its own, so each test writes them as a real API server would have recorded the
// writes it describes (the agent's JSON patches under its field manager, an operator's under
// kubectl's).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Journal } from '../../../src/agent/journal.js';
import type { KubeApi } from '../../../src/agent/kubernetes/api.js';
import { CORDON_ANNOTATION, cordon, FIELD_MANAGER, TAINT_ANNOTATION, uncordon } from '../../../src/agent/kubernetes/node.js';
import { agentApi } from '../../support/fake-kube/client.js';
import { startFakeKube, type FakeKube } from '../../support/fake-kube/server.js';
import { scheduledEvent } from '../../support/fixtures.js';
import { tempDir } from '../../support/temp.js';

let kube: FakeKube;
let api: KubeApi;

before(async () => {
  kube = await startFakeKube({ terminationDelayMs: 100, readyDelayMs: 100 });
  api = agentApi(kube);
});
after(() => kube.close());

let n = 0;
function freshNode(): string {
  const name = `own-${++n}`;
  kube.addNode({ name });
  return name;
}

const TAINT = { key: 'forewarn.io/maintenance', value: 'Reboot', effect: 'NoSchedule' } as const;

/** A managedFields entry of an Update by `manager` owning `fields` (FieldsV1). */
const entry = (manager: string, fields: Record<string, unknown>, operation: 'Update' | 'Apply' = 'Update') => ({
  apiVersion: 'v1',
  fieldsType: 'FieldsV1',
  fieldsV1: fields,
  manager,
  operation,
  time: '2026-01-01T00:00:00Z',
});
const UNSCHEDULABLE = { 'f:spec': { 'f:unschedulable': {} } };
const ANNOTATIONS = { 'f:metadata': { 'f:annotations': { [`f:${CORDON_ANNOTATION}`]: {} } } };

describe('the agent removes only the taint it placed', () => {
  it('leaves a taint with its key that an operator placed before the agent came', async () => {
    const node = freshNode();
    const operators = { key: TAINT.key, value: 'operator', effect: 'NoSchedule' as const };
    kube.patchNode(node, { spec: { taints: [operators] } });
    await cordon(api, node, 'E1', TAINT);
    assert.equal(kube.node(node).spec.unschedulable, true, 'cordoned all the same');
    assert.deepEqual(kube.node(node).spec.taints, [operators], 'the operator’s taint is not replaced or doubled');
    assert.equal(kube.node(node).metadata.annotations?.[TAINT_ANNOTATION], undefined, 'not recorded as Forewarn’s');
    await uncordon(api, node, 'E1', TAINT.key);
    assert.equal(kube.node(node).spec.unschedulable ?? false, false, 'uncordoned: the cordon was Forewarn’s');
    assert.deepEqual(kube.node(node).spec.taints, [operators], 'the operator’s taint stays');
  });

  it('keeps the timeAdded of the other taints it rewrites (a NoExecute toleration counts from it)', async () => {
    const node = freshNode();
    const notReady = { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' as const, timeAdded: '2026-01-01T00:00:00Z' };
    kube.patchNode(node, { spec: { taints: [notReady] } });
    await cordon(api, node, 'E1', TAINT);
    assert.deepEqual(kube.node(node).spec.taints, [notReady, TAINT]);
    await uncordon(api, node, 'E1', TAINT.key);
    assert.deepEqual(kube.node(node).spec.taints, [notReady]);
  });

  it('removes the taint it placed, recorded on the node, when the last of its events is over', async () => {
    const node = freshNode();
    await cordon(api, node, 'E1', TAINT);
    await cordon(api, node, 'E2', TAINT);
    assert.equal(kube.node(node).metadata.annotations?.[TAINT_ANNOTATION], 'e1,e2', 'the decision is on the node, not only in a journal');
    assert.deepEqual(kube.node(node).spec.taints, [TAINT]);
    await uncordon(api, node, 'E1', TAINT.key);
    assert.deepEqual(kube.node(node).spec.taints, [TAINT], 'another event still holds it');
    await uncordon(api, node, 'E2', TAINT.key);
    assert.deepEqual(kube.node(node).spec.taints ?? [], []);
    assert.equal(kube.node(node).metadata.annotations?.[TAINT_ANNOTATION], undefined);
  });

  it('keeps the other taints of the node, whoever placed them', async () => {
    const node = freshNode();
    const other = { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' as const };
    kube.patchNode(node, { spec: { taints: [other] } });
    await cordon(api, node, 'E1', TAINT);
    assert.deepEqual(kube.node(node).spec.taints, [other, TAINT]);
    await uncordon(api, node, 'E1', TAINT.key);
    assert.deepEqual(kube.node(node).spec.taints, [other]);
  });
});

describe('the agent never undoes an operator’s cordon made while its own holds', () => {
  it('sends its patches under its own field manager', async () => {
    const node = freshNode();
    const since = kube.requests.length;
    await cordon(api, node, 'E1', null);
    const patches = kube.requests.slice(since).filter((r) => r.method === 'PATCH');
    assert.ok(patches.length >= 1);
    for (const p of patches) assert.equal(new URLSearchParams(p.query).get('fieldManager'), FIELD_MANAGER);
    assert.equal(FIELD_MANAGER, 'forewarn-agent');
  });

  it('leaves the node cordoned when managedFields show another manager set spec.unschedulable after it', async () => {
    const node = freshNode();
    await cordon(api, node, 'E1', null);
    // The operator uncordoned and cordoned again with kubectl (no --field-manager on cordon: the
    // API server names the manager after kubectl's User-Agent): spec.unschedulable is now kubectl's.
    kube.patchNode(node, { metadata: { managedFields: [entry(FIELD_MANAGER, ANNOTATIONS), entry('kubectl', UNSCHEDULABLE)] } });
    await uncordon(api, node, 'E1', null);
    const after = kube.node(node);
    assert.equal(after.spec.unschedulable, true, 'the operator’s cordon stays');
    assert.equal(after.metadata.annotations?.[CORDON_ANNOTATION], undefined, 'Forewarn’s part of it is gone');
  });

  it('leaves it cordoned when another manager shares spec.unschedulable (a server-side apply)', async () => {
    const node = freshNode();
    await cordon(api, node, 'E1', null);
    kube.patchNode(node, {
      metadata: { managedFields: [entry(FIELD_MANAGER, { ...ANNOTATIONS, ...UNSCHEDULABLE }), entry('kubectl', UNSCHEDULABLE, 'Apply')] },
    });
    await uncordon(api, node, 'E1', null);
    assert.equal(kube.node(node).spec.unschedulable, true);
  });

  it('uncordons when spec.unschedulable is the agent’s alone, or when managedFields are absent', async () => {
    const mine = freshNode();
    await cordon(api, mine, 'E1', null);
    kube.patchNode(mine, {
      metadata: { managedFields: [entry(FIELD_MANAGER, { ...ANNOTATIONS, ...UNSCHEDULABLE }), entry('kubelet', { 'f:status': {} })] },
    });
    await uncordon(api, mine, 'E1', null);
    assert.equal(kube.node(mine).spec.unschedulable ?? false, false);
    const bare = freshNode();
    await cordon(api, bare, 'E1', null);
    await uncordon(api, bare, 'E1', null);
    assert.equal(kube.node(bare).spec.unschedulable ?? false, false, 'nothing says otherwise: the annotation decides');
  });
});

describe('the journal keeps whether the agent placed its taint', () => {
  it('reads taintPlaced back, and a record without it as before', () => {
    const path = join(tempDir('own-cordon'), 'journal.json');
    const journal = Journal.open(path);
    journal.ensure(scheduledEvent({ id: 'E1' }), 'drain');
    journal.ensure(scheduledEvent({ id: 'E2' }), 'drain');
    journal.kubernetes('E1', { node: 'n', cordoned: true, slot: null, overBudget: false, taintPlaced: true });
    journal.kubernetes('E2', { node: 'n', cordoned: true, slot: null, overBudget: false });
    journal.flush();
    const again = Journal.open(path);
    assert.deepEqual(again.get('E1')?.kubernetes, { node: 'n', cordoned: true, slot: null, overBudget: false, taintPlaced: true });
    assert.deepEqual(again.get('E2')?.kubernetes, { node: 'n', cordoned: true, slot: null, overBudget: false });
  });
});
