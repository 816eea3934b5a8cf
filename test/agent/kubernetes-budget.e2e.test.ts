// The Kubernetes budget end to end against a fake API server that decodes and validates as
// kube-apiserver does (test/support/fake-kube/README.md): the emulator as IMDS, two `forewarn agent`
// processes with KUBECONFIG and NODE_NAME, as the DaemonSet runs them, and a budget of one slot. A
// Reboot on each VM: the second node's drain starts only after the first node gave its slot back;
// the Lease was created, renewed while held (renewTime advancing), and given back (holder cleared);
// every Lease write carried MicroTimes with exactly six fractional digits, and nothing the agents
// sent was refused or warned about.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MICRO_TIME } from '../support/fake-kube/gotime.js';
import { startFakeKube, type FakeKube, type RequestRecord } from '../support/fake-kube/server.js';
import { waitFor } from '../support/wait.js';
import { Proc, api, liveEvent, startAgent, startEmulator, trigger, type Emu } from './e2e-support.js';

const NODES = { 'node-a': 'vm-a', 'node-b': 'vm-b' } as const;
type NodeName = keyof typeof NODES;
const NS = 'forewarn';
const LEASE = 'maintenance-0';
const LEASE_PATH = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;
const MINUTE = 60_000;

interface LeaseWrite {
  /** Its place among all requests the fake answered. */
  index: number;
  method: string;
  status: number;
  holder: string | undefined;
  renewTime: unknown;
  acquireTime: unknown;
  /** The stored Lease's resourceVersion after the write (one counter for every object, as etcd's revision). */
  resourceVersion: number;
}

