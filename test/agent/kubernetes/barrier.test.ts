// One event naming two nodes that run the agent, with the shipped settings (leader `first`, approval
// `after-actions`): two in-process agents, the emulator as IMDS (both VMs in one tenant, so one
// event names both), the fake API server as the cluster. One node drains in a moment, the other
// slowly (a pod that takes seconds to terminate). One approval starts the event for both, so it
// must not be sent before the slow node is drained.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { Agent } from '../../../src/agent/agent.js';
import { normalizeKubernetes } from '../../../src/agent/config.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import type { AgentConfig, KubernetesConfig, Rule } from '../../../src/agent/types.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { AGENT_LABEL, PREPARED_ANNOTATION, VM_NAME_ANNOTATION } from '../../../src/agent/kubernetes/barrier.js';
import { agentApi } from '../../support/fake-kube/client.js';
import { startFakeKube, type FakeKube } from '../../support/fake-kube/server.js';
import { AgentHarness, agentConfig, testClient, until } from '../support.js';

/** VM → node; both VMs in one tenant, so an operation on both makes one event naming both. */
const NODES = { 'web-0': 'node-0', 'web-2': 'node-2' } as const;
type Vm = keyof typeof NODES;

let emulator: Emulator;
let imdsUrl: string;
let kube: FakeKube;

before(async () => {
  emulator = await Emulator.create({
    clock: 'manual',
    rateLimit: 0,
    fleet: Object.keys(NODES).map((name) => ({ name, tenant: 'web' })),
  });
  ({ imdsUrl } = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } }));
  kube = await startFakeKube({ terminationDelayMs: 100, readyDelayMs: 100 });
  for (const [vm, node] of Object.entries(NODES)) {
    const res = await fetch(`${imdsUrl}/vms/${vm}/metadata/instance/compute?api-version=2021-02-01`, { headers: { Metadata: 'true' } });
    const { resourceId } = (await res.json()) as { resourceId: string };
    kube.addNode({ name: node, providerID: `azure://${resourceId}` });
  }
});
after(async () => {
  await kube.close();
  await emulator.close();
});

const DRAIN: Rule = {
  name: 'drain',
  match: { eventType: ['Reboot'], eventSource: null, status: null, durationInSeconds: null, affectsThisVm: null, description: null },
  actions: [{ type: 'kubernetes', name: 'drain', drain: true, timeoutSeconds: 120 }],
  approval: 'after-actions',
  approvalMarginSeconds: 0,
  onComplete: [],
  onCancel: [],
};

class KubeAgent extends AgentHarness {
  readonly agent: Agent;
  constructor(vm: Vm, dir: string, kubernetes: Partial<KubernetesConfig> = {}) {
    super();
    const config: AgentConfig = agentConfig(`${imdsUrl}/vms/${vm}`, join(dir, `${vm}.journal.json`), [DRAIN], {
      vmName: vm,
      kubernetes: { ...normalizeKubernetes(), nodeName: NODES[vm], readyTimeoutSeconds: 5, ...kubernetes },
    });
    this.agent = new Agent({
      config,
      logger: this.logger(),
      client: testClient(`${imdsUrl}/vms/${vm}`),
      metrics: new AgentMetrics({ defaultMetrics: false }),
      kubeApi: agentApi(kube),
      env: {},
    });
  }
}

let dir: string;
let agents: KubeAgent[] = [];
let pods = 0;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'forewarn-barrier-'));
  emulator.engine.reset();
});
afterEach(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  agents = [];
  rmSync(dir, { recursive: true, force: true });
});

async function startAgents(vms: Vm[], kubernetes: Partial<KubernetesConfig> = {}): Promise<KubeAgent[]> {
  const started = vms.map((vm) => new KubeAgent(vm, dir, kubernetes).start());
  agents.push(...started);
  for (const a of started) await until('the agent checked its node', () => a.count('the Kubernetes node is this VM') > 0, 10_000);
  return started;
}

/** A pod that is not recreated once evicted, taking `terminationDelayMs` to go. */
function addPod(node: string, terminationDelayMs?: number): string {
  const name = `app-${++pods}`;
  kube.addPod({
    name,
    namespace: 'shop',
    nodeName: node,
    labels: { app: name },
    owner: { kind: 'StatefulSet', name },
    ...(terminationDelayMs !== undefined ? { terminationDelayMs } : {}),
  });
  return name;
}

