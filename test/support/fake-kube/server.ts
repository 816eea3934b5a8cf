// An in-process fake Kubernetes API server, for tests: no real one runs on these machines. It speaks
// the REST dialect @kubernetes/client-node uses (standard paths, JSON bodies shaped as the real API's,
// Status objects on errors) for what Forewarn's agent touches: nodes (get, patch), pods (list, delete)
// and their Eviction with PodDisruptionBudgets, events, Leases; and the kinds of the agent's manifests.
// It refuses what kube-apiserver refuses, as it answers (README.md: decoding, times, validation,
// concurrency, patches, each rule cited). Pods terminate, come back through their controllers and turn
// Ready on short timers, so budgets free up as on a cluster. RBAC is enforced when asked, and every
// request's permission is recorded, so a test can hold the manifests' ClusterRole to what was used;
// every request is recorded with its body and the warnings answered.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stringify } from 'yaml';
import {
  buildNamespace,
  buildNode,
  buildPdb,
  buildPod,
  type LeaseView,
  type NodeSpec,
  type NodeView,
  type PdbSpec,
  type PodSpec,
  type PodView,
} from './builders.js';
import { mergePatch } from './patch.js';
import { parsePath, resourceByKind, resourceByName, verbOf, type ResourceType, type Route } from './paths.js';
import { allows, forbiddenMessage, permissionKey, type Permission, type Subject } from './rbac.js';
import { copy, Rest, type Reply } from './rest.js';
import { manifestProblems, objectLabel } from './schema.js';
import { failureStatus, KubeStatusError, reasonFor } from './status.js';
import { Store, type KubeObject } from './store.js';
import { setCondition, Workloads } from './workloads.js';

export type { LeaseView, NodeSpec, NodeView, PdbSpec, PodSpec, PodView, Permission, Subject, KubeObject };

export interface FakeKubeOptions {
  /** Time from an eviction or deletion to the pod being gone, at most its grace period (default 200 ms). */
  terminationDelayMs?: number;
  /** Time for a recreated pod to turn Ready (default 100 ms). */
  readyDelayMs?: number;
  /** Enforce RBAC for this ServiceAccount, from the Roles and bindings applied. */
  rbac?: { subject: Subject };
}

export interface RequestRecord {
  method: string;
  path: string;
  /** The query string, `?` included, or ''. */
  query: string;
  status: number;
  /** The bearer token sent, if any (any is accepted). */
  token: string | null;
  /** The Content-Type sent, as sent ('' when none). */
  contentType: string;
  /** The body as sent ('' when none): what a test checks the client wrote. */
  body: string;
  /** The Warning headers answered (unknown fields under fieldValidation=Warn), their text only. */
  warnings: string[];
  /** metadata.resourceVersion of the answer (the object written or read, or the list), or null. */
  resourceVersion: string | null;
}

export interface EvictionRecord {
  namespace: string;
  pod: string;
  /** Where the pod ran when the eviction was asked for; null if it was already gone. */
  nodeName: string | null;
  status: number;
}

/** A request as a hook sees it, before the fake acts on it. */
export interface SeenRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** The RBAC permission it needs; null for paths that name no resource. */
  permission: Permission | null;
  /** The object it names, if any. */
  name: string | null;
  body: unknown;
}

/** A hook's answer in place of the fake's: a Status with `message` unless `body` is given. */
export interface FaultResponse {
  status: number;
  message?: string;
  body?: unknown;
}

export type RequestHook = (request: SeenRequest) => FaultResponse | undefined | void | Promise<FaultResponse | undefined | void>;

export interface RecordedEvent {
  /** '' for core/v1 Events, 'events.k8s.io' for events.k8s.io/v1. */
  group: string;
  namespace: string;
  name: string;
  type: string;
  reason: string;
  /** `message` (core/v1) or `note` (events.k8s.io/v1). */
  message: string;
  /** The object it is about: involvedObject (core/v1) or regarding (events.k8s.io/v1). */
  regarding: { kind?: string; name?: string; namespace?: string };
  /** The node it is about, or null. */
  node: string | null;
  object: KubeObject;
}

export interface EventFilter {
  node?: string;
  reason?: string;
  type?: string;
  namespace?: string;
}

