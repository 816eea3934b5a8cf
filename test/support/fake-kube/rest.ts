// The REST verbs on stored objects, in the order kube-apiserver's handlers and generic registry take
// their steps (README.md cites each): a body is decoded as the server decodes it (decode.ts: 400 on a
// wrong type or a bad time; unknown fields per fieldValidation), validated as its kind's strategy and
// rest.BeforeCreate/BeforeUpdate validate it (validation.ts: 422), then stored with optimistic
// concurrency on resourceVersion (409). Patches: JSON patch (RFC 6902, a failed `test` answering 422),
// merge and strategic merge; any other content type 415. Also graceful pod deletion and the Eviction
// subresource's budget check.
import { randomInt } from 'node:crypto';
import { decode } from './decode.js';
import { jsonPatch, mergePatch, PatchError } from './patch.js';
import { apiVersionOf, resourceByName, type ResourceType, type Route } from './paths.js';
import { evictionRefusal } from './pdb.js';
import { manifestRuleErrors, modelFor } from './schema.js';
import { parseFieldSelector, parseLabelSelector, SelectorError } from './selectors.js';
import {
  badRequest,
  conflict,
  internalError,
  invalid,
  KubeStatusError,
  MODIFIED,
  notFound,
  patchNotApplied,
  successStatus,
  unsupportedMediaType,
} from './status.js';
import type { KubeObject, Store } from './store.js';
import {
  genericCreateErrors,
  invalid as invalidField,
  kindValidation,
  notSupported,
  objectMetaUpdateErrors,
  q,
  tooLong,
  type FieldError,
} from './validation.js';
import type { Workloads } from './workloads.js';

const PODS = resourceByName('', 'pods')!;
const NODES = resourceByName('', 'nodes')!;
const PDBS = resourceByName('policy', 'poddisruptionbudgets')!;
const NAMESPACES = resourceByName('', 'namespaces')!;
const LEASES = resourceByName('coordination.k8s.io', 'leases')!;

type Json = Record<string, unknown>;

export interface Reply {
  status: number;
  body: unknown;
  /** Warning headers the server adds (`299 - "text"`): unknown fields under fieldValidation=Warn. */
  warnings?: string[];
}

/** What a write carries besides its route. */
export interface Write {
  body: unknown;
  query: URLSearchParams;
  /** The media type, lower case, without parameters. */
  contentType: string;
  /** Set when the body is not JSON at all: why. */
  parseError?: string;
}

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

/** Patch types served for built-in resources (apiserver's installer.go), in its order. */
const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];
/** Body media types served (the JSON, YAML and protobuf serializers). */
const BODY_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];
/** store.go's maximum JSON patch length (patch.go, maxJSONPatchOperations). */
const MAX_JSON_PATCH_OPERATIONS = 10_000;
/** names.SimpleNameGenerator: generateName cut to 58 characters, then 5 random ones from this alphabet. */
const SUFFIX = 'bcdfghjklmnpqrstvwxz2456789';
const MAX_GENERATED_BASE = 58;

/** Strategies with AllowCreateOnUpdate true among those served (a PUT of a missing one creates it). */
const CREATE_ON_UPDATE = new Set([LEASES]);
/** Strategies with AllowUnconditionalUpdate false: an update must name the resourceVersion it read. */
const CONDITIONAL_ONLY = new Set([LEASES]);
/** Strategies whose PrepareForUpdate keeps the stored status (it changes through /status only). */
const STATUS_KEPT = new Set([NODES, PODS]);

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

/**
 * The write's options from the query (ValidateCreateOptions and its kin): `fieldManager` at most 128
 * printable characters, `fieldValidation` one of the three directives. Returns the directive; absent means Warn.
 */