const status = (id: string) => emulator.engine.events().find((e) => e.id === id)?.status;
const reasons = (node: string, since: number) =>
  kube
    .events()
    .slice(since)
    .filter((e) => e.node === node)
    .map((e) => e.reason);

/** The event's id, once the operation on `vms` has made one event naming them all. */
function reboot(...vms: Vm[]): string {
  const id = emulator.engine.createOperation({ type: 'platform-reboot', vms }).events[0]!;
  const event = emulator.engine.events().find((e) => e.id === id)!;
  assert.deepEqual([...event.resources].sort(), [...vms].sort(), 'one event names every VM');
  return id;
}

/** Ends the event and waits until both nodes are uncordoned and carry no prepared mark for it. */
async function endAndRecover(id: string): Promise<void> {
  emulator.engine.complete(id);
  for (const node of Object.values(NODES)) {
    await until(
      `${node} recovered`,
      () => {
        const n = kube.node(node);
        const marks = n.metadata.annotations?.[PREPARED_ANNOTATION] ?? '';
        const cordons = n.metadata.annotations?.['forewarn.io/cordoned-for'] ?? '';
        return n.spec.unschedulable !== true && !marks.includes(id.toLowerCase()) && !cordons.includes(id.toLowerCase());
      },
      15_000,
    );
  }
}

/** A node that an agent once labelled, whose agent is gone (the mark it would write never comes). */
function deadAgentNode(node: string, vm: Vm): void {
  kube.patchNode(node, { metadata: { labels: { [AGENT_LABEL]: 'true' }, annotations: { [VM_NAME_ANNOTATION]: vm } } });
}

