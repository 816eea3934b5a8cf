// deploy/kubernetes held to what the agent needs: every document parses and applies to the fake API
// server's strict schema checks, the kustomization lists exactly the files there, the DaemonSet runs
// the agent as docs/kubernetes.md says, the ConfigMap is a config the agent's own loader accepts, and
// the RBAC grants exactly GRANTS, no more, as written and as the fake's authorizer enforces it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { parseAgentConfig } from '../../src/agent/config.js';
import { parseTaint } from '../../src/agent/kubernetes/node.js';
import type { AgentConfig } from '../../src/agent/types.js';
import { parseHostPort } from '../../src/shared/host-port.js';
import { startFakeKube, type Permission } from '../support/fake-kube/server.js';
import {
  DEPLOY_DIR,
  GRANTS,
  ROOT,
  loadManifests,
  manifestFiles,
  type Grant,
  type K8sObject,
  type Meta,
  type Rule,
} from '../support/deploy-manifests.js';

interface Role extends K8sObject {
  rules: Rule[];
}

interface Binding extends K8sObject {
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects: { kind: string; name: string; namespace?: string }[];
}

interface Probe {
  httpGet?: { path: string; port: number | string };
}

interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
}

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}

interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: string;
}

interface PodSpec {
  serviceAccountName?: string;
  hostNetwork?: boolean;
  dnsPolicy?: string;
  terminationGracePeriodSeconds?: number;
  tolerations?: Toleration[];
  initContainers?: Container[];
  containers: Container[];
  volumes?: { name: string; hostPath?: { path: string; type?: string }; configMap?: { name: string } }[];
}

interface DaemonSet extends K8sObject {
  spec: { template: { spec: PodSpec } };
}

interface ConfigMap extends K8sObject {
  data: Record<string, string>;
}

const manifests = loadManifests();
const objects = manifests.map((m) => m.object);

function only<T extends K8sObject>(kind: string): T {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `deploy/kubernetes has exactly one ${kind} (found ${found.length})`);
  return found[0] as T;
}

const namespace = only<K8sObject>('Namespace');
const account = only<K8sObject>('ServiceAccount');
const daemonSet = only<DaemonSet>('DaemonSet');
const configMap = only<ConfigMap>('ConfigMap');
const pod = daemonSet.spec.template.spec;
const agent = pod.containers.find((c) => c.name === 'agent') ?? assert.fail('the DaemonSet has no container named agent');

function agentConfig(): AgentConfig {
  const text = configMap.data['agent.yaml'] ?? assert.fail('the ConfigMap has no agent.yaml key');
  return parseAgentConfig(text, 'deploy/kubernetes/configmap.yaml (agent.yaml)');
}

/** Kubernetes' own matching: an empty key with Exists matches every taint, an empty effect every effect. */
function tolerates(tolerations: Toleration[], taint: { key: string; value?: string; effect: string }): boolean {
  return tolerations.some((t) => {
    if (t.effect !== undefined && t.effect !== '' && t.effect !== taint.effect) return false;
    if (t.key === undefined || t.key === '') return t.operator === 'Exists';
    if (t.key !== taint.key) return false;
    return t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '');
  });
}

/** The container port a probe reaches: a number, or a named port of the container. */
function probePort(container: Container, probe: Probe | undefined): number {
  const port = probe?.httpGet?.port ?? assert.fail(`container ${container.name}: the probe is not an httpGet`);
  if (typeof port === 'number') return port;
  return container.ports?.find((p) => p.name === port)?.containerPort ?? assert.fail(`container ${container.name}: no port named ${port}`);
}