const NODES = resourceByName('', 'nodes')!;
const PODS = resourceByName('', 'pods')!;
const PDBS = resourceByName('policy', 'poddisruptionbudgets')!;
const LEASES = resourceByName('coordination.k8s.io', 'leases')!;
const NAMESPACES = resourceByName('', 'namespaces')!;
const CORE_EVENTS = resourceByName('', 'events')!;
const NEW_EVENTS = resourceByName('events.k8s.io', 'events')!;
const rbacType = (resource: string) => resourceByName('rbac.authorization.k8s.io', resource)!;

/** The namespaces every cluster starts with. */
const INITIAL_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
const MAX_BODY = 3 * 1024 * 1024;

type Json = Record<string, unknown>;

function bearer(header: string | undefined): string | null {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  return m ? m[1]!.trim() : null;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > MAX_BODY)
        reject(new KubeStatusError(413, 'RequestEntityTooLarge', `the request body is ${size} bytes, over the limit of ${MAX_BODY}`));
      else resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

export class FakeKube {
  readonly requests: RequestRecord[] = [];
  readonly evictions: EvictionRecord[] = [];
  readonly #store = new Store();
  readonly #workloads: Workloads;
  readonly #rest: Rest;
  readonly #hooks = new Set<RequestHook>();
  readonly #used = new Map<string, Permission>();
  readonly #ownerUids = new Map<string, string>();
  readonly #server = createServer((req, res) => void this.#handle(req, res));
  #port = 0;