describe('kubernetes: an event naming several nodes that run the agent', () => {
  it('is not approved before the slow node has drained; recovery takes the marks off and uncordons both', { timeout: 60_000 }, async () => {
    const [fast, slowAgent] = await startAgents(['web-0', 'web-2']);
    const since = kube.events().length;
    addPod('node-0');
    const slow = addPod('node-2', 4_000);
    const id = reboot('web-0', 'web-2');
    // Watch the event and the slow pod together: the first sight of Started must find node-2 empty.
    const seen = await until(
      'the event Started',
      () => (status(id) === 'Started' ? { slowPodLeft: kube.pod('shop', slow) !== undefined, node2: reasons('node-2', since) } : undefined),
      30_000,
    );
    assert.equal(seen.slowPodLeft, false, `Started while the slow pod was still on node-2 (node-2's events: ${seen.node2.join(', ')})`);
    assert.ok(seen.node2.includes('Drained'), `node-2 drained before the event Started: ${seen.node2.join(', ')}`);
    // Both nodes labelled themselves at start, and each marked itself once prepared.
    for (const [vm, node] of Object.entries(NODES)) {
      const n = kube.node(node);
      assert.equal(n.metadata.labels?.[AGENT_LABEL], 'true');
      assert.equal(n.metadata.annotations?.[VM_NAME_ANNOTATION], vm);
      assert.match(n.metadata.annotations?.[PREPARED_ANNOTATION] ?? '', new RegExp(id.toLowerCase()));
    }
    // The fast node waited, naming the node it waited for.
    const waited = fast!.logs.find(
      (l) => l.eventId === id && l.msg === 'this node is prepared: waiting for the other nodes the event names before approving',
    );
    assert.deepEqual(waited?.waitingFor, ['node-2 (web-2)']);
    assert.ok(slowAgent!.count('every node the event names that runs the agent is prepared: approving for all of them', id) > 0);
    await endAndRecover(id);
  });

  it('with kubernetes.approval leader-only, the leader approves once its own node is drained, as before', { timeout: 60_000 }, async () => {
    await startAgents(['web-0', 'web-2'], { approval: 'leader-only' });
    addPod('node-0');
    const slow = addPod('node-2', 4_000);
    const id = reboot('web-0', 'web-2');
    const slowPodLeft = await until(
      'the event Started',
      () => (status(id) === 'Started' ? { left: kube.pod('shop', slow) !== undefined } : undefined),
      30_000,
    );
    assert.equal(slowPodLeft.left, true, 'Started while node-2 was still draining: the option keeps the old behaviour');
    await until('the slow pod gone', () => kube.pod('shop', slow) === undefined, 10_000);
    await endAndRecover(id);
  });

  it(
    'a named node whose agent is gone holds the event only until the deadline: approved then, with a Warning naming it',
    { timeout: 60_000 },
    async () => {
      deadAgentNode('node-2', 'web-2');
      const since = kube.events().length;
      addPod('node-0');
      const id = reboot('web-0', 'web-2');
      // The deadline (NotBefore less the margin) 4 s from now: the margin is set from this event's NotBefore.
      const notBefore = emulator.engine.events().find((e) => e.id === id)!.notBefore!;
      const marginSeconds = Math.floor((notBefore - Date.now()) / 1000) - 4;
      const [agent] = await startAgents(['web-0'], { marginSeconds });
      await until(
        'node-0 waiting',
        () => agent!.count('this node is prepared: waiting for the other nodes the event names before approving', id) > 0,
        10_000,
      );
      assert.equal(status(id), 'Scheduled', 'not approved while node-2 might still prepare');
      await until('the event Started', () => status(id) === 'Started', 15_000);
      const deadline = agent!.logs.find(
        (l) => l.eventId === id && l.msg === 'the deadline came before every node the event names was prepared: approving anyway',
      );
      assert.deepEqual(deadline?.notPrepared, ['node-2 (web-2)']);
      const warning = kube
        .events()
        .slice(since)
        .find((e) => e.node === 'node-0' && e.reason === 'BarrierDeadline');
      assert.equal(warning?.type, 'Warning');
      assert.match(warning?.message ?? '', /node-2 \(web-2\)/);
      emulator.engine.complete(id);
      await until('node-0 uncordoned', () => kube.node('node-0').spec.unschedulable !== true, 15_000);
      kube.patchNode('node-2', { metadata: { labels: { [AGENT_LABEL]: null }, annotations: { [VM_NAME_ANNOTATION]: null } } });
    },
  );

  it('a named VM whose node does not run the agent is not waited for', { timeout: 60_000 }, async () => {
    // node-2 carries no agent label: as if the DaemonSet did not run there.
    kube.patchNode('node-2', { metadata: { labels: { [AGENT_LABEL]: null }, annotations: { [VM_NAME_ANNOTATION]: null } } });
    const [agent] = await startAgents(['web-0']);
    addPod('node-0');
    const id = reboot('web-0', 'web-2');
    await until('the event Started', () => status(id) === 'Started', 15_000);
    const line = agent!.logs.find(
      (l) => l.eventId === id && l.msg === 'the event names VMs with no node that runs the agent: not waiting for them',
    );
    assert.deepEqual(line?.notWaitedFor, ['web-2']);
    assert.equal(agent!.count('this node is prepared: waiting for the other nodes the event names before approving', id), 0);
    emulator.engine.complete(id);
    await until('node-0 uncordoned', () => kube.node('node-0').spec.unschedulable !== true, 15_000);
  });

  it('a node the event does not name neither waits nor approves', { timeout: 60_000 }, async () => {
    const [, other] = await startAgents(['web-0', 'web-2']);
    const since = kube.events().length;
    addPod('node-0');
    const id = reboot('web-0');
    await until('the event Started', () => status(id) === 'Started', 15_000);
    await until('web-2 decided', () => other!.count('not approving', id) > 0, 10_000);
    const reason = other!.logs.find((l) => l.eventId === id && l.msg === 'not approving')?.reason;
    assert.match(String(reason), /does not name this VM/);
    assert.doesNotMatch(kube.node('node-2').metadata.annotations?.[PREPARED_ANNOTATION] ?? '', new RegExp(id.toLowerCase()), 'not marked');
    // "Readers check Resources" (SPEC §2): another VM's maintenance is no reason to empty this node.
    assert.notEqual(kube.node('node-2').spec.unschedulable, true, 'node-2 is not cordoned for web-0’s event');
    assert.doesNotMatch(kube.node('node-2').metadata.annotations?.['forewarn.io/cordoned-for'] ?? '', new RegExp(id.toLowerCase()));
    assert.equal(other!.count('the event does not name this VM: leaving the node as it is', id), 1);
    assert.deepEqual(
      reasons('node-2', since).filter((r) => r === 'Cordoned' || r === 'Draining'),
      [],
    );
    assert.deepEqual(
      emulator.engine
        .events()
        .find((e) => e.id === id)
        ?.approvals?.map((a) => a.vm),
      ['web-0'],
    );
    await endAndRecover(id);
  });
});