/** The permissions the manifests give the ServiceAccount, through every binding that names it. */
function granted(sa: Meta): Grant[] {
  const out = new Map<string, Grant>();
  const bindings = objects.filter((o): o is Binding => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding');
  for (const binding of bindings) {
    const names = binding.subjects.some((s) => s.kind === 'ServiceAccount' && s.name === sa.name && s.namespace === sa.namespace);
    if (!names) continue;
    assert.equal(binding.roleRef.apiGroup, 'rbac.authorization.k8s.io', `${binding.kind} ${binding.metadata.name}: roleRef.apiGroup`);
    const role = objects.find(
      (o): o is Role =>
        o.kind === binding.roleRef.kind &&
        o.metadata.name === binding.roleRef.name &&
        (o.kind === 'ClusterRole' || o.metadata.namespace === binding.metadata.namespace),
    );
    assert.ok(
      role,
      `${binding.kind} ${binding.metadata.name} refers to ${binding.roleRef.kind} ${binding.roleRef.name}, which is not in deploy/kubernetes`,
    );
    const scope = binding.kind === 'ClusterRoleBinding' ? '*' : binding.metadata.namespace!;
    for (const rule of role.rules) {
      assert.equal(rule.resourceNames, undefined, `${role.kind} ${role.metadata.name}: no resourceNames expected`);
      for (const group of rule.apiGroups)
        for (const resource of rule.resources)
          for (const verb of rule.verbs) out.set(`${verb} ${group} ${resource} ${scope}`, { verb, group, resource, scope });
    }
  }
  return sortGrants([...out.values()]);
}

/** Requests the agent's ServiceAccount makes of the fake, and whether RBAC must let each through. */
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/forewarn/leases';
const PROBES: { method: string; path: string; allowed: boolean }[] = [
  { method: 'GET', path: '/api/v1/nodes/n1', allowed: true },
  { method: 'GET', path: '/api/v1/nodes?labelSelector=forewarn.io%2Fagent%3Dtrue', allowed: true },
  { method: 'PATCH', path: '/api/v1/nodes/n1', allowed: true },
  { method: 'GET', path: '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1', allowed: true },
  { method: 'POST', path: '/api/v1/namespaces/shop/pods/p/eviction', allowed: true },
  { method: 'POST', path: '/api/v1/namespaces/default/events', allowed: true },
  { method: 'GET', path: `${LEASES}/forewarn-maintenance-0`, allowed: true },
  { method: 'POST', path: LEASES, allowed: true },
  { method: 'PUT', path: `${LEASES}/forewarn-maintenance-0`, allowed: true },
  { method: 'PUT', path: '/api/v1/nodes/n1', allowed: false },
  { method: 'DELETE', path: '/api/v1/nodes/n1', allowed: false },
  { method: 'GET', path: '/api/v1/namespaces/shop/pods/p', allowed: false },
  { method: 'DELETE', path: '/api/v1/namespaces/shop/pods/p', allowed: false },
  { method: 'POST', path: '/api/v1/namespaces/forewarn/events', allowed: false },
  { method: 'POST', path: '/apis/events.k8s.io/v1/namespaces/default/events', allowed: false },
  { method: 'GET', path: LEASES, allowed: false },
  { method: 'DELETE', path: `${LEASES}/forewarn-maintenance-0`, allowed: false },
  { method: 'POST', path: '/apis/coordination.k8s.io/v1/namespaces/default/leases', allowed: false },
  { method: 'PATCH', path: '/apis/apps/v1/namespaces/forewarn/daemonsets/forewarn-agent', allowed: false },
];

function sortGrants(grants: Grant[]): Grant[] {
  const key = (g: Grant) => `${g.group}/${g.resource}/${g.scope}/${g.verb}`;
  return [...grants].sort((a, b) => key(a).localeCompare(key(b)));
}

describe('deploy/kubernetes', () => {
  it('the kustomization lists exactly the manifests in the folder', () => {
    const text = readFileSync(join(DEPLOY_DIR, 'kustomization.yaml'), 'utf8');
    const kustomization = parseAllDocuments(text)[0]!.toJS() as { kind: string; resources: string[]; namespace?: string };
    assert.equal(kustomization.kind, 'Kustomization');
    assert.deepEqual([...kustomization.resources].sort(), manifestFiles());
    // A namespace transformer would move the events Role out of `default`.
    assert.equal(kustomization.namespace, undefined);
  });

  it('everything namespaced is in the agent namespace, except the events Role and its binding in default', () => {
    const clusterScoped = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);
    for (const o of objects.filter((o) => !clusterScoped.has(o.kind))) {
      const inDefault = (o.kind === 'Role' || o.kind === 'RoleBinding') && o.metadata.name === 'forewarn-agent-events';
      assert.equal(o.metadata.namespace, inDefault ? 'default' : namespace.metadata.name, `${o.kind} ${o.metadata.name}: namespace`);
    }
    // hostNetwork and hostPath are outside the baseline Pod Security level.
    assert.equal(namespace.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'privileged');
  });

  it('the ServiceAccount is the DaemonSet’s and the subject of every binding', () => {
    assert.equal(pod.serviceAccountName, account.metadata.name);
    assert.equal(account.metadata.namespace, daemonSet.metadata.namespace);
    const bindings = objects.filter((o): o is Binding => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding');
    assert.ok(bindings.length > 0);
    for (const b of bindings) {
      assert.deepEqual(
        b.subjects,
        [{ kind: 'ServiceAccount', name: account.metadata.name, namespace: account.metadata.namespace }],
        `${b.kind} ${b.metadata.name}: subjects`,
      );
    }
  });

  it('grants exactly nodes get/list/patch, pods list, pods/eviction create, events create in default, and leases in the agent namespace', () => {
    assert.deepEqual(granted(account.metadata), sortGrants(GRANTS));
    const budget = agentConfig().kubernetes.budget ?? assert.fail('the ConfigMap sets no kubernetes.budget');
    assert.ok(
      GRANTS.filter((g) => g.resource === 'leases').every((g) => g.scope === budget.namespace),
      "the Lease grants are in the budget's namespace",
    );
  });

  it('runs the agent on the host network with NODE_NAME from the downward API', () => {
    assert.equal(pod.hostNetwork, true, "IMDS's link-local address answers on the host's network only");
    assert.equal(pod.dnsPolicy, 'ClusterFirstWithHostNet');
    const nodeName = agent.env?.find((e) => e.name === 'NODE_NAME');
    assert.deepEqual(nodeName?.valueFrom, { fieldRef: { fieldPath: 'spec.nodeName' } });
    assert.equal(agentConfig().kubernetes.nodeName, null, 'the config leaves the node to NODE_NAME');
  });

  it('probes /healthz and /readyz on the port the config listens on, on an address the kubelet reaches', () => {
    const listen = agentConfig().listen ?? assert.fail('the ConfigMap turns the status server off (listen: null)');
    const { host, port } = parseHostPort(listen, 'listen');
    assert.equal(agent.livenessProbe?.httpGet?.path, '/healthz');
    assert.equal(agent.readinessProbe?.httpGet?.path, '/readyz');
    assert.equal(probePort(agent, agent.livenessProbe), port);
    assert.equal(probePort(agent, agent.readinessProbe), port);
    // The kubelet probes the pod's IP, which with hostNetwork is the node's: not loopback.
    assert.ok(host === '0.0.0.0' || host === '::', `listen host ${host} must be every address`);
  });

  it('tolerates the taints the agent sets, the cordon, and NoSchedule taints in general', () => {
    const tolerations = pod.tolerations ?? [];
    const config = agentConfig();
    const taintSpec = config.kubernetes.taint ?? assert.fail('the ConfigMap sets no kubernetes.taint');
    for (const type of ['Reboot', 'Redeploy', 'Preempt', 'Terminate', 'Freeze']) {
      const taint = parseTaint(taintSpec, type);
      assert.equal(taint.key, 'forewarn.io/maintenance');
      assert.ok(tolerates(tolerations, taint), `tolerates ${taint.key}=${taint.value}:${taint.effect}`);
    }
    // Were the taint changed to NoExecute, the agent must still not be evicted from its own node.
    for (const effect of ['NoSchedule', 'PreferNoSchedule', 'NoExecute']) {
      assert.ok(
        tolerates(tolerations, { key: 'forewarn.io/maintenance', value: 'Reboot', effect }),
        `tolerates forewarn.io/maintenance:${effect}`,
      );
    }
    assert.ok(tolerates(tolerations, { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }));
    assert.ok(tolerates(tolerations, { key: 'example.com/anything', value: 'x', effect: 'NoSchedule' }));
  });

  it('runs as non-root with a read-only root, no privilege escalation, no capabilities, and limits', () => {
    const sc = agent.securityContext ?? assert.fail('the agent container has no securityContext');
    assert.equal(sc.runAsNonRoot, true);
    assert.ok(typeof sc.runAsUser === 'number' && sc.runAsUser > 0, 'a numeric non-root uid, so runAsNonRoot can be checked');
    assert.equal(sc.readOnlyRootFilesystem, true);
    assert.equal(sc.allowPrivilegeEscalation, false);
    assert.deepEqual(sc.capabilities, { drop: ['ALL'] });
    for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
      for (const r of ['cpu', 'memory']) {
        assert.ok(c.resources?.requests?.[r], `container ${c.name}: requests.${r}`);
        assert.ok(c.resources?.limits?.[r], `container ${c.name}: limits.${r}`);
      }
      assert.equal(c.image, agent.image, `container ${c.name}: the agent's image`);
    }
  });

  it('the one root container only hands the journal directory to the agent user', () => {
    const roots = (pod.initContainers ?? []).filter((c) => c.securityContext?.runAsNonRoot !== true);
    assert.deepEqual(
      roots.map((c) => c.name),
      ['journal-owner'],
    );
    const init = roots[0]!;
    assert.equal(init.securityContext?.allowPrivilegeEscalation, false);
    assert.equal(init.securityContext?.readOnlyRootFilesystem, true);
    assert.deepEqual(init.securityContext?.capabilities, { drop: ['ALL'], add: ['CHOWN', 'FOWNER'] });
    const sc = agent.securityContext!;
    assert.match(init.command?.join(' ') ?? '', new RegExp(`chown ${sc.runAsUser}:${sc.runAsGroup} /var/lib/forewarn`));
  });

  it('keeps the journal on a hostPath, so it outlives the pod and the node’s reboot', () => {
    const journal = agentConfig().journal;
    const mount = agent.volumeMounts?.find((m) => journal.startsWith(`${m.mountPath}/`)) ?? assert.fail(`no volume holds ${journal}`);
    const volume = pod.volumes?.find((v) => v.name === mount.name);
    assert.ok(volume?.hostPath, `volume ${mount.name} is a hostPath`);
    assert.equal(volume.hostPath.type, 'DirectoryOrCreate');
    assert.notEqual(mount.readOnly, true);
  });

  it('mounts the ConfigMap where the image’s CMD looks for the config, and lets the image choose the command', () => {
    assert.equal(agent.command, undefined);
    assert.equal(agent.args, undefined);
    // The last stage's CMD: the agent's image, the Dockerfile's default target.
    const cmd =
      [...readFileSync(join(ROOT, 'Dockerfile'), 'utf8').matchAll(/^CMD\s+(\[.*\])\s*$/gm)].at(-1)?.[1] ??
      assert.fail('the Dockerfile has no CMD');
    const args = JSON.parse(cmd) as string[];
    const configPath = args[args.indexOf('--config') + 1];
    const volume = pod.volumes?.find((v) => v.configMap?.name === configMap.metadata.name) ?? assert.fail('no volume mounts the ConfigMap');
    const mount = agent.volumeMounts?.find((m) => m.name === volume.name) ?? assert.fail('the agent does not mount the config volume');
    assert.equal(`${mount.mountPath}/agent.yaml`, configPath);
    assert.equal(mount.readOnly, true);
  });

  it('stops within the pod’s grace: terminationGracePeriodSeconds above shutdownGraceSeconds', () => {
    assert.ok((pod.terminationGracePeriodSeconds ?? 30) > agentConfig().shutdownGraceSeconds);
  });

  it('the ConfigMap is a config the agent accepts: polls IMDS and drains for Reboot, Redeploy, Preempt and Terminate within a budget of 1', () => {
    const config = agentConfig();
    assert.equal(config.endpoint, 'http://169.254.169.254');
    const rule = config.rules.find((r) => r.actions.some((a) => a.type === 'kubernetes')) ?? assert.fail('no rule has a kubernetes action');
    assert.deepEqual([...(rule.match.eventType ?? [])].sort(), ['Preempt', 'Reboot', 'Redeploy', 'Terminate']);
    assert.equal(rule.approval, 'after-actions');
    // An event naming several nodes is approved once all of them are drained, and a node prepares only for its own events.
    assert.equal(config.kubernetes.approval, 'barrier');
    assert.equal(rule.match.affectsThisVm, true);
    const action = rule.actions.find((a) => a.type === 'kubernetes');
    assert.ok(action?.type === 'kubernetes' && action.drain);
    assert.deepEqual(
      { slots: config.kubernetes.budget?.slots, namespace: config.kubernetes.budget?.namespace, name: config.kubernetes.budget?.name },
      { slots: 1, namespace: namespace.metadata.name, name: 'forewarn-maintenance' },
    );
  });

  it('applies to the fake API server, whose checks are as strict as kubectl apply --validate=strict', async () => {
    const kube = await startFakeKube();
    try {
      // Kustomize sends the Namespace first; so does this.
      const ordered = [...objects].sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'));
      assert.deepEqual(kube.apply(ordered), []);
      // The checks have teeth: a misspelt field is refused with its path.
      const broken = structuredClone(daemonSet);
      Object.assign(broken.spec.template.spec.containers[0]!, { livenessprobe: {} });
      const problems = kube.apply([broken]);
      assert.equal(problems.length, 1);
      assert.match(problems[0]!, /DaemonSet forewarn-agent: spec\.template\.spec\.containers\[0\]\.livenessprobe/);
    } finally {
      await kube.close();
    }
  });

  it("the fake's authorizer lets the agent's ServiceAccount make exactly the granted calls", async () => {
    const subject = { kind: 'ServiceAccount' as const, name: account.metadata.name, namespace: account.metadata.namespace! };
    const kube = await startFakeKube({ rbac: { subject } });
    try {
      const ordered = [...objects].sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'));
      assert.deepEqual(kube.apply(ordered), []);
      const used: Permission[] = [];
      for (const probe of PROBES) {
        const before = new Set(kube.permissionsUsed().map((p) => JSON.stringify(p)));
        const response = await fetch(`${kube.url}${probe.path}`, {
          method: probe.method,
          headers: { 'content-type': probe.method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' },
          ...(probe.method === 'GET' || probe.method === 'DELETE' ? {} : { body: '{}' }),
        });
        await response.arrayBuffer();
        assert.equal(response.status === 403, !probe.allowed, `${probe.method} ${probe.path}: HTTP ${response.status}`);
        if (probe.allowed) used.push(...kube.permissionsUsed().filter((p) => !before.has(JSON.stringify(p))));
      }
      // The allowed probes cover every grant, so each one above was shown to work.
      const kinds = (list: { verb: string; group: string; resource: string }[]) =>
        [...new Set(list.map((g) => `${g.verb} ${g.group} ${g.resource}`))].sort();
      assert.deepEqual(kinds(used), kinds(GRANTS));
    } finally {
      await kube.close();
    }
  });
});