export function fieldValidation(query: URLSearchParams, options: 'CreateOptions' | 'UpdateOptions' | 'PatchOptions'): FieldValidation {
  const errors: FieldError[] = [];
  const manager = query.get('fieldManager') ?? '';
  if (Buffer.byteLength(manager) > 128) errors.push(tooLong('fieldManager', 128));
  [...manager].forEach((c, i) => {
    if (/[\p{C}\p{Z}]/u.test(c) && c !== ' ') {
      const code = `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
      errors.push(invalidField('fieldManager', q(manager), `invalid character ${code} (at position ${i})`));
    }
  });
  const value = query.get('fieldValidation') ?? '';
  if (!['', 'Strict', 'Warn', 'Ignore'].includes(value))
    errors.push(notSupported('fieldValidation', q(value), ['', 'Ignore', 'Strict', 'Warn']));
  if (errors.length > 0) throw invalid(options, 'meta.k8s.io', '', errors);
  return value === '' ? 'Warn' : (value as FieldValidation);
}

/** NegotiateInputSerializer for a create or an update: JSON only here (YAML and protobuf are not decoded by the fake). */
function requireJsonBody(contentType: string): void {
  if (contentType === '' || contentType === 'application/json') return;
  if (BODY_TYPES.includes(contentType)) {
    throw new KubeStatusError(415, 'UnsupportedMediaType', `the fake API server decodes JSON bodies only, not ${contentType}`);
  }
  throw unsupportedMediaType(BODY_TYPES);
}

function versionOf(apiVersion: string): string {
  return apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
}

/** JSON with object keys sorted: two objects with equal texts are equal. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isRecord(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

function generateName(base: string): string {
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += SUFFIX[randomInt(SUFFIX.length)];
  return `${Buffer.from(base).subarray(0, MAX_GENERATED_BASE).toString()}${suffix}`;
}

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

  /**
   * The body decoded as the server decodes it: apiVersion and kind defaulted from the URL, a decode
   * error 400 (`Lease in version "v1" cannot be handled as a Lease: …`), unknown fields per
   * `validation` (Strict: 400; Warn: warnings; Ignore: dropped). Returns the object as it would be stored.
   */
  #decodeBody(route: Route, body: unknown, validation: FieldValidation, warnings: string[]): Json {
    const { type } = route;
    if (!isRecord(body)) {
      throw badRequest(
        `the object provided is unrecognized (must be of type ${type.kind}): couldn't get version/kind; json parse error: ` +
          `cannot unmarshal ${Array.isArray(body) ? 'array' : typeof body} into Go value of type struct`,
      );
    }
    const raw = structuredClone(body);
    raw.apiVersion ??= apiVersionOf(type);
    raw.kind ??= type.kind;
    if (raw.apiVersion !== apiVersionOf(type)) {
      throw badRequest(
        `the API version in the data (${String(raw.apiVersion)}) does not match the expected API version (${apiVersionOf(type)})`,
      );
    }
    if (raw.kind !== type.kind)
      throw badRequest(`the kind in the data (${String(raw.kind)}) does not match the expected kind (${type.kind})`);
    const className = modelFor(raw.apiVersion, raw.kind);
    let object: Json = raw;
    if (className !== undefined) {
      const decoded = decode(raw, className);
      const cannot = `${type.kind} in version ${JSON.stringify(versionOf(String(raw.apiVersion)))} cannot be handled as a ${type.kind}`;
      if (decoded.error !== null) throw badRequest(`${cannot}: ${decoded.error}`);
      if (decoded.strict.length > 0) {
        if (validation === 'Strict') throw badRequest(`${cannot}: strict decoding error: ${decoded.strict.join(', ')}`);
        if (validation === 'Warn') warnings.push(...decoded.strict);
      }
      object = decoded.object;
    }
    object.metadata = isRecord(object.metadata) ? object.metadata : {};
    return object;
  }

  /** rest.EnsureObjectNamespaceMatchesRequestNamespace: unset takes the URL's; cluster-scoped drops it. */
  #namespace(route: Route, object: Json): void {
    const meta = object.metadata as Json;
    if (!route.type.namespaced) {
      delete meta.namespace;
      return;
    }
    if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== route.namespace) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    meta.namespace = route.namespace;
  }

  /** The kind's strategy checks and this fake's manifest rules; then, if those pass, the generic ones (rest.BeforeCreate). */
  #validateCreate(type: ResourceType, object: Json): void {
    const meta = object.metadata as Json;
    const name = typeof meta.name === 'string' ? meta.name : '';
    const own = [...kindValidation(String(object.apiVersion), String(object.kind)).create(object), ...manifestRuleErrors(object)];
    if (own.length > 0) throw invalid(type.kind, type.group, name, own);
    const generic = genericCreateErrors(object, type.namespaced);
    if (generic.length > 0) throw invalid(type.kind, type.group, name, generic);
  }

  /** The generic checks of rest.BeforeUpdate (names that fit a path, immutable fields) with the kind's ValidateUpdate. */
  #validateUpdate(type: ResourceType, object: Json, current: KubeObject): void {
    const meta = object.metadata as Json;
    const errors: FieldError[] = [
      ...genericCreateErrors(object, type.namespaced),
      ...objectMetaUpdateErrors(meta, current.metadata),
      ...kindValidation(String(object.apiVersion), String(object.kind)).update(object, current as unknown as Json),
      ...manifestRuleErrors(object),
    ];
    if (errors.length > 0) throw invalid(type.kind, type.group, String(meta.name ?? ''), errors);
  }

  /** The store's create: generateName, validation, no resourceVersion, a name not taken. */
  #store(route: Route, object: Json): Reply {
    const { type } = route;
    const meta = object.metadata as Json;
    for (const owned of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds']) delete meta[owned];
    const generate = (meta.name === undefined || meta.name === '') && typeof meta.generateName === 'string' && meta.generateName !== '';
    if (generate) meta.name = generateName(meta.generateName as string);
    this.#validateCreate(type, object);
    // etcd3's store refuses it with a plain error, which the handler turns into a 500 without a reason.
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== '' && meta.resourceVersion !== '0') {
      throw internalError('resourceVersion should not be set on objects to be created');
    }
    delete meta.resourceVersion;
    if (type === PODS) object.status = { phase: 'Pending', conditions: [] };
    for (let attempt = 0; ; attempt++) {
      try {
        const created = this.store.create(type, object as KubeObject);
        if (type === PODS) this.workloads.place(created);
        return { status: 201, body: copy(created) };
      } catch (err) {
        // A generated name that is taken is generated again.
        if (!(generate && err instanceof KubeStatusError && err.reason === 'AlreadyExists' && attempt < 8)) throw err;
        meta.name = generateName(meta.generateName as string);
      }
    }
  }

  /** A body that is not JSON: the decoder cannot even find its kind. */
  #unparseable(route: Route, write: Write): void {
    if (write.parseError === undefined) return;
    throw badRequest(
      `the object provided is unrecognized (must be of type ${route.type.kind}): couldn't get version/kind; json parse error: ${write.parseError}`,
    );
  }

  create(route: Route, write: Write): Reply {
    requireJsonBody(write.contentType);
    this.#unparseable(route, write);
    const warnings: string[] = [];
    const validation = fieldValidation(write.query, 'CreateOptions');
    const object = this.#decodeBody(route, write.body, validation, warnings);
    // The NamespaceLifecycle admission plugin, before the store.
    this.requireNamespace(route.namespace);
    this.#namespace(route, object);
    return { ...this.#store(route, object), warnings };
  }

  update(route: Route, write: Write): Reply {
    requireJsonBody(write.contentType);
    this.#unparseable(route, write);
    const { type } = route;
    const name = route.name!;
    const warnings: string[] = [];
    const validation = fieldValidation(write.query, 'UpdateOptions');
    const object = this.#decodeBody(route, write.body, validation, warnings);
    const meta = object.metadata as Json;
    if (meta.name !== name)
      throw badRequest(`the name of the object (${String(meta.name ?? '')}) does not match the name on the URL (${name})`);
    this.requireNamespace(route.namespace);
    this.#namespace(route, object);
    const current = this.store.get(type, route.namespace, name);
    if (!current) {
      if (!CREATE_ON_UPDATE.has(type)) throw notFound(type.resource, type.group, name);
      // The create-on-update path returns before any resourceVersion check.
      delete meta.resourceVersion;
      return { ...this.#store(route, object), warnings };
    }
    if (meta.uid !== undefined && meta.uid !== '' && meta.uid !== current.metadata.uid) {
      throw conflict(
        type.resource,
        type.group,
        name,
        `Precondition failed: UID in precondition: ${String(meta.uid)}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    this.#checkVersion(type, name, meta, current);
    this.#keepServerFields(type, current, object);
    this.#validateUpdate(type, object, current);
    return { status: 200, body: copy(this.#replace(type, object, current)), warnings };
  }

  /** The store's write, skipped when nothing changed (etcd3's GuaranteedUpdate): the resourceVersion stays. */
  #replace(type: ResourceType, object: Json, current: KubeObject): KubeObject {
    if (canonical(object) === canonical(current)) return current;
    return this.store.replace(type, object as KubeObject);
  }

  /** store.Update: no resourceVersion is "any" where the strategy allows it, else 422; another one is 409. */
  #checkVersion(type: ResourceType, name: string, meta: Json, current: KubeObject): void {
    const version = typeof meta.resourceVersion === 'string' ? meta.resourceVersion : '';
    if (version === '' || version === '0') {
      if (CONDITIONAL_ONLY.has(type)) {
        throw invalid(type.resource, type.group, name, [
          invalidField('metadata.resourceVersion', '0x0', 'must be specified for an update'),
        ]);
      }
      meta.resourceVersion = current.metadata.resourceVersion;
    } else if (version !== current.metadata.resourceVersion) {
      throw conflict(type.resource, type.group, name, MODIFIED);
    }
  }

  /** rest.BeforeUpdate and PrepareForUpdate: uid, creationTimestamp, a pending deletion and (for some kinds) status are the server's. */
  #keepServerFields(type: ResourceType, current: KubeObject, object: Json): void {
    const meta = object.metadata as Json;
    if (meta.uid === undefined || meta.uid === '') meta.uid = current.metadata.uid;
    meta.creationTimestamp = current.metadata.creationTimestamp;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    if (current.metadata.deletionTimestamp !== undefined) {
      meta.deletionTimestamp = current.metadata.deletionTimestamp;
      meta.deletionGracePeriodSeconds = current.metadata.deletionGracePeriodSeconds;
    }
    if (STATUS_KEPT.has(type)) {
      if (current.status === undefined) delete object.status;
      else object.status = structuredClone(current.status);
    }
  }

  patch(route: Route, write: Write): Reply {
    const { type } = route;
    const name = route.name!;
    const { contentType } = write;
    if (!PATCH_TYPES.includes(contentType)) throw unsupportedMediaType(PATCH_TYPES);
    if (contentType === 'application/apply-patch+yaml') {
      throw new KubeStatusError(
        415,
        'UnsupportedMediaType',
        'server-side apply (application/apply-patch+yaml) is not implemented by the fake API server',
      );
    }
    const validation = fieldValidation(write.query, 'PatchOptions');
    const current = this.store.mustGet(type, route.namespace, name);
    const warnings: string[] = [];
    const strictOnPatch = validation !== 'Ignore';
    if (write.parseError !== undefined) throw badRequest(strictOnPatch ? `error decoding patch: ${write.parseError}` : write.parseError);
    let patched: unknown;
    if (contentType === 'application/json-patch+json') {
      if (!Array.isArray(write.body)) {
        throw badRequest(
          strictOnPatch
            ? `error decoding patch: json: cannot unmarshal ${isRecord(write.body) ? 'object' : typeof write.body} into Go value of type []handlers.jsonPatchOp`
            : `json: cannot unmarshal ${isRecord(write.body) ? 'object' : typeof write.body} into Go value of type jsonpatch.Patch`,
        );
      }
      if (write.body.length > MAX_JSON_PATCH_OPERATIONS) {
        throw new KubeStatusError(
          413,
          'RequestEntityTooLarge',
          `Request entity too large: The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${write.body.length}`,
        );
      }
      if (strictOnPatch) {
        write.body.forEach((op: unknown, i) => {
          if (!isRecord(op)) return;
          for (const key of Object.keys(op)) {
            if (!['op', 'path', 'from', 'value'].includes(key)) warnings.push(`json patch unknown field "[${i}].${key}"`);
          }
        });
      }
      try {
        patched = jsonPatch(current, write.body);
      } catch (err) {
        // The patch library's reason (a failed `test`, a missing path) is not passed on.
        if (err instanceof PatchError) throw patchNotApplied();
        throw err;
      }
    } else {
      if (!isRecord(write.body)) {
        const kind = Array.isArray(write.body) ? 'array' : typeof write.body;
        throw badRequest(
          contentType === 'application/merge-patch+json' && strictOnPatch
            ? `error decoding patch: json: cannot unmarshal ${kind} into Go value of type map[string]interface {}`
            : `json: cannot unmarshal ${kind} into Go value of type map[string]interface {}`,
        );
      }
      // A strategic merge patch is served as a merge patch: lists replaced whole (right for the fields used here).
      patched = mergePatch(current, write.body);
    }
    if (!isRecord(patched)) throw patchNotApplied();
    const object = this.#decodePatched(type, patched, validation, warnings);
    if (validation === 'Strict' && warnings.length > 0) {
      throw invalid('', '', '', [invalidField('patch', q(JSON.stringify(patched)), `strict decoding error: ${warnings.join(', ')}`)]);
    }
    const meta = object.metadata as Json;
    if (meta.name !== name)
      throw badRequest(`the name of the object (${String(meta.name ?? '')}) does not match the name on the URL (${name})`);
    if (type.namespaced && meta.namespace !== route.namespace) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    this.#checkVersion(type, name, meta, current);
    this.#keepServerFields(type, current, object);
    this.#validateUpdate(type, object, current);
    const stored = this.#replace(type, object, current);
    this.workloads.schedulePending();
    return { status: 200, body: copy(stored), warnings: validation === 'Warn' ? warnings : [] };
  }

  /** The patched object decoded again (patch.go): a decode error is 422 on the field `patch`; unknown fields collected. */
  #decodePatched(type: ResourceType, patched: Json, validation: FieldValidation, warnings: string[]): Json {
    const className = modelFor(patched.apiVersion, patched.kind);
    if (patched.apiVersion !== apiVersionOf(type) || patched.kind !== type.kind || className === undefined) {
      throw invalid('', '', '', [invalidField('patch', q(JSON.stringify(patched)), 'the patch changed apiVersion or kind')]);
    }
    const decoded = decode(patched, className);
    if (decoded.error !== null) throw invalid('', '', '', [invalidField('patch', q(JSON.stringify(patched)), decoded.error)]);
    if (validation !== 'Ignore') warnings.push(...decoded.strict);
    const object = decoded.object;
    object.metadata = isRecord(object.metadata) ? object.metadata : {};
    return object;
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
  evict(route: Route, write: Write): Reply {
    requireJsonBody(write.contentType);
    this.#unparseable(route, write);
    const name = route.name!;
    const warnings: string[] = [];
    const validation = fieldValidation(write.query, 'CreateOptions');
    const body = write.body;
    if (!isRecord(body)) throw badRequest('the request body must be a JSON object (a policy/v1 Eviction)');
    const eviction: Json = { apiVersion: 'policy/v1', kind: 'Eviction', ...structuredClone(body) };
    if (eviction.kind !== 'Eviction' || !['policy/v1', 'policy/v1beta1'].includes(String(eviction.apiVersion))) {
      throw badRequest(`expected a policy/v1 Eviction, got ${String(eviction.apiVersion)}/${String(eviction.kind)}`);
    }
    const decoded = decode(eviction, 'V1Eviction');
    const cannot = `Eviction in version ${JSON.stringify(versionOf(String(eviction.apiVersion)))} cannot be handled as a Eviction`;
    if (decoded.error !== null) throw badRequest(`${cannot}: ${decoded.error}`);
    if (decoded.strict.length > 0) {
      if (validation === 'Strict') throw badRequest(`${cannot}: strict decoding error: ${decoded.strict.join(', ')}`);
      if (validation === 'Warn') warnings.push(...decoded.strict);
    }
    const pod = this.store.mustGet(PODS, route.namespace, name);
    const meta = isRecord(decoded.object.metadata) ? decoded.object.metadata : {};
    if (meta.name !== undefined && meta.name !== '' && meta.name !== name)
      throw badRequest('name in URL does not match name in Eviction object');
    if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== route.namespace) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    const options = isRecord(decoded.object.deleteOptions) ? decoded.object.deleteOptions : {};
    this.#preconditions(PODS, pod, options.preconditions);
    const created = { status: 201, body: successStatus(201), warnings };
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
