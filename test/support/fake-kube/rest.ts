// The REST verbs on stored objects, with the real server's rules: optimistic concurrency on
// resourceVersion, names and namespaces agreeing with the URL, strict schema checks, graceful pod
// deletion, and the Eviction subresource's budget check.
import { randomInt } from 'node:crypto';
import { jsonPatch, mergePatch, PatchError } from './patch.js';
import { apiVersionOf, resourceByName, type ResourceType, type Route } from './paths.js';
import { evictionRefusal } from './pdb.js';
import { modelFor, objectProblems } from './schema.js';
import { parseFieldSelector, parseLabelSelector, SelectorError } from './selectors.js';
import { badRequest, conflict, invalid, KubeStatusError, MODIFIED, notFound, successStatus } from './status.js';
import type { KubeObject, Store } from './store.js';
import type { Workloads } from './workloads.js';

const PODS = resourceByName('', 'pods')!;
const PDBS = resourceByName('policy', 'poddisruptionbudgets')!;
const NAMESPACES = resourceByName('', 'namespaces')!;

type Json = Record<string, unknown>;

export interface Reply {
  status: number;
  body: unknown;
}

function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A copy for the wire; list items go without apiVersion and kind, as a real server sends them. */
export function copy(object: KubeObject, inList = false): Json {
  const out: Json = structuredClone(object);
  if (inList) {
    delete out.apiVersion;
    delete out.kind;
  }
  return out;
}

function qualifiedKind(type: ResourceType): string {
  return type.group === '' ? type.kind : `${type.kind}.${type.group}`;
}

function checkSchema(type: ResourceType, object: Json, allowGenerateName: boolean): void {
  if (modelFor(object.apiVersion, object.kind) === undefined) return;
  const problems = objectProblems(object, { allowGenerateName });
  const name = isRecord(object.metadata) && typeof object.metadata.name === 'string' ? object.metadata.name : '';
  if (problems.length > 0) throw invalid(qualifiedKind(type), type.group, name, problems);
}

const SUFFIX = 'bcdfghjklmnpqrstvwxz2456789';

export class Rest {
  constructor(
    private readonly store: Store,
    private readonly workloads: Workloads,
  ) {}

  requireNamespace(namespace: string | null): void {
    if (namespace !== null && !this.store.get(NAMESPACES, null, namespace)) throw notFound('namespaces', '', namespace);
  }

  list(route: Route, query: URLSearchParams): Reply {
    const { type } = route;
    let byLabels: (labels: Record<string, string>) => boolean = () => true;
    let byFields: (object: unknown) => boolean = () => true;
    try {
      const labelSelector = query.get('labelSelector');
      const fieldSelector = query.get('fieldSelector');
      if (labelSelector) byLabels = parseLabelSelector(labelSelector);
      if (fieldSelector) byFields = parseFieldSelector(fieldSelector, type.resource);
    } catch (err) {
      if (err instanceof SelectorError) throw badRequest(err.message);
      throw err;
    }
    const items = this.store
      .list(type, route.namespace)
      .filter((o) => byLabels(o.metadata.labels ?? {}) && byFields(o))
      .map((o) => copy(o, true));
    return {
      status: 200,
      body: { kind: `${type.kind}List`, apiVersion: apiVersionOf(type), metadata: { resourceVersion: this.store.revision }, items },
    };
  }

  get(route: Route): Reply {
    return { status: 200, body: copy(this.store.mustGet(route.type, route.namespace, route.name!)) };
  }