describe('agent e2e: the Kubernetes budget against a strict API server', { skip: process.platform === 'win32' && 'POSIX only' }, () => {
  let dir: string;
  let emu: Emu;
  let kube: FakeKube;

  const config = (node: NodeName) => ({
    endpoint: `${emu.imdsUrl}/vms/${NODES[node]}`,
    pollIntervalSeconds: 0.2,
    journal: join(dir, `${node}.journal.json`),
    listen: '127.0.0.1:0',
    shutdownGraceSeconds: 1,
    rules: [
      {
        name: 'drain',
        match: { eventType: ['Reboot'] },
        actions: [{ type: 'kubernetes', name: 'drain', drain: true, timeoutSeconds: 120 }],
        approval: 'after-actions',
      },
    ],
    kubernetes: {
      marginSeconds: 5,
      readyTimeoutSeconds: 10,
      // The shortest lease the config takes: renewed every 10/3 s while held.
      budget: { slots: 1, namespace: NS, name: 'maintenance', leaseDurationSeconds: 10, minPrepareSeconds: 5 },
    },
  });

  /** The event once it has Started, as the control API shows it. */
  const started = (id: string, what: string) =>
    waitFor(
      what,
      async () => {
        const e = await liveEvent(emu, id);
        return e?.status === 'Started' ? e : undefined;
      },
      60_000,
    );

  async function advance(ms: number): Promise<void> {
    const { status, json } = await api(emu, 'POST', '/v1/clock/advance', { seconds: ms / 1000 });
    assert.equal(status, 200, JSON.stringify(json));
  }

  /** Every write of the slot's Lease the fake took or refused, in order. */
  function leaseWrites(): LeaseWrite[] {
    return kube.requests.flatMap((r: RequestRecord, index) => {
      const ours = (r.method === 'POST' && r.path === LEASE_PATH) || (r.method === 'PUT' && r.path === `${LEASE_PATH}/${LEASE}`);
      if (!ours) return [];
      const body = JSON.parse(r.body) as { metadata?: { name?: string }; spec?: Record<string, unknown> };
      if (body.metadata?.name !== LEASE) return [];
      return [
        {
          index,
          method: r.method,
          status: r.status,
          holder: body.spec?.holderIdentity as string | undefined,
          renewTime: body.spec?.renewTime,
          acquireTime: body.spec?.acquireTime,
          resourceVersion: r.status < 300 ? Number(r.resourceVersion ?? NaN) : NaN,
        },
      ];
    });
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'forewarn-agent-budget-'));
    const fleet = join(dir, 'fleet.yaml');
    writeFileSync(fleet, 'vms:\n  - name: vm-a\n  - name: vm-b\n');
    emu = await startEmulator(['--fleet', fleet]);
    kube = await startFakeKube({ terminationDelayMs: 300, readyDelayMs: 200 });
    kube.addNamespace(NS);
    writeFileSync(join(dir, 'kubeconfig.yaml'), kube.kubeconfigYaml());
    for (const [node, vm] of Object.entries(NODES)) {
      const res = await fetch(`${emu.imdsUrl}/vms/${vm}/metadata/instance/compute?api-version=2021-02-01`, {
        headers: { Metadata: 'true' },
      });
      const { resourceId } = (await res.json()) as { resourceId: string };
      kube.addNode({ name: node, providerID: `azure://${resourceId}` });
      kube.addPod({ name: `agent-${node}`, namespace: NS, nodeName: node, owner: { kind: 'DaemonSet', name: 'forewarn-agent' } });
      kube.addPod({
        name: `web-${node}`,
        namespace: 'shop',
        nodeName: node,
        labels: { app: 'web' },
        owner: { kind: 'ReplicaSet', name: 'web' },
      });
    }
  });

  after(async () => {
    Proc.killAll();
    await emu?.proc.stop().catch(() => undefined);
    await kube?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'serialises two Reboots with one slot: created, renewed while held, given back, six-digit MicroTimes throughout',
    { timeout: 180_000 },
    async (t) => {
      for (const node of Object.keys(NODES) as NodeName[]) {
        await startAgent(join(dir, `${node}.json`), config(node), {
          until: 'the Kubernetes node is this VM',
          env: { KUBECONFIG: join(dir, 'kubeconfig.yaml'), NODE_NAME: node },
        });
      }
      const ids = {} as Record<NodeName, string>;
      for (const [node, vm] of Object.entries(NODES) as [NodeName, string][])
        ids[node] = await trigger(emu, { type: 'platform-reboot', vms: [vm] });

      // One node takes the slot (a Lease it creates) and is cordoned; the other waits.
      const first = await waitFor(
        () => `a node holding the slot; its Lease writes so far: ${JSON.stringify(leaseWrites())}`,
        () => {
          const holder = kube.lease(NS, LEASE)?.spec?.holderIdentity;
          return holder === 'node-a' || holder === 'node-b' ? (holder as NodeName) : undefined;
        },
        20_000,
      );
      const second: NodeName = first === 'node-a' ? 'node-b' : 'node-a';
      await started(ids[first], 'the first node approved');
      // Held through the Reboot: renewed at least once before the event ends.
      await waitFor(
        () => `a renewal of the slot by ${first}; writes so far: ${JSON.stringify(leaseWrites())}`,
        () => leaseWrites().filter((w) => w.method === 'PUT' && w.holder === first && w.status === 200).length >= 1,
        15_000,
      );
      assert.equal(kube.node(second).spec.unschedulable ?? false, false, 'the second node waits, uncordoned');
      assert.deepEqual(
        kube.evictions.filter((e) => e.nodeName === second),
        [],
        'and undrained',
      );
      assert.equal((await liveEvent(emu, ids[second]))?.status, 'Scheduled');

      // The first Reboot ends: the first node is uncordoned, Ready, and gives the slot back; the second takes it.
      await advance(11 * MINUTE);
      await started(ids[second], 'the second node approved');
      await advance(11 * MINUTE);
      await waitFor(
        'both nodes uncordoned and the slot free',
        () =>
          !kube.node('node-a').spec.unschedulable &&
          !kube.node('node-b').spec.unschedulable &&
          kube.lease(NS, LEASE)?.spec?.holderIdentity === '' &&
          leaseWrites().some((w) => w.holder === second),
        40_000,
      );

      const writes = leaseWrites();
      const summary = JSON.stringify(writes);
      // Every write carried six-digit MicroTimes and was taken (a 409 would be a lost race, not a refusal).
      for (const w of writes) {
        assert.match(String(w.renewTime), MICRO_TIME, `renewTime as written: ${summary}`);
        if (w.acquireTime !== undefined) assert.match(String(w.acquireTime), MICRO_TIME, `acquireTime as written: ${summary}`);
        assert.ok(w.status === 200 || w.status === 201 || w.status === 409, `a Lease write refused: ${summary}`);
      }
      const taken = writes.filter((w) => w.status < 300);
      // Created by the first holder, then renewed by it with renewTime advancing, then given back.
      assert.deepEqual([taken[0]?.method, taken[0]?.status, taken[0]?.holder], ['POST', 201, first], summary);
      const release = taken.findIndex((w) => w.holder === '');
      assert.ok(release > 1, `created, renewed, then given back: ${summary}`);
      const held = taken.slice(0, release);
      assert.ok(
        held.every((w) => w.holder === first),
        summary,
      );
      const renewed = held.map((w) => Date.parse(String(w.renewTime)));
      for (let i = 1; i < renewed.length; i++) assert.ok(renewed[i]! > renewed[i - 1]!, `renewTime advances while held: ${summary}`);
      assert.ok(held.length >= 2, `at least one renewal: ${summary}`);
      // Then the second node took it, and gave it back at the end.
      const next = taken.slice(release + 1);
      assert.equal(next[0]?.holder, second, summary);
      assert.equal(next.at(-1)?.holder, '', summary);

      // The second node's drain started only after the first gave the slot back: in the order the
      // fake answered requests, and by the store's revision against the second node's Draining event.
      const releasedAt = taken[release]!;
      const evicted = new Set(kube.evictions.filter((e) => e.nodeName === second).map((e) => `${e.namespace}/${e.pod}`));
      assert.ok(evicted.has(`shop/web-${second}`), 'the second node was drained');
      const firstEviction = kube.requests.findIndex((r) => {
        const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/eviction$/.exec(r.path);
        return m !== null && evicted.has(`${m[1]}/${m[2]}`);
      });
      assert.ok(
        releasedAt.index < firstEviction,
        `released (request ${releasedAt.index}) before the second drain (request ${firstEviction})`,
      );
      const draining = kube.events({ node: second, reason: 'Draining' })[0];
      assert.ok(draining, 'a Draining event on the second node');
      assert.ok(
        releasedAt.resourceVersion < Number(draining.object.metadata.resourceVersion),
        'released before the second node said it was draining',
      );
      const cordoned = kube.events({ node: second, reason: 'Cordoned' })[0];
      assert.ok(cordoned && releasedAt.resourceVersion < Number(cordoned.object.metadata.resourceVersion), 'and before it was cordoned');

      t.diagnostic(
        `Lease writes: ${taken.map((w) => `${w.method} ${w.holder === '' ? '(free)' : w.holder} ${String(w.renewTime)}`).join(' | ')}`,
      );

      // Nothing the agents sent was refused as malformed or invalid, or taken with a warning.
      const refused = kube.requests.filter((r) => [400, 413, 415, 422, 500].includes(r.status) || r.warnings.length > 0);
      assert.deepEqual(
        refused.map((r) => `${r.method} ${r.path} ${r.status} ${r.warnings.join('; ')}`),
        [],
      );
    },
  );
});
