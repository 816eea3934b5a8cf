// The agent on two Kubernetes nodes, end to end: the emulator as IMDS, the fake API server as the
// cluster, and `forewarn agent` processes with KUBECONFIG and NODE_NAME, as the DaemonSet runs them.
// In order: a budget of 1 serialises two Reboots, with one agent SIGKILLed mid-drain and restarted;
// a PodDisruptionBudget that never allows a disruption fails the drain (never approved, uncordoned
// after the event); a node an operator cordoned stays cordoned; a Preempt (30 s notice) is cordoned,
// drained and approved within its notice; one event naming two nodes (one slow to drain, its agent
// SIGKILLed after cordoning) is approved only once both are drained (the barrier). The agents run
// under deploy/kubernetes's RBAC, enforced, and use every permission it grants and no other.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeKube, type FakeKube } from '../support/fake-kube/server.js';
import { GRANTS, loadManifests } from '../support/deploy-manifests.js';
import { waitFor } from '../support/wait.js';
import {
  Proc,
  api,
  liveEvent,
  liveEvents,
  metric,
  startAgent,
  startEmulator,
  trigger,
  type Emu,
  type EmuEvent,
  type RunningAgent,
} from './e2e-support.js';

const NODES = { 'node-a': 'vm-a', 'node-b': 'vm-b' } as const;
/** Two VMs of one tenant: an operation on both makes one event naming both. */
const PAIR = { 'node-c': 'vm-c', 'node-d': 'vm-d' } as const;
const VMS = { ...NODES, ...PAIR } as const;
type NodeName = keyof typeof VMS;
const NS = 'forewarn';
const MINUTE = 60_000;

