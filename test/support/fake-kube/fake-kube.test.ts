// The fake API server, driven by the real @kubernetes/client-node, so it is proven to speak the
// client's dialect: paths, patch types, Status bodies on errors and the codes ApiException reports.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ApiException,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  EventsV1Api,
  KubeConfig,
  PatchStrategy,
  PolicyV1Api,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  V1MicroTime,
  type V1Lease,
} from '@kubernetes/client-node';
import { startFakeKube, type FakeKube, type PodView } from './server.js';
import { objectProblems } from './schema.js';
import { waitFor } from '../wait.js';

function clients(kube: FakeKube, token?: string) {
  const kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfigYaml(token ? { token } : {}));
  return {
    core: kc.makeApiClient(CoreV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    policy: kc.makeApiClient(PolicyV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    rbac: kc.makeApiClient(RbacAuthorizationV1Api),
    events: kc.makeApiClient(EventsV1Api),
  };
}

interface StatusBody {
  kind: string;
  status: string;
  message: string;
  reason: string;
  code: number;
  details?: { causes?: { reason: string; message: string }[] };
}

/** The ApiException a call throws, with its Status body parsed. */
async function apiError(call: Promise<unknown>): Promise<{ code: number; status: StatusBody }> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof ApiException, `expected an ApiException, got ${String(err)}`);
    assert.equal(typeof err.body, 'string', 'client-node hands over the body as text');
    return { code: err.code, status: JSON.parse(err.body as string) as StatusBody };
  }
  assert.fail('expected the call to fail');
}

function eviction(name: string, namespace: string, gracePeriodSeconds?: number) {
  return {
    name,
    namespace,
    body: {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name, namespace },
      ...(gracePeriodSeconds !== undefined ? { deleteOptions: { gracePeriodSeconds } } : {}),
    },
  };
}

const rs = { kind: 'ReplicaSet', name: 'web-7d4f9' };