  /** Fills apiVersion/kind from the URL when absent; refuses a body meant for another resource or namespace. */
  #fromBody(route: Route, body: unknown): Json {
    const { type } = route;
    if (!isRecord(body)) throw badRequest(`the request body must be a JSON object (a ${type.kind})`);
    const object = structuredClone(body);
    object.apiVersion ??= apiVersionOf(type);
    object.kind ??= type.kind;
    if (object.apiVersion !== apiVersionOf(type)) {
      throw badRequest(
        `the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${apiVersionOf(type)})`,
      );
    }
    if (object.kind !== type.kind)
      throw badRequest(`the kind in the data (${String(object.kind)}) does not match the expected kind (${type.kind})`);
    if (object.metadata === undefined || object.metadata === null) object.metadata = {};
    if (!isRecord(object.metadata)) throw badRequest('metadata must be an object');
    const meta = object.metadata;
    if (type.namespaced) {
      if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== route.namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      meta.namespace = route.namespace;
    }
    return object;
  }

  create(route: Route, body: unknown): Reply {
    const { type } = route;
    this.requireNamespace(route.namespace);
    const object = this.#fromBody(route, body);
    const meta = object.metadata as Json;
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== '') {
      throw badRequest('resourceVersion should not be set on objects to be created');
    }
    checkSchema(type, object, true);
    if ((meta.name === undefined || meta.name === '') && typeof meta.generateName === 'string') {
      let suffix = '';
      for (let i = 0; i < 5; i++) suffix += SUFFIX[randomInt(SUFFIX.length)];
      meta.name = `${meta.generateName}${suffix}`;
    }
    for (const owned of ['uid', 'deletionTimestamp', 'deletionGracePeriodSeconds']) delete meta[owned];
    if (type === PODS) object.status = { phase: 'Pending', conditions: [] };
    const created = this.store.create(type, object as KubeObject);
    if (type === PODS) this.workloads.place(created);
    return { status: 201, body: copy(created) };
  }

  update(route: Route, body: unknown): Reply {
    const { type } = route;
    const name = route.name!;
    const object = this.#fromBody(route, body);
    const meta = object.metadata as Json;
    if (meta.name !== name) throw badRequest(`the name of the object (${String(meta.name)}) does not match the name on the URL (${name})`);
    const current = this.store.mustGet(type, route.namespace, name);
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== '' && meta.resourceVersion !== current.metadata.resourceVersion) {
      throw conflict(type.resource, type.group, name, MODIFIED);
    }
    if (meta.uid !== undefined && meta.uid !== '' && meta.uid !== current.metadata.uid) {
      throw conflict(
        type.resource,
        type.group,
        name,
        `Precondition failed: UID in precondition: ${String(meta.uid)}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    checkSchema(type, object, false);
    this.#keepServerFields(current, object);
    return { status: 200, body: copy(this.store.replace(type, object as KubeObject)) };
  }

  /** uid, creationTimestamp and a pending deletion are the server's, whatever a write says. */
  #keepServerFields(current: KubeObject, object: Json): void {
    const meta = object.metadata as Json;
    meta.uid = current.metadata.uid;
    meta.creationTimestamp = current.metadata.creationTimestamp;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    if (current.metadata.deletionTimestamp !== undefined) {
      meta.deletionTimestamp = current.metadata.deletionTimestamp;
      meta.deletionGracePeriodSeconds = current.metadata.deletionGracePeriodSeconds;
    }
  }

  patch(route: Route, contentType: string, body: unknown): Reply {
    const { type } = route;
    const name = route.name!;
    const current = this.store.mustGet(type, route.namespace, name);
    let patched: unknown;
    try {
      if (contentType === 'application/merge-patch+json' || contentType === 'application/strategic-merge-patch+json') {
        if (!isRecord(body)) throw badRequest('a merge patch must be a JSON object');
        patched = mergePatch(current, body);
      } else if (contentType === 'application/json-patch+json') {
        if (!Array.isArray(body)) throw badRequest('a JSON patch must be a JSON list of operations');
        patched = jsonPatch(current, body);
      } else {
        throw new KubeStatusError(
          415,
          'UnsupportedMediaType',
          `the body of the request was in an unknown format (${contentType || 'no Content-Type'}) - accepted media types include: ` +
            'application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json',
        );
      }
    } catch (err) {
      if (err instanceof PatchError) {
        throw new KubeStatusError(422, 'Invalid', err.message, { name, group: type.group, kind: type.resource });
      }
      throw err;
    }
    if (!isRecord(patched) || !isRecord(patched.metadata))
      throw new KubeStatusError(422, 'Invalid', 'the patch removed the object or its metadata');
    const meta = patched.metadata;
    for (const field of ['name', 'namespace', 'uid'] as const) {
      if (meta[field] !== current.metadata[field]) {
        throw invalid(qualifiedKind(type), type.group, name, [{ field: `metadata.${field}`, message: 'field is immutable' }]);
      }
    }
    // A resourceVersion in the patch is a precondition, as on a real server.
    if (meta.resourceVersion !== current.metadata.resourceVersion) throw conflict(type.resource, type.group, name, MODIFIED);
    if (patched.apiVersion !== current.apiVersion || patched.kind !== current.kind) {
      throw invalid(qualifiedKind(type), type.group, name, [{ field: 'kind', message: 'apiVersion and kind cannot be changed' }]);
    }
    checkSchema(type, patched, false);
    this.#keepServerFields(current, patched);
    const stored = this.store.replace(type, patched as KubeObject);
    this.workloads.schedulePending();
    return { status: 200, body: copy(stored) };
  }

  delete(route: Route, body: unknown, query: URLSearchParams): Reply {
    const { type } = route;
    const name = route.name!;
    const current = this.store.mustGet(type, route.namespace, name);
    const options = isRecord(body) ? body : {};
    this.#preconditions(type, current, options.preconditions);
    if (type === PODS) {
      const fromQuery = query.get('gracePeriodSeconds');
      const grace = fromQuery !== null ? Number(fromQuery) : options.gracePeriodSeconds;
      if (grace !== undefined && (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0)) {
        throw badRequest(`gracePeriodSeconds must be a whole number of seconds, not ${JSON.stringify(grace)}`);
      }
      this.workloads.terminate(current, grace ?? this.#podGrace(current));
      return { status: 200, body: copy(current) };
    }
    if (type === NAMESPACES) this.#emptyNamespace(name);
    this.store.delete(type, route.namespace, name);
    if (type.resource === 'nodes') this.workloads.schedulePending();
    return { status: 200, body: successStatus(200, { name, group: type.group, kind: type.resource, uid: current.metadata.uid } as Json) };
  }

  #emptyNamespace(namespace: string): void {
    for (const type of [PODS, PDBS, ...['serviceaccounts', 'configmaps', 'events'].map((r) => resourceByName('', r)!)]) {
      for (const o of this.store.list(type, namespace)) this.store.delete(type, namespace, o.metadata.name);
    }
    for (const [group, resource] of [
      ['events.k8s.io', 'events'],
      ['coordination.k8s.io', 'leases'],
      ['apps', 'daemonsets'],
      ['rbac.authorization.k8s.io', 'roles'],
      ['rbac.authorization.k8s.io', 'rolebindings'],
    ] as const) {
      const type = resourceByName(group, resource)!;
      for (const o of this.store.list(type, namespace)) this.store.delete(type, namespace, o.metadata.name);
    }
  }

  #podGrace(pod: KubeObject): number {
    const grace = (pod.spec as Json | undefined)?.terminationGracePeriodSeconds;
    return typeof grace === 'number' ? grace : 30;
  }

  #preconditions(type: ResourceType, current: KubeObject, preconditions: unknown): void {
    if (!isRecord(preconditions)) return;
    const { uid, resourceVersion } = preconditions;
    if (typeof uid === 'string' && uid !== current.metadata.uid) {
      throw conflict(
        type.resource,
        type.group,
        current.metadata.name,
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    if (typeof resourceVersion === 'string' && resourceVersion !== current.metadata.resourceVersion) {
      throw conflict(
        type.resource,
        type.group,
        current.metadata.name,
        `Precondition failed: ResourceVersion in precondition: ${resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
      );
    }
  }

  /** POST pods/NAME/eviction: 201 when the pod may go (it starts terminating), 429 when a budget forbids it. */
  evict(route: Route, body: unknown): Reply {
    const name = route.name!;
    const pod = this.store.mustGet(PODS, route.namespace, name);
    if (!isRecord(body)) throw badRequest('the request body must be a JSON object (a policy/v1 Eviction)');
    const eviction: Json = { apiVersion: 'policy/v1', kind: 'Eviction', ...structuredClone(body) };
    if (eviction.kind !== 'Eviction' || !['policy/v1', 'policy/v1beta1'].includes(String(eviction.apiVersion))) {
      throw badRequest(`expected a policy/v1 Eviction, got ${String(eviction.apiVersion)}/${String(eviction.kind)}`);
    }
    if (eviction.apiVersion === 'policy/v1') {
      const problems = objectProblems(eviction).filter((p) => !p.field.startsWith('metadata.name'));
      if (problems.length > 0) throw invalid('Eviction.policy', 'policy', name, problems);
    }
    const meta = isRecord(eviction.metadata) ? eviction.metadata : {};
    if (meta.name !== undefined && meta.name !== name) throw badRequest('name in URL does not match name in Eviction object');
    if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== route.namespace) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    const options = isRecord(eviction.deleteOptions) ? eviction.deleteOptions : {};
    this.#preconditions(PODS, pod, options.preconditions);
    const created = { status: 201, body: successStatus(201) };
    // Already on its way out: nothing more to decide, and its clock keeps running.
    if (pod.metadata.deletionTimestamp !== undefined) return created;
    const refusal = evictionRefusal(pod, this.store.list(PODS, route.namespace), this.store.list(PDBS, route.namespace));
    if (refusal) throw refusal;
    const dryRun = Array.isArray(options.dryRun) && options.dryRun.includes('All');
    if (!dryRun) {
      const grace = typeof options.gracePeriodSeconds === 'number' ? options.gracePeriodSeconds : this.#podGrace(pod);
      this.workloads.terminate(pod, grace);
    }
    return created;
  }
}