describe('agent e2e: Kubernetes nodes', { skip: process.platform === 'win32' && 'POSIX only' }, () => {
  let dir: string;
  let emu: Emu;
  let kube: FakeKube;
  const agents = new Map<NodeName, RunningAgent>();

  const budget = { slots: 1, namespace: NS, name: 'maintenance', leaseDurationSeconds: 30, minPrepareSeconds: 5 };

  /** The agent config of one node: every Reboot and Preempt drained, a budget of 1 (unless `slots` says otherwise). */
  const config = (node: NodeName, drainTimeoutSeconds = 120, budgetOf: typeof budget = budget) => ({
    endpoint: `${emu.imdsUrl}/vms/${VMS[node]}`,
    pollIntervalSeconds: 0.2,
    journal: join(dir, `${node}.journal.json`),
    listen: '127.0.0.1:0',
    shutdownGraceSeconds: 1,
    rules: [
      {
        name: 'drain',
        match: { eventType: ['Reboot', 'Redeploy', 'Preempt', 'Terminate'] },
        actions: [{ type: 'kubernetes', name: 'drain', drain: true, timeoutSeconds: drainTimeoutSeconds }],
        approval: 'after-actions',
      },
    ],
    kubernetes: {
      marginSeconds: 5,
      taint: 'forewarn.io/maintenance={type}:NoSchedule',
      readyTimeoutSeconds: 10,
      budget: budgetOf,
    },
  });

  async function start(node: NodeName, drainTimeoutSeconds?: number, budgetOf?: typeof budget): Promise<RunningAgent> {
    const agent = await startAgent(join(dir, `${node}.json`), config(node, drainTimeoutSeconds, budgetOf), {
      until: 'the Kubernetes node is this VM',
      env: { KUBECONFIG: join(dir, 'kubeconfig.yaml'), NODE_NAME: node },
    });
    agents.set(node, agent);
    return agent;
  }

  /** Moves the emulator's manual clock (the agents' own clocks are real). */
  async function advance(ms: number): Promise<void> {
    const { status, json } = await api(emu, 'POST', '/v1/clock/advance', { seconds: ms / 1000 });
    assert.equal(status, 200, JSON.stringify(json));
  }

  /** The event once it has Started (approved, or past NotBefore), as the control API shows it. */
  const started = (id: string, what: string, timeoutMs = 60_000) =>
    waitFor(
      what,
      async () => {
        const e = await liveEvent(emu, id);
        return e?.status === 'Started' ? e : undefined;
      },
      timeoutMs,
    );
  const reasons = (node: NodeName) => kube.events({ node }).map((e) => e.reason);
  const webPods = (node: NodeName) => kube.pods(node).filter((p) => p.metadata.labels?.app === 'web');

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'forewarn-agent-kube-'));
    const fleet = join(dir, 'fleet.yaml');
    writeFileSync(
      fleet,
      'vms:\n  - name: vm-a\n  - name: vm-b\n    priority: Spot\n  - name: vm-c\n    tenant: pair\n  - name: vm-d\n    tenant: pair\n',
    );
    emu = await startEmulator(['--fleet', fleet]);
    kube = await startFakeKube({
      terminationDelayMs: 400,
      readyDelayMs: 300,
      rbac: { subject: { kind: 'ServiceAccount', namespace: NS, name: 'forewarn-agent' } },
    });
    assert.deepEqual(kube.apply(loadManifests().map((m) => m.object)), [], 'deploy/kubernetes applies');
    writeFileSync(join(dir, 'kubeconfig.yaml'), kube.kubeconfigYaml());
    for (const [node, vm] of Object.entries(VMS)) {
      const res = await fetch(`${emu.imdsUrl}/vms/${vm}/metadata/instance/compute?api-version=2021-02-01`, {
        headers: { Metadata: 'true' },
      });
      const { resourceId } = (await res.json()) as { resourceId: string };
      kube.addNode({ name: node, providerID: `azure://${resourceId}` });
      kube.addPod({ name: `agent-${node}`, namespace: NS, nodeName: node, owner: { kind: 'DaemonSet', name: 'forewarn-agent' } });
    }
    // Three replicas of web, two on node-a; a budget allowing one of them down at a time.
    for (const [i, node] of (['node-a', 'node-a', 'node-b'] as const).entries()) {
      kube.addPod({
        name: `web-${i}`,
        namespace: 'shop',
        nodeName: node,
        labels: { app: 'web' },
        owner: { kind: 'ReplicaSet', name: 'web' },
      });
    }
    kube.addPdb({ name: 'web', namespace: 'shop', matchLabels: { app: 'web' }, maxUnavailable: 1 });
  });

  after(async () => {
    Proc.killAll();
    await emu?.proc.stop().catch(() => undefined);
    await kube?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to start on a node that is not its VM, saying which', async () => {
    writeFileSync(join(dir, 'wrong.json'), JSON.stringify(config('node-a')));
    const proc = new Proc(['agent', '--config', join(dir, 'wrong.json')], {
      KUBECONFIG: join(dir, 'kubeconfig.yaml'),
      NODE_NAME: 'node-b',
    });
    const code = await proc.exited;
    assert.notEqual(code, 0);
    assert.match(
      proc.stdout + proc.stderr,
      /node node-b \(NODE_NAME or kubernetes.nodeName\) is not this VM: its spec.providerID is azure:\/\/.*vm-b, but IMDS describes .*vm-a/,
    );
    assert.equal(kube.node('node-b').spec?.unschedulable ?? false, false, 'nothing touched');
  });

  it('with a budget of 1, prepares two nodes one after the other, through a SIGKILL mid-drain', { timeout: 180_000 }, async () => {
    await start('node-a');
    await start('node-b');
    const ids: Record<string, string> = {};
    for (const [node, vm] of Object.entries(NODES)) ids[node] = await trigger(emu, { type: 'platform-reboot', vms: [vm] });

    const first = await waitFor(
      'one node cordoned',
      () => (Object.keys(NODES) as NodeName[]).find((n) => kube.node(n).spec?.unschedulable === true),
      20_000,
    );
    const second: NodeName = first === 'node-a' ? 'node-b' : 'node-a';
    assert.equal(kube.node(second).spec?.unschedulable ?? false, false, 'the other node waits for the slot');
    assert.equal(kube.lease(NS, 'maintenance-0')?.spec?.holderIdentity, first);

    // SIGKILL the first agent once its drain has begun, and start it again.
    await waitFor('an eviction on the first node', () => kube.evictions.find((e) => e.nodeName === first && e.status === 201), 20_000);
    await agents.get(first)!.proc.stop('SIGKILL');
    await start(first);

    const approved = await started(ids[first]!, 'the first node approved');
    assert.deepEqual(
      approved.approvals.map((a) => a.vm),
      [VMS[first]],
      'approved once',
    );
    assert.ok(webPods(first).length === 0, 'no web pod left on the drained node');
    assert.ok(
      kube.pods(first).some((p) => p.metadata.name === `agent-${first}`),
      'the DaemonSet pod stays',
    );
    assert.equal(kube.node(second).spec?.unschedulable ?? false, false, 'the second node still waits: the slot is held through the reboot');

    // The first Reboot ends (about 10 minutes after it started): the first node is uncordoned and its slot freed.
    await advance(11 * MINUTE);
    const secondStarted = await started(ids[second]!, 'the second node approved');
    assert.deepEqual(
      secondStarted.approvals.map((a) => a.vm),
      [VMS[second]],
    );
    const at = (node: NodeName, reason: string) => kube.events().findIndex((e) => e.node === node && e.reason === reason);
    assert.ok(
      at(first, 'Uncordoned') >= 0 && at(first, 'Uncordoned') < at(second, 'Cordoned'),
      'the second node is cordoned after the first is uncordoned',
    );
    const steps = reasons(first);
    assert.equal(steps.filter((r) => r === 'Cordoned').length, 1, 'cordoned once, through the restart');
    assert.equal(steps[0], 'Cordoned');
    assert.equal(steps.filter((r) => r === 'Approved').length, 1);
    assert.equal(steps.at(-1), 'Uncordoned');
    assert.ok(steps.indexOf('Drained') < steps.indexOf('Approved'), 'approved once drained');
    assert.equal(kube.node(first).spec?.unschedulable ?? false, false);
    // Let the second Reboot end too, so the next test starts with both nodes free.
    await advance(11 * MINUTE);
    await waitFor('the second node uncordoned', () => (kube.node(second).spec?.unschedulable ? undefined : true), 30_000);
    await waitFor('the slot free', () => (kube.lease(NS, 'maintenance-0')?.spec?.holderIdentity ? undefined : true), 30_000);
  });

  it(
    'a PodDisruptionBudget that allows nothing fails the drain: reported, never approved, uncordoned after the event',
    { timeout: 120_000 },
    async () => {
      await agents.get('node-a')!.proc.stop();
      await start('node-a', 6);
      kube.addPod({
        name: 'db-0',
        namespace: 'shop',
        nodeName: 'node-a',
        labels: { app: 'db' },
        owner: { kind: 'StatefulSet', name: 'db' },
      });
      kube.addPdb({ name: 'db', namespace: 'shop', matchLabels: { app: 'db' }, minAvailable: 1 });
      const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm-a'] });
      const agent = agents.get('node-a')!;
      await agent.proc.waitForLog('the drain failing', (l) => /drain deadline passed/.test(String(l.error ?? l.msg ?? '')), 30_000);
      // The agent logs the failure, then posts the Warning event: wait for it rather than race it.
      const warning = await waitFor(
        'a Warning event on the node',
        () => kube.events({ node: 'node-a' }).find((e) => e.reason === 'DrainFailed' && e.type === 'Warning'),
        10_000,
      );
      assert.match(warning.message, /shop\/db-0 \(PodDisruptionBudget db: /);
      assert.ok(kube.evictions.filter((e) => e.pod === 'db-0' && e.status === 429).length >= 2, 'retried with backoff');
      const event = await liveEvent(emu, id);
      assert.equal(event?.status, 'Scheduled');
      assert.deepEqual(event?.approvals, [], 'never approved');
      assert.ok(kube.node('node-a').spec?.unschedulable, 'cordoned while the event is pending');
      assert.equal(await metric(agent, 'forewarn_agent_kubernetes_drain_failures_total', '{reason="deadline"}'), 1);
      // The VM reboots: the agent is gone while the event starts at NotBefore, as Azure scheduled it, and ends.
      await agent.proc.stop('SIGKILL');
      await advance(16 * MINUTE);
      await advance(11 * MINUTE);
      assert.equal(await liveEvent(emu, id), undefined, 'the event is over');
      assert.ok(kube.node('node-a').spec?.unschedulable, 'still cordoned while the agent is down');
      // Back up, the agent finds the event ended while it was away, and uncordons.
      await start('node-a');
      await waitFor('node-a uncordoned', () => (kube.node('node-a').spec?.unschedulable ? undefined : true), 30_000);
      await waitFor('the slot given back', () => (kube.lease(NS, 'maintenance-0')?.spec?.holderIdentity ? undefined : true), 30_000);
      kube.removePod('shop', 'db-0');
    },
  );

  it('a node an operator cordoned stays cordoned', { timeout: 120_000 }, async () => {
    kube.patchNode('node-b', { spec: { unschedulable: true } });
    const since = kube.events().length;
    const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm-b'] });
    await started(id, 'node-b approved');
    await advance(11 * MINUTE);
    // This event's recovery: the agent logged the same line for node-b's earlier Reboot.
    await agents.get('node-b')!.proc.waitForLog('the recovery', (l) => l.msg === 'done with this event' && l.eventId === id, 30_000);
    assert.equal(kube.node('node-b').spec?.unschedulable, true, 'still cordoned');
    const approved = () =>
      kube
        .events()
        .slice(since)
        .some((e) => e.node === 'node-b' && e.reason === 'Approved');
    await waitFor('the Approved event on node-b', () => (approved() ? true : undefined), 10_000);
    const steps = kube
      .events()
      .slice(since)
      .filter((e) => e.node === 'node-b')
      .map((e) => e.reason);
    assert.ok(steps.includes('Drained') && steps.includes('Approved'), `drained and approved: ${steps.join(', ')}`);
    assert.ok(
      !steps.includes('Cordoned') && !steps.includes('Uncordoned'),
      `neither cordoned nor uncordoned by Forewarn: ${steps.join(', ')}`,
    );
    kube.patchNode('node-b', { spec: { unschedulable: false } });
  });

  it('a Preempt (30 s notice) is cordoned, drained and approved within its notice', { timeout: 90_000 }, async () => {
    kube.addPod({
      name: 'web-late',
      namespace: 'shop',
      nodeName: 'node-b',
      labels: { app: 'web' },
      owner: { kind: 'ReplicaSet', name: 'web' },
    });
    const since = kube.events().length;
    const id = await trigger(emu, { type: 'spot-eviction', vms: ['vm-b'] });
    const notBefore = Date.parse((await liveEvent(emu, id))!.notBefore!);
    await started(id, 'the Preempt approved', 40_000);
    assert.ok(Date.now() < notBefore, 'approved before NotBefore');
    assert.equal(webPods('node-b').length, 0, 'drained');
    // Posted right after IMDS took the approval, so it may trail the Started document a little.
    await waitFor(
      'the Approved event on node-b',
      () =>
        kube
          .events()
          .slice(since)
          .some((e) => e.node === 'node-b' && e.reason === 'Approved')
          ? true
          : undefined,
      10_000,
    );
    const agent = agents.get('node-b')!;
    assert.ok((await metric(agent, 'forewarn_agent_kubernetes_steps_total', '{step="drained"}')) >= 1);
    assert.ok((await metric(agent, 'forewarn_agent_kubernetes_evictions_total', '{outcome="evicted"}')) >= 1);
  });

  it(
    'one event naming two nodes is approved only once both drained, through a slow drain and a SIGKILL after cordoning',
    { timeout: 180_000 },
    async () => {
      // Their own budget, with room for both: a node waiting for a slot would wait until near NotBefore.
      const pairBudget = { ...budget, slots: 2, name: 'pair' };
      await start('node-c', undefined, pairBudget);
      await start('node-d', undefined, pairBudget);
      const since = kube.events().length;
      // node-d drains slowly: its pod takes 8 s to terminate once evicted. node-c's goes at once, and
      // vm-c comes first in Resources: the leader `first` picks, which used to approve on its own drain.
      for (const [node, name, terminationDelayMs] of [
        ['node-c', 'batch-quick', 300],
        ['node-d', 'batch-slow', 8_000],
      ] as const) {
        kube.addPod({
          name,
          namespace: 'jobs',
          nodeName: node,
          labels: { app: name },
          owner: { kind: 'StatefulSet', name },
          terminationDelayMs,
        });
      }
      const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm-c', 'vm-d'] });
      const event = (await liveEvents(emu)).find((e) => e.id === id) as (EmuEvent & { resources: string[] }) | undefined;
      assert.deepEqual([...(event?.resources ?? [])].sort(), ['vm-c', 'vm-d'], 'one event names both VMs');

      // Watched from here to the start: the first sight of Started must find node-d empty.
      let startedWithPodLeft: boolean | null = null;
      const watching = waitFor(
        'the pair event Started',
        async () => {
          const podLeft = kube.pod('jobs', 'batch-slow') !== undefined;
          if ((await liveEvent(emu, id))?.status !== 'Started') return undefined;
          startedWithPodLeft = podLeft;
          return true;
        },
        120_000,
        50,
      );

      // node-d's agent is SIGKILLed once it has cordoned its node and its slow eviction has begun.
      await waitFor('node-d cordoned', () => (kube.node('node-d').spec?.unschedulable ? true : undefined), 20_000);
      await waitFor('the slow eviction', () => kube.evictions.find((e) => e.pod === 'batch-slow' && e.status === 201), 20_000);
      await agents.get('node-d')!.proc.stop('SIGKILL');
      // node-c drained in a moment, and waits for node-d rather than approve.
      const waiting = await agents
        .get('node-c')!
        .proc.waitForLog(
          'node-c waiting at the barrier',
          (l) => l.eventId === id && l.msg === 'this node is prepared: waiting for the other nodes the event names before approving',
          20_000,
        );
      assert.deepEqual(waiting.waitingFor, ['node-d (vm-d)']);
      assert.equal((await liveEvent(emu, id))?.status, 'Scheduled', 'not approved while node-d is down and draining');

      // Back up, node-d's agent carries on from the journal and the node: no second cordon, the drain finishes.
      const restarted = await start('node-d', undefined, pairBudget);
      await watching;
      assert.equal(startedWithPodLeft, false, 'Started only once the slow pod was gone');
      await restarted.proc.waitForLog(
        'node-d running its interrupted drain again',
        (l) => l.eventId === id && l.msg === 'this action was interrupted (the agent stopped while it ran): running it again',
        10_000,
      );
      const after = await liveEvent(emu, id);
      assert.ok(after !== undefined && after.approvals.length >= 1, 'approved by a node it names');
      assert.ok(
        after.approvals.every((a) => a.vm === 'vm-c' || a.vm === 'vm-d'),
        `approved by the named nodes: ${JSON.stringify(after.approvals)}`,
      );
      // Posted right after IMDS took the approval, so it may trail the Started document a little.
      const approvedOnPair = (e: { node: string | null; reason: string }) =>
        (e.node === 'node-c' || e.node === 'node-d') && e.reason === 'Approved';
      await waitFor(
        'the Approved event on a node of the pair',
        () => (kube.events().slice(since).some(approvedOnPair) ? true : undefined),
        10_000,
      );
      const events = kube.events().slice(since);
      const index = (node: string, reason: string) => events.findIndex((e) => e.node === node && e.reason === reason);
      const firstApproved = events.findIndex(approvedOnPair);
      for (const node of Object.keys(PAIR)) {
        assert.ok(index(node, 'Drained') >= 0 && index(node, 'Drained') < firstApproved, `${node} drained before the approval`);
      }
      assert.equal(
        events.filter((e) => e.node === 'node-d' && e.reason === 'Cordoned').length,
        1,
        'node-d cordoned once, through the restart',
      );
      assert.ok(!events.some((e) => e.reason === 'BarrierDeadline'), 'approved before the deadline');
      for (const node of Object.keys(PAIR) as NodeName[]) {
        assert.match(kube.node(node).metadata.annotations?.['forewarn.io/prepared-for'] ?? '', new RegExp(id.toLowerCase()));
      }

      // The Reboot ends: both nodes are uncordoned and lose their prepared marks.
      await advance(11 * MINUTE);
      for (const node of Object.keys(PAIR) as NodeName[]) {
        await agents.get(node)!.proc.waitForLog(`${node} recovered`, (l) => l.msg === 'done with this event' && l.eventId === id, 30_000);
        const n = kube.node(node);
        assert.equal(n.spec?.unschedulable ?? false, false, `${node} uncordoned`);
        assert.equal(n.metadata.annotations?.['forewarn.io/prepared-for'], undefined, `${node} no longer marked`);
        assert.ok(reasons(node).includes('Uncordoned'), `${node}: Uncordoned`);
      }
    },
  );

  it('used every permission deploy/kubernetes grants, and no other', () => {
    const forbidden = kube.requests.filter((r) => r.status === 403);
    assert.deepEqual(forbidden, [], 'no request was refused');
    const covers = (g: (typeof GRANTS)[number], p: { verb: string; group: string; resource: string; namespace: string | null }) =>
      g.verb === p.verb && g.group === p.group && g.resource === p.resource && (g.scope === '*' || g.scope === p.namespace);
    const used = kube.permissionsUsed();
    for (const p of used)
      assert.ok(
        GRANTS.some((g) => covers(g, p)),
        `used but not granted: ${JSON.stringify(p)}`,
      );
    for (const g of GRANTS)
      assert.ok(
        used.some((p) => covers(g, p)),
        `granted but never used: ${JSON.stringify(g)}`,
      );
  });
});