describe('fake Kubernetes API server', () => {
  let kube: FakeKube;
  let api: ReturnType<typeof clients>;

  before(async () => {
    kube = await startFakeKube({ terminationDelayMs: 60, readyDelayMs: 60 });
    api = clients(kube, 'agent-token');
    kube.addNode({ name: 'n1', providerID: 'azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-1' });
    kube.addNode({ name: 'n2' });
    kube.addNode({ name: 'n3', unschedulable: true });
    kube.addNamespace('forewarn');
  });

  after(() => kube.close());

  it('serves nodes: get, merge patch, strategic merge patch, JSON patch with test', async () => {
    const node = await api.core.readNode({ name: 'n1' });
    assert.equal(node.metadata?.name, 'n1');
    assert.match(node.spec?.providerID ?? '', /^azure:\/\/\//);
    assert.equal(node.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    const rv = node.metadata!.resourceVersion!;

    const merged = await api.core.patchNode(
      { name: 'n1', body: { spec: { unschedulable: true }, metadata: { annotations: { 'forewarn.dev/cordoned-for': 'e1' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.equal(merged.spec?.unschedulable, true);
    assert.equal(merged.metadata?.annotations?.['forewarn.dev/cordoned-for'], 'e1');
    assert.notEqual(merged.metadata?.resourceVersion, rv, 'each write bumps resourceVersion');
    assert.equal(kube.node('n1').spec.unschedulable, true);

    const taint = { key: 'forewarn.dev/maintenance', value: 'Reboot', effect: 'NoSchedule' };
    const strategic = await api.core.patchNode(
      { name: 'n1', body: { spec: { taints: [taint] } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    assert.deepEqual(
      strategic.spec?.taints?.map((t) => ({ ...t })),
      [taint],
    );

    const current = kube.node('n1').metadata.resourceVersion;
    const patched = await api.core.patchNode(
      {
        name: 'n1',
        body: [
          { op: 'test', path: '/metadata/resourceVersion', value: current },
          { op: 'replace', path: '/spec/unschedulable', value: false },
          { op: 'remove', path: '/spec/taints' },
          { op: 'remove', path: '/metadata/annotations/forewarn.dev~1cordoned-for' },
        ],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    assert.equal(patched.spec?.unschedulable, false);
    assert.equal(patched.spec?.taints, undefined);
    assert.equal(patched.metadata?.annotations?.['forewarn.dev/cordoned-for'], undefined);

    // A stale resourceVersion in a test op: 422, and nothing changed.
    const stale = await apiError(
      api.core.patchNode(
        {
          name: 'n1',
          body: [
            { op: 'test', path: '/metadata/resourceVersion', value: current },
            { op: 'add', path: '/spec/unschedulable', value: true },
          ],
        },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      ),
    );
    assert.equal(stale.code, 422);
    assert.equal(stale.status.reason, 'Invalid');
    assert.equal(kube.node('n1').spec.unschedulable, false);

    const missing = await apiError(api.core.readNode({ name: 'nope' }));
    assert.equal(missing.code, 404);
    assert.deepEqual(
      { kind: missing.status.kind, status: missing.status.status, reason: missing.status.reason, message: missing.status.message },
      { kind: 'Status', status: 'Failure', reason: 'NotFound', message: 'nodes "nope" not found' },
    );
    assert.equal(kube.requests.at(-1)?.token, 'agent-token', 'the bearer token is recorded');
  });

  it('lists pods by fieldSelector and labelSelector, and refuses an unsupported field label', async () => {
    kube.addPod({ name: 'list-a', namespace: 'shop', nodeName: 'n1', labels: { app: 'list', tier: 'x' } });
    kube.addPod({ name: 'list-b', namespace: 'shop', nodeName: 'n2', labels: { app: 'list', tier: 'y' } });
    kube.addPod({ name: 'static', namespace: 'kube-system', nodeName: 'n1', mirror: true, emptyDir: true });
    const onN1 = await api.core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=n1' });
    assert.deepEqual(onN1.items.map((p) => p.metadata?.name).sort(), ['list-a', 'static']);
    const mirror = onN1.items.find((p) => p.metadata?.name === 'static')!;
    assert.ok(mirror.metadata?.annotations?.['kubernetes.io/config.mirror']);
    assert.ok(mirror.spec?.volumes?.some((v) => v.emptyDir !== undefined));
    assert.ok(mirror.metadata?.uid);
    const tierY = await api.core.listNamespacedPod({ namespace: 'shop', labelSelector: 'app=list,tier=y' });
    assert.deepEqual(
      tierY.items.map((p) => p.metadata?.name),
      ['list-b'],
    );
    const one = await api.core.readNamespacedPod({ name: 'list-a', namespace: 'shop' });
    assert.equal(one.spec?.nodeName, 'n1');
    assert.equal(one.status?.phase, 'Running');
    assert.equal(one.spec?.terminationGracePeriodSeconds, 30);
    const bad = await apiError(api.core.listPodForAllNamespaces({ fieldSelector: 'spec.host=n1' }));
    assert.equal(bad.code, 400);
    assert.match(bad.status.message, /field label not supported: spec\.host/);
    // The fake's own objects pass the schema checks its clients' writes get.
    for (const object of [kube.node('n1'), ...kube.pods()]) assert.deepEqual(objectProblems(object), []);
  });

  it('evicts: 201, the pod terminates with the given grace, is gone after its delay and its ReplicaSet recreates it elsewhere', async () => {
    kube.addPod({ name: 'web-7d4f9-aaaaa', namespace: 'shop', nodeName: 'n1', labels: { app: 'web' }, owner: rs, terminationDelayMs: 300 });
    await api.core.createNamespacedPodEviction(eviction('web-7d4f9-aaaaa', 'shop', 5));
    const terminating = kube.pod('shop', 'web-7d4f9-aaaaa')!;
    assert.ok(terminating.metadata.deletionTimestamp, 'terminating');
    assert.equal(terminating.metadata.deletionGracePeriodSeconds, 5);
    // Evicting it again answers 201 without restarting its clock.
    await api.core.createNamespacedPodEviction(eviction('web-7d4f9-aaaaa', 'shop'));
    assert.equal(kube.pod('shop', 'web-7d4f9-aaaaa')!.metadata.deletionTimestamp, terminating.metadata.deletionTimestamp);
    await waitFor('the evicted pod gone', () => kube.pod('shop', 'web-7d4f9-aaaaa') === undefined, 5_000);
    const replacement = await waitFor('a replacement', () => kube.pods().find((p) => p.metadata.labels?.app === 'web'), 5_000);
    assert.match(replacement.metadata.name, /^web-7d4f9-[a-z0-9]{5}$/);
    assert.notEqual(replacement.metadata.uid, terminating.metadata.uid);
    assert.equal(replacement.spec.nodeName, 'n2', 'n1 had more pods, n3 is cordoned');
    await waitFor(
      'the replacement Ready',
      () => kube.pod('shop', replacement.metadata.name)?.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      5_000,
    );
    assert.deepEqual(
      kube.evictions.filter((e) => e.pod === 'web-7d4f9-aaaaa').map((e) => [e.nodeName, e.status]),
      [
        ['n1', 201],
        ['n1', 201],
      ],
    );
    kube.removePod('shop', replacement.metadata.name);
  });

  it('refuses an eviction a PodDisruptionBudget forbids with 429 and its cause, and allows it once the replacement is Ready', async () => {
    kube.addPod({ name: 'db-1', namespace: 'data', nodeName: 'n1', labels: { app: 'db' }, owner: { kind: 'ReplicaSet', name: 'db' } });
    kube.addPod({ name: 'db-2', namespace: 'data', nodeName: 'n2', labels: { app: 'db' }, owner: { kind: 'ReplicaSet', name: 'db' } });
    // Created through the API, as a manifest would be, and listed back.
    await api.policy.createNamespacedPodDisruptionBudget({
      namespace: 'data',
      body: {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'db' },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } },
      },
    });
    const budgets = await api.policy.listNamespacedPodDisruptionBudget({ namespace: 'data' });
    assert.deepEqual(
      budgets.items.map((b) => b.metadata?.name),
      ['db'],
    );

    await api.core.createNamespacedPodEviction(eviction('db-1', 'data'));
    const refused = await apiError(api.core.createNamespacedPodEviction(eviction('db-2', 'data')));
    assert.equal(refused.code, 429);
    assert.equal(refused.status.reason, 'TooManyRequests');
    assert.equal(refused.status.message, "Cannot evict pod as it would violate the pod's disruption budget.");
    assert.deepEqual(refused.status.details?.causes, [
      { reason: 'DisruptionBudget', message: 'The disruption budget db needs 1 healthy pods and has 1 currently' },
    ]);
    assert.equal(kube.pod('data', 'db-2')?.metadata.deletionTimestamp, undefined, 'still running');

    const ready = (p: PodView) =>
      p.metadata.deletionTimestamp === undefined && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    await waitFor(
      'db-1 replaced and Ready',
      () => kube.pods().filter((p) => p.metadata.labels?.app === 'db' && ready(p)).length === 2,
      5_000,
    );
    assert.equal(kube.pod('data', 'db-1'), undefined);
    await api.core.createNamespacedPodEviction(eviction('db-2', 'data'));
    assert.deepEqual(
      kube.evictions.filter((e) => e.namespace === 'data').map((e) => `${e.pod} ${e.status}`),
      ['db-1 201', 'db-2 429', 'db-2 201'],
    );
  });

  it('scales a percentage budget by the pods it selects, rounding up', async () => {
    for (const i of [1, 2, 3])
      kube.addPod({ name: `batch-${i}`, namespace: 'jobs', nodeName: 'n2', labels: { app: 'batch' }, terminationDelayMs: 60_000 });
    // maxUnavailable 50% of 3 rounds up to 2: two may go, the third must wait.
    kube.addPdb({ name: 'batch', namespace: 'jobs', matchLabels: { app: 'batch' }, maxUnavailable: '50%' });
    await api.core.createNamespacedPodEviction(eviction('batch-1', 'jobs'));
    await api.core.createNamespacedPodEviction(eviction('batch-2', 'jobs'));
    const refused = await apiError(api.core.createNamespacedPodEviction(eviction('batch-3', 'jobs')));
    assert.equal(refused.status.details?.causes?.[0]?.message, 'The disruption budget batch needs 1 healthy pods and has 1 currently');
    for (const i of [1, 2, 3]) kube.removePod('jobs', `batch-${i}`);
  });

  it('answers 404 to evicting or deleting a pod that is gone; a DaemonSet pod deleted comes back on its node', async () => {
    const gone = await apiError(api.core.createNamespacedPodEviction(eviction('never-was', 'shop')));
    assert.equal(gone.code, 404);
    assert.equal(gone.status.message, 'pods "never-was" not found');
    assert.equal(kube.evictions.at(-1)?.nodeName, null);
    assert.equal((await apiError(api.core.deleteNamespacedPod({ name: 'never-was', namespace: 'shop' }))).code, 404);

    kube.addPod({
      name: 'agent-x1y2z',
      namespace: 'forewarn',
      nodeName: 'n3',
      owner: { kind: 'DaemonSet', name: 'forewarn-agent' },
      graceSeconds: 0,
    });
    const deleted = await api.core.deleteNamespacedPod({ name: 'agent-x1y2z', namespace: 'forewarn' });
    assert.equal(deleted.metadata?.name, 'agent-x1y2z');
    const back = await waitFor('the DaemonSet pod back', () => kube.pods('n3').find((p) => p.metadata.namespace === 'forewarn'), 5_000);
    assert.notEqual(back.metadata.name, 'agent-x1y2z');
    assert.equal(back.metadata.ownerReferences?.[0]?.kind, 'DaemonSet');
  });

  it('keeps Leases with optimistic concurrency: 409 Conflict on a stale resourceVersion, 409 AlreadyExists on a second create', async () => {
    // MicroTimes, which a real server takes with six fractional digits only (a Date writes three).
    const renewTime = new V1MicroTime('2026-11-24T10:00:00.123Z');
    const body: V1Lease = {
      metadata: { name: 'maintenance-0', namespace: 'forewarn' },
      spec: { holderIdentity: 'n1', leaseDurationSeconds: 60, acquireTime: renewTime, renewTime, leaseTransitions: 0 },
    };
    const created = await api.coordination.createNamespacedLease({ namespace: 'forewarn', body });
    const rv = created.metadata!.resourceVersion!;
    assert.equal(kube.lease('forewarn', 'maintenance-0')?.spec?.renewTime, '2026-11-24T10:00:00.123000Z', 'the MicroTime as sent');
    const again = await apiError(api.coordination.createNamespacedLease({ namespace: 'forewarn', body }));
    assert.deepEqual([again.code, again.status.reason], [409, 'AlreadyExists']);

    const read = await api.coordination.readNamespacedLease({ name: 'maintenance-0', namespace: 'forewarn' });
    read.spec!.holderIdentity = 'n2';
    const replaced = await api.coordination.replaceNamespacedLease({ name: 'maintenance-0', namespace: 'forewarn', body: read });
    assert.equal(replaced.spec?.holderIdentity, 'n2');
    assert.notEqual(replaced.metadata?.resourceVersion, rv);

    const stale = { ...body, metadata: { ...body.metadata, resourceVersion: rv }, spec: { ...body.spec, holderIdentity: 'n3' } };
    const conflict = await apiError(api.coordination.replaceNamespacedLease({ name: 'maintenance-0', namespace: 'forewarn', body: stale }));
    assert.equal(conflict.code, 409);
    assert.equal(conflict.status.reason, 'Conflict');
    assert.equal(
      conflict.status.message,
      'Operation cannot be fulfilled on leases.coordination.k8s.io "maintenance-0": the object has been modified; please apply your changes to the latest version and try again',
    );
    assert.equal(kube.lease('forewarn', 'maintenance-0')?.spec?.holderIdentity, 'n2');
    assert.deepEqual(
      kube.leases('forewarn').map((l) => l.metadata.name),
      ['maintenance-0'],
    );
    const list = await api.coordination.listNamespacedLease({ namespace: 'forewarn' });
    assert.equal(list.items.length, 1);
    await api.coordination.deleteNamespacedLease({ name: 'maintenance-0', namespace: 'forewarn' });
    assert.equal(kube.lease('forewarn', 'maintenance-0'), undefined);
    const nowhere = await apiError(api.coordination.createNamespacedLease({ namespace: 'no-such-ns', body }));
    assert.deepEqual([nowhere.code, nowhere.status.message], [404, 'namespaces "no-such-ns" not found']);
  });

  it('stores events of both APIs, listable and readable from the test side', async () => {
    const node = kube.node('n1');
    const now = new Date();
    await api.core.createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { generateName: 'n1.forewarn.', namespace: 'default' },
        involvedObject: { kind: 'Node', name: 'n1', uid: node.metadata.uid, apiVersion: 'v1' },
        type: 'Normal',
        reason: 'Cordoned',
        message: 'cordoned for Reboot e1',
        source: { component: 'forewarn-agent', host: 'n1' },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      },
    });
    await api.events.createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { name: 'n1.drained' },
        eventTime: new V1MicroTime(now),
        reportingController: 'forewarn.dev/agent',
        reportingInstance: 'n1',
        action: 'Drain',
        reason: 'Drained',
        type: 'Normal',
        note: 'drained 3 pods',
        regarding: { kind: 'Node', name: 'n1' },
      },
    });
    const listed = await api.core.listNamespacedEvent({ namespace: 'default' });
    assert.match(listed.items[0]?.metadata?.name ?? '', /^n1\.forewarn\.[a-z0-9]{5}$/);
    assert.deepEqual(
      kube.events({ node: 'n1' }).map((e) => [e.group, e.reason, e.message]),
      [
        ['', 'Cordoned', 'cordoned for Reboot e1'],
        ['events.k8s.io', 'Drained', 'drained 3 pods'],
      ],
    );
    // A Node's event outside "default" is refused, as a real server does.
    const misplaced = await apiError(
      api.core.createNamespacedEvent({
        namespace: 'forewarn',
        body: { metadata: { name: 'x' }, involvedObject: { kind: 'Node', name: 'n1' }, reason: 'R' },
      }),
    );
    assert.equal(misplaced.code, 422);
  });

  it('lets a test inject faults: the next two evictions of a pod answer 500', async () => {
    kube.addPod({ name: 'flaky', namespace: 'shop', nodeName: 'n2', graceSeconds: 0 });
    let left = 2;
    const remove = kube.onRequest((req) => {
      if (req.permission?.resource === 'pods/eviction' && req.name === 'flaky' && left > 0) {
        left--;
        return { status: 500, message: 'etcdserver: request timed out' };
      }
    });
    for (let i = 0; i < 2; i++) {
      const failed = await apiError(api.core.createNamespacedPodEviction(eviction('flaky', 'shop')));
      assert.deepEqual([failed.code, failed.status.reason, failed.status.message], [500, 'InternalError', 'etcdserver: request timed out']);
    }
    await api.core.createNamespacedPodEviction(eviction('flaky', 'shop'));
    remove();
    assert.equal(kube.pod('shop', 'flaky'), undefined, 'grace 0: gone at once, and not recreated (no controller)');
    assert.deepEqual(
      kube.evictions.filter((e) => e.pod === 'flaky').map((e) => e.status),
      [500, 500, 201],
    );
  });
});

describe('fake Kubernetes API server: RBAC', () => {
  let kube: FakeKube;
  afterEach(() => kube?.close());

  const subject = { kind: 'ServiceAccount' as const, namespace: 'forewarn', name: 'forewarn-agent' };
  const manifests = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'forewarn' } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'forewarn-agent', namespace: 'forewarn' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'forewarn-agent' },
      rules: [
        { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'forewarn-agent' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'forewarn-agent' },
      subjects: [{ kind: 'ServiceAccount', name: 'forewarn-agent', namespace: 'forewarn' }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'leases', namespace: 'forewarn' },
      rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'leases', namespace: 'forewarn' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'leases' },
      subjects: [{ kind: 'ServiceAccount', name: 'forewarn-agent' }],
    },
  ];

  it('enforces the bound rules with 403 Forbidden, and records every permission used', async () => {
    kube = await startFakeKube({ rbac: { subject } });
    assert.deepEqual(kube.apply(manifests), []);
    kube.addNode({ name: 'n1' });
    kube.addPod({ name: 'p', namespace: 'shop', nodeName: 'n1' });
    const api = clients(kube);
    await api.core.readNode({ name: 'n1' });
    await api.core.patchNode(
      { name: 'n1', body: { spec: { unschedulable: true } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await api.core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=n1' });
    await api.coordination.createNamespacedLease({
      namespace: 'forewarn',
      body: { metadata: { name: 'slot' }, spec: { holderIdentity: 'n1' } },
    });

    const evict = await apiError(api.core.createNamespacedPodEviction(eviction('p', 'shop')));
    assert.equal(evict.code, 403);
    assert.equal(evict.status.reason, 'Forbidden');
    assert.equal(
      evict.status.message,
      'pods "p" is forbidden: User "system:serviceaccount:forewarn:forewarn-agent" cannot create resource "pods/eviction" in API group "" in the namespace "shop"',
    );
    const list = await apiError(api.core.listNode());
    assert.equal(
      list.status.message,
      'nodes is forbidden: User "system:serviceaccount:forewarn:forewarn-agent" cannot list resource "nodes" in API group "" at the cluster scope',
    );
    // The RoleBinding grants leases in its own namespace only.
    const elsewhere = await apiError(
      api.coordination.createNamespacedLease({ namespace: 'default', body: { metadata: { name: 'slot' } } }),
    );
    assert.equal(elsewhere.code, 403);
    assert.equal(kube.node('n1').spec.unschedulable, true);

    assert.deepEqual(kube.permissionsUsed(), [
      { verb: 'create', group: '', resource: 'pods/eviction', namespace: 'shop' },
      { verb: 'create', group: 'coordination.k8s.io', resource: 'leases', namespace: 'default' },
      { verb: 'create', group: 'coordination.k8s.io', resource: 'leases', namespace: 'forewarn' },
      { verb: 'get', group: '', resource: 'nodes', namespace: null },
      { verb: 'list', group: '', resource: 'nodes', namespace: null },
      { verb: 'list', group: '', resource: 'pods', namespace: null },
      { verb: 'patch', group: '', resource: 'nodes', namespace: null },
    ]);
  });

  it('records permissions without enforcing when no subject is given', async () => {
    kube = await startFakeKube();
    kube.addNode({ name: 'n1' });
    await clients(kube).core.listNode();
    assert.deepEqual(kube.permissionsUsed(), [{ verb: 'list', group: '', resource: 'nodes', namespace: null }]);
  });
});

describe('fake Kubernetes API server: manifest schema checks', () => {
  let kube: FakeKube;
  before(async () => {
    kube = await startFakeKube();
  });
  after(() => kube.close());

  // Tests break the manifest anywhere, so it is typed loosely.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  function daemonSet(patch: (ds: any) => void = () => {}) {
    const ds = {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'forewarn-agent', namespace: 'kube-system', labels: { 'app.kubernetes.io/name': 'forewarn-agent' } },
      spec: {
        selector: { matchLabels: { app: 'forewarn-agent' } },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } },
        template: {
          metadata: { labels: { app: 'forewarn-agent' } },
          spec: {
            serviceAccountName: 'forewarn-agent',
            hostNetwork: true,
            tolerations: [{ operator: 'Exists' }],
            containers: [
              {
                name: 'agent',
                image: 'ghcr.io/forewarn/forewarn:0.1.0',
                args: ['agent', '--config', '/etc/forewarn/agent.yaml'],
                env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
                resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { cpu: 1, memory: '64Mi' } },
                livenessProbe: { httpGet: { path: '/healthz', port: 9100 }, periodSeconds: 10 },
                volumeMounts: [{ name: 'config', mountPath: '/etc/forewarn' }],
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'forewarn-agent' } }],
          },
        },
      },
    };
    patch(ds);
    return ds;
  }

  it('passes a correct DaemonSet (IntOrString fields, label maps and numeric quantities accepted)', () => {
    assert.deepEqual(kube.apply([daemonSet()]), []);
    assert.equal(kube.object('apps/v1', 'DaemonSet', 'forewarn-agent', 'kube-system')?.metadata.name, 'forewarn-agent');
  });

  it('names an unknown field by its path (case matters)', () => {
    const errors = kube.apply([
      daemonSet((ds) => {
        const c = ds.spec.template.spec.containers[0];
        c.livenessprobe = c.livenessProbe;
        delete c.livenessProbe;
      }),
    ]);
    assert.deepEqual(errors, ['DaemonSet forewarn-agent: spec.template.spec.containers[0].livenessprobe: unknown field']);
  });

  it('names a wrong type by its path', () => {
    const errors = kube.apply([
      daemonSet((ds) => {
        ds.spec.template.spec.hostNetwork = 'yes';
        ds.spec.template.spec.containers[0].livenessProbe.periodSeconds = '10';
      }),
    ]);
    assert.deepEqual(errors, [
      'DaemonSet forewarn-agent: spec.template.spec.hostNetwork: expected boolean, got string',
      'DaemonSet forewarn-agent: spec.template.spec.containers[0].livenessProbe.periodSeconds: expected number, got string',
    ]);
  });

  it('refuses a selector that does not match the template labels, and containers without image', () => {
    const errors = kube.apply([
      daemonSet((ds) => {
        ds.spec.template.metadata.labels = { app: 'agent' };
        delete ds.spec.template.spec.containers[0].image;
      }),
    ]);
    assert.equal(errors.length, 2, errors.join('\n'));
    assert.equal(errors[0], 'DaemonSet forewarn-agent: spec.template.spec.containers[0].image: Required value');
    assert.match(errors[1]!, /^DaemonSet forewarn-agent: spec\.template\.metadata\.labels: .*`selector` does not match template `labels`/);
  });

  it('requires bindings’ roleRef and subjects and rules’ verbs, and the objects’ names', () => {
    const errors = kube.apply([
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'r' },
        rules: [{ apiGroups: [''], resources: ['nodes'] }],
      },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'b' } },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: {}, data: { 'agent.yaml': 'rules: []' } },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'missing' } },
    ]);
    assert.deepEqual(errors, [
      'ClusterRole r: rules[0].verbs: Required value: verbs must contain at least one value',
      'ClusterRoleBinding b: roleRef: Required value',
      'ClusterRoleBinding b: subjects: Required value: a binding without subjects grants nothing',
      'ConfigMap (document 3, unnamed): metadata.name: Required value: name or generateName is required',
      'ConfigMap c: namespaces "missing" not found',
    ]);
  });

  it('checks creates through the API as the server does: a wrong type 400 from the decoder, a broken rule 422', async () => {
    const apps = clients(kube).apps;
    const bad = daemonSet((ds) => {
      ds.metadata.name = 'bad';
      ds.spec.template.spec.containers[0].imagePullPolicy = 3;
    });
    const refused = await apiError(apps.createNamespacedDaemonSet({ namespace: 'kube-system', body: bad as never }));
    assert.equal(refused.code, 400);
    assert.equal(refused.status.reason, 'BadRequest');
    // (Go names the field's type v1.PullPolicy; the fake knows it only as a string.)
    assert.equal(
      refused.status.message,
      'DaemonSet in version "v1" cannot be handled as a DaemonSet: json: cannot unmarshal number into Go struct field ' +
        'Container.spec.template.spec.containers.imagePullPolicy of type string',
    );
    const imageless = daemonSet((ds) => {
      ds.metadata.name = 'imageless';
      delete ds.spec.template.spec.containers[0].image;
    });
    const invalid = await apiError(apps.createNamespacedDaemonSet({ namespace: 'kube-system', body: imageless as never }));
    assert.deepEqual([invalid.code, invalid.status.reason], [422, 'Invalid']);
    assert.equal(invalid.status.message, 'DaemonSet.apps "imageless" is invalid: spec.template.spec.containers[0].image: Required value');
    const good = daemonSet((ds) => (ds.metadata.name = 'good'));
    const created = await apps.createNamespacedDaemonSet({ namespace: 'kube-system', body: good as never });
    assert.equal(created.metadata?.name, 'good');
  });
});