  constructor(private readonly options: FakeKubeOptions = {}) {
    this.#workloads = new Workloads(this.#store, {
      terminationDelayMs: options.terminationDelayMs ?? 200,
      readyDelayMs: options.readyDelayMs ?? 100,
    });
    this.#rest = new Rest(this.#store, this.#workloads);
    for (const name of INITIAL_NAMESPACES) this.addNamespace(name);
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(0, '127.0.0.1', () => resolve());
    });
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /**
   * A kubeconfig pointing at this server, for a file KUBECONFIG names. The server speaks plain HTTP,
   * which client-node 1.x only accepts from a cluster marked insecure-skip-tls-verify.
   */
  kubeconfigYaml(options: { token?: string; namespace?: string } = {}): string {
    return stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'fake-kube', cluster: { server: this.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'fake-kube-user', user: { token: options.token ?? 'fake-token' } }],
      contexts: [
        { name: 'fake-kube', context: { cluster: 'fake-kube', user: 'fake-kube-user', namespace: options.namespace ?? 'default' } },
      ],
      'current-context': 'fake-kube',
    });
  }

  async close(): Promise<void> {
    this.#workloads.stop();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  // ---- the test's side -------------------------------------------------------

  addNamespace(name: string): void {
    if (!this.#store.get(NAMESPACES, null, name)) this.#store.create(NAMESPACES, buildNamespace(name));
  }

  addNode(spec: NodeSpec): NodeView {
    if (this.#store.get(NODES, null, spec.name)) throw new Error(`addNode: node ${spec.name} already exists`);
    const node = this.#store.create(NODES, buildNode(spec));
    this.#workloads.schedulePending();
    return copy(node) as NodeView;
  }

  node(name: string): NodeView {
    const node = this.#store.get(NODES, null, name);
    if (!node) throw new Error(`node ${name} does not exist (nodes: ${this.#names(NODES).join(', ') || 'none'})`);
    return copy(node) as NodeView;
  }

  nodes(): NodeView[] {
    return this.#store.list(NODES).map((n) => copy(n) as NodeView);
  }

  /** Changes a node as an operator's `kubectl patch --type merge` would. */
  patchNode(name: string, patch: Record<string, unknown>): NodeView {
    const node = this.#store.get(NODES, null, name);
    if (!node) throw new Error(`patchNode: node ${name} does not exist`);
    const patched = mergePatch(node, patch) as KubeObject;
    patched.metadata = { ...patched.metadata, name, uid: node.metadata.uid };
    this.#store.replace(NODES, patched);
    this.#workloads.schedulePending();
    return copy(patched) as NodeView;
  }

  setNodeReady(name: string, ready: boolean): void {
    const node = this.#store.get(NODES, null, name);
    if (!node) throw new Error(`setNodeReady: node ${name} does not exist`);
    setCondition(node, 'Ready', ready, ready ? 'KubeletReady' : 'KubeletNotReady');
    this.#store.touch(node);
    this.#workloads.schedulePending();
  }

  removeNode(name: string): void {
    if (!this.#store.delete(NODES, null, name)) throw new Error(`removeNode: node ${name} does not exist`);
  }

  addPod(spec: PodSpec): PodView {
    if (this.#store.get(PODS, spec.namespace, spec.name)) throw new Error(`addPod: pod ${spec.namespace}/${spec.name} already exists`);
    const node = spec.nodeName === undefined ? undefined : this.#store.get(NODES, null, spec.nodeName);
    if (spec.nodeName !== undefined && !node)
      throw new Error(`addPod: pod ${spec.namespace}/${spec.name} names node ${spec.nodeName}, which does not exist`);
    this.addNamespace(spec.namespace);
    const owner = spec.owner ? { uid: this.#ownerUid(spec.namespace, spec.owner.kind, spec.owner.name) } : null;
    const pod = this.#store.create(PODS, buildPod(spec, owner, node?.metadata.uid ?? null));
    this.#workloads.behaviour.set(pod.metadata.uid, {
      ...(spec.terminationDelayMs !== undefined ? { terminationDelayMs: spec.terminationDelayMs } : {}),
      ...(spec.recreate !== undefined ? { recreate: spec.recreate } : {}),
    });
    if (spec.nodeName === undefined) this.#workloads.schedulePending();
    return copy(pod) as PodView;
  }

  /** Pods (copies), all or those on one node. */
  pods(nodeName?: string): PodView[] {
    return this.#store
      .list(PODS)
      .filter((p) => nodeName === undefined || (p.spec as Json | undefined)?.nodeName === nodeName)
      .map((p) => copy(p) as PodView);
  }

  pod(namespace: string, name: string): PodView | undefined {
    const pod = this.#store.get(PODS, namespace, name);
    return pod && (copy(pod) as PodView);
  }

  setPodReady(namespace: string, name: string, ready: boolean): void {
    const pod = this.#store.get(PODS, namespace, name);
    if (!pod) throw new Error(`setPodReady: pod ${namespace}/${name} does not exist`);
    setCondition(pod, 'Ready', ready);
    this.#store.touch(pod);
  }

  /** The pod is gone for good, its workload scaled down: no controller brings it back. */
  removePod(namespace: string, name: string): void {
    const pod = this.#store.delete(PODS, namespace, name);
    if (!pod) throw new Error(`removePod: pod ${namespace}/${name} does not exist`);
    this.#workloads.behaviour.delete(pod.metadata.uid);
  }

  addPdb(spec: PdbSpec): KubeObject {
    if (spec.minAvailable !== undefined && spec.maxUnavailable !== undefined) {
      throw new Error(`addPdb: ${spec.namespace}/${spec.name} sets both minAvailable and maxUnavailable`);
    }
    this.addNamespace(spec.namespace);
    return copy(this.#store.create(PDBS, buildPdb(spec))) as KubeObject;
  }

  pdbs(namespace?: string): KubeObject[] {
    return this.#store.list(PDBS, namespace ?? null).map((p) => copy(p) as KubeObject);
  }

  /** Events of both APIs, in the order they were created. */
  events(filter: EventFilter = {}): RecordedEvent[] {
    const all = [...this.#store.list(CORE_EVENTS), ...this.#store.list(NEW_EVENTS)].sort(
      (a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion),
    );
    return all
      .map((e) => {
        const core = e.apiVersion === 'v1';
        const regarding = ((core ? e.involvedObject : e.regarding) ?? {}) as RecordedEvent['regarding'];
        return {
          group: core ? '' : 'events.k8s.io',
          namespace: e.metadata.namespace ?? '',
          name: e.metadata.name,
          type: String(e.type ?? ''),
          reason: String(e.reason ?? ''),
          message: String((core ? e.message : e.note) ?? ''),
          regarding: { ...regarding },
          node: regarding.kind === 'Node' && regarding.name !== undefined ? regarding.name : null,
          object: copy(e) as KubeObject,
        };
      })
      .filter(
        (e) =>
          (filter.node === undefined || e.node === filter.node) &&
          (filter.reason === undefined || e.reason === filter.reason) &&
          (filter.type === undefined || e.type === filter.type) &&
          (filter.namespace === undefined || e.namespace === filter.namespace),
      );
  }

  leases(namespace: string): LeaseView[] {
    return this.#store.list(LEASES, namespace).map((l) => copy(l) as LeaseView);
  }

  lease(namespace: string, name: string): LeaseView | undefined {
    const lease = this.#store.get(LEASES, namespace, name);
    return lease && (copy(lease) as LeaseView);
  }

  /** Any stored object, by apiVersion and kind (e.g. an applied DaemonSet), or undefined. */
  object(apiVersion: string, kind: string, name: string, namespace?: string): KubeObject | undefined {
    const type = resourceByKind(apiVersion, kind);
    if (!type) throw new Error(`object: ${apiVersion}/${kind} is not a kind this server serves`);
    const found = this.#store.get(type, type.namespaced ? (namespace ?? 'default') : null, name);
    return found && (copy(found) as KubeObject);
  }

  /** Runs before the fake acts on each request; a FaultResponse answers in its place. Returns the remover. */
  onRequest(hook: RequestHook): () => void {
    this.#hooks.add(hook);
    return () => this.#hooks.delete(hook);
  }

  /** Every distinct permission requests needed, whether or not RBAC is enforced, sorted. */
  permissionsUsed(): Permission[] {
    return [...this.#used.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => ({ ...p }));
  }

  /**
   * Applies manifests as `kubectl apply --validate=strict` would: each valid object is created or
   * updated, in order; returns the problems (`Kind name: path: problem`), none when all went in.
   * Empty documents (null) are skipped, as kubectl skips them.
   */
  apply(objects: unknown[]): string[] {
    const problems: string[] = [];
    objects.forEach((object, i) => {
      if (object === null || object === undefined) return;
      const found = manifestProblems(object, i);
      if (found.length > 0) {
        problems.push(...found);
        return;
      }
      const o = structuredClone(object) as KubeObject;
      const type = resourceByKind(o.apiVersion, o.kind);
      if (!type) {
        problems.push(`${objectLabel(o, i)}: ${o.apiVersion}/${o.kind} is not a kind apply can create`);
        return;
      }
      if (type.namespaced) o.metadata.namespace ??= 'default';
      else delete o.metadata.namespace;
      const namespace = type.namespaced ? o.metadata.namespace! : null;
      if (namespace !== null && !this.#store.get(NAMESPACES, null, namespace)) {
        problems.push(`${objectLabel(o, i)}: namespaces "${namespace}" not found`);
        return;
      }
      const current = this.#store.get(type, namespace, o.metadata.name);
      if (current) {
        o.metadata.uid = current.metadata.uid;
        o.metadata.creationTimestamp = current.metadata.creationTimestamp;
        this.#store.replace(type, o);
      } else {
        this.#store.create(type, o);
        if (type === PODS) this.#workloads.place(o);
      }
    });
    this.#workloads.schedulePending();
    return problems;
  }

  #names(type: ResourceType): string[] {
    return this.#store.list(type).map((o) => o.metadata.name);
  }

  #ownerUid(namespace: string, kind: string, name: string): string {
    const key = `${namespace}/${kind}/${name}`;
    let uid = this.#ownerUids.get(key);
    if (!uid) this.#ownerUids.set(key, (uid = randomUUID()));
    return uid;
  }

  // ---- the API ----------------------------------------------------------------

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake-kube');
    const method = req.method ?? 'GET';
    let reply: Reply;
    let eviction: Omit<EvictionRecord, 'status'> | null = null;
    let text = '';
    try {
      text = await readBody(req);
      const route = parsePath(url.pathname);
      if (!('problem' in route) && route.subresource === 'eviction') {
        const pod = this.#store.get(PODS, route.namespace, route.name!);
        const nodeName = (pod?.spec as Json | undefined)?.nodeName;
        eviction = { namespace: route.namespace!, pod: route.name!, nodeName: typeof nodeName === 'string' ? nodeName : null };
      }
      reply = await this.#serve(method, url, route, String(req.headers['content-type'] ?? ''), text);
    } catch (err) {
      reply =
        err instanceof KubeStatusError
          ? { status: err.code, body: err.toStatus() }
          : { status: 500, body: failureStatus(500, 'InternalError', `fake API server: ${(err as Error).message}`) };
    }
    const warnings = reply.warnings ?? [];
    this.requests.push({
      method,
      path: url.pathname,
      query: url.search,
      status: reply.status,
      token: bearer(req.headers.authorization),
      contentType: String(req.headers['content-type'] ?? ''),
      body: text,
      warnings,
      resourceVersion: answerVersion(reply.body),
    });
    if (eviction) this.evictions.push({ ...eviction, status: reply.status });
    // As k8s.io/apiserver's warning recorder writes them: RFC 7234 warn-code 299, no agent, the text quoted.
    if (warnings.length > 0)
      res.setHeader(
        'Warning',
        warnings.map((w) => `299 - ${JSON.stringify(w)}`),
      );
    res.writeHead(reply.status, { 'content-type': 'application/json' });
    res.end(method === 'HEAD' ? undefined : JSON.stringify(reply.body));
  }

  async #serve(method: string, url: URL, route: Route | { problem: string }, contentType: string, text: string): Promise<Reply> {
    if ('problem' in route) {
      if (method === 'GET' && url.pathname === '/version') {
        return { status: 200, body: { major: '1', minor: '34', gitVersion: 'v1.34.0-forewarn-fake', platform: 'linux/amd64' } };
      }
      const seen = await this.#fault({
        method,
        path: url.pathname,
        query: url.searchParams,
        permission: null,
        name: null,
        body: undefined,
      });
      if (seen) return seen;
      throw new KubeStatusError(404, 'NotFound', route.problem);
    }
    const verb = verbOf(method, route, url.searchParams);
    if (verb === null)
      throw new KubeStatusError(405, 'MethodNotAllowed', `the server does not allow this method (${method}) on the requested resource`);
    const { type } = route;
    const permission: Permission = {
      verb,
      group: type.group,
      resource: route.subresource === null ? type.resource : `${type.resource}/${route.subresource}`,
      namespace: route.namespace,
    };
    this.#used.set(permissionKey(permission), permission);
    let body: unknown;
    let parseError: string | undefined;
    if (text.trim() !== '') {
      try {
        body = JSON.parse(text);
      } catch (err) {
        parseError = (err as Error).message;
      }
    }
    const fault = await this.#fault({ method, path: url.pathname, query: url.searchParams, permission, name: route.name, body });
    if (fault) return fault;
    const rbac = this.options.rbac;
    if (rbac && !allows(this.#rbacObjects(), rbac.subject, permission, route.name)) {
      throw new KubeStatusError(403, 'Forbidden', forbiddenMessage(rbac.subject, permission, route.name), {
        ...(route.name !== null ? { name: route.name } : {}),
        group: type.group,
        kind: type.resource,
      });
    }
    const write = {
      body,
      query: url.searchParams,
      contentType: contentType.split(';')[0]!.trim().toLowerCase(),
      ...(parseError !== undefined ? { parseError } : {}),
    };
    switch (verb) {
      case 'list':
        return this.#rest.list(route, url.searchParams);
      case 'get':
        return this.#rest.get(route);
      case 'create':
        return route.subresource === 'eviction' ? this.#rest.evict(route, write) : this.#rest.create(route, write);
      case 'update':
        return this.#rest.update(route, write);
      case 'patch':
        return this.#rest.patch(route, write);
      case 'delete':
        return this.#rest.delete(route, body, url.searchParams);
      case 'watch':
        throw new KubeStatusError(405, 'MethodNotAllowed', 'watch is not supported by the fake API server: poll with list or get');
      default:
        throw new KubeStatusError(405, 'MethodNotAllowed', `the server does not allow ${verb} on ${permission.resource}`);
    }
  }

  async #fault(request: SeenRequest): Promise<Reply | null> {
    for (const hook of [...this.#hooks]) {
      const answer = await hook(request);
      if (answer) {
        const body =
          answer.body ?? failureStatus(answer.status, reasonFor(answer.status), answer.message ?? `injected fault (HTTP ${answer.status})`);
        return { status: answer.status, body };
      }
    }
    return null;
  }

  #rbacObjects() {
    const all = (resource: string) => this.#store.list(rbacType(resource)) as unknown as Json[];
    return {
      clusterRoles: all('clusterroles'),
      clusterRoleBindings: all('clusterrolebindings'),
      roles: all('roles'),
      roleBindings: all('rolebindings'),
    };
  }
}

function answerVersion(body: unknown): string | null {
  const meta = (body as { metadata?: { resourceVersion?: unknown } } | null)?.metadata;
  return typeof meta?.resourceVersion === 'string' ? meta.resourceVersion : null;
}

/** Starts a fake API server on 127.0.0.1 at a free port. */
export async function startFakeKube(options: FakeKubeOptions = {}): Promise<FakeKube> {
  const kube = new FakeKube(options);
  await kube.listen();
  return kube;
}
