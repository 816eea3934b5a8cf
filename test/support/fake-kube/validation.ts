// What kube-apiserver refuses with 422 Invalid once a body has decoded, worded as it words it: the
// field.Error list (k8s.io/apimachinery/pkg/util/validation/field/errors.go), the content rules for
// names, label keys and values (k8s.io/apimachinery/pkg/util/validation, .../api/validate/content),
// ObjectMeta's (k8s.io/apimachinery/pkg/api/validation/objectmeta.go), and the kinds the agent writes:
// Lease (pkg/apis/coordination/validation), Node and core/v1 Event (pkg/apis/core/validation), plus
// events.k8s.io/v1 Events. README.md cites each rule; schema.ts adds the manifest-only ones.
type Json = Record<string, unknown>;

export type FieldErrorType =
  | 'FieldValueInvalid'
  | 'FieldValueRequired'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueDuplicate';

/** A field.Error; `value` is the bad value as Go's ErrorBody prints it (already quoted). */
export interface FieldError {
  type: FieldErrorType;
  field: string;
  value?: string;
  detail: string;
  /** The whole body, for the manifest rules this fake words in its own way (schema.ts). */
  body?: string;
}

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueInvalid: 'Invalid value',
  FieldValueRequired: 'Required value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueDuplicate: 'Duplicate value',
};

/** A Go %q of a string (strconv.Quote; JSON's escaping is the same for what these messages hold). */
export function q(s: string): string {
  return JSON.stringify(s);
}

/** A Go %v of a number or boolean. */
export function v(x: number | boolean): string {
  return String(x);
}

export const invalid = (field: string, value: string, detail: string): FieldError => ({ type: 'FieldValueInvalid', field, value, detail });
export const required = (field: string, detail = ''): FieldError => ({ type: 'FieldValueRequired', field, detail });
export const forbidden = (field: string, detail: string): FieldError => ({ type: 'FieldValueForbidden', field, detail });
export const tooLong = (field: string, max: number): FieldError => ({
  type: 'FieldValueTooLong',
  field,
  detail: `must have at most ${max} bytes`,
});
export const notSupported = (field: string, value: string, supported: string[]): FieldError => ({
  type: 'FieldValueNotSupported',
  field,
  value,
  detail: supported.length > 0 ? `supported values: ${supported.map(q).join(', ')}` : '',
});
export const duplicate = (field: string, value: string, detail = ''): FieldError => ({ type: 'FieldValueDuplicate', field, value, detail });

/** field.Error.ErrorBody: Required, Forbidden and TooLong never show the value. */
export function errorBody(e: FieldError): string {
  if (e.body !== undefined) return e.body;
  const shown = e.type === 'FieldValueRequired' || e.type === 'FieldValueForbidden' || e.type === 'FieldValueTooLong';
  const s = shown || e.value === undefined ? TYPE_TEXT[e.type] : `${TYPE_TEXT[e.type]}: ${e.value}`;
  return e.detail === '' ? s : `${s}: ${e.detail}`;
}

export function errorText(e: FieldError): string {
  return `${e.field}: ${errorBody(e)}`;
}

/** ErrorList.ToAggregate().Error(): duplicates dropped; one error as it is, several as `[a, b]`. */
export function aggregate(errors: FieldError[]): string {
  const texts = [...new Set(errors.map(errorText))];
  return texts.length === 1 ? texts[0]! : `[${texts.join(', ')}]`;
}

// ---- content rules -----------------------------------------------------------------------------

const LABEL_KEY_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_KEY_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT = `(${LABEL_KEY_FMT})?`;
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const anchored = (fmt: string): RegExp => new RegExp(`^${fmt}$`);

/** validation.RegexError (note Go's double space before each " or "). */
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

const byteLength = (s: string): number => Buffer.byteLength(s, 'utf8');

/** IsDNS1123Subdomain; `unit` is the length error's wording (util/validation: characters; validate/content: bytes). */
export function isDNS1123Subdomain(value: string, unit: 'characters' | 'bytes' = 'characters'): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 253) errs.push(`must be no more than 253 ${unit}`);
  if (!anchored(DNS1123_SUBDOMAIN_FMT).test(value)) errs.push(regexError(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  return errs;
}

export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 63) errs.push('must be no more than 63 characters');
  if (!anchored(DNS1123_LABEL_FMT).test(value)) {
    errs.push(
      anchored(DNS1123_SUBDOMAIN_FMT).test(value)
        ? 'must not contain dots'
        : regexError(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, 'my-name', '123-abc'),
    );
  }
  return errs;
}

/** IsQualifiedName = content.IsLabelKey: [prefix/]name, the prefix a DNS subdomain, the name at most 63 bytes. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) name = parts[0]!;
  else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...isDNS1123Subdomain(prefix, 'bytes').map((m) => `prefix part ${m}`));
  } else {
    return [
      `a valid label key ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (byteLength(name) > 63) errs.push('name part must be no more than 63 bytes');
  if (!anchored(LABEL_KEY_FMT).test(name))
    errs.push(`name part ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

/** IsValidLabelValue = content.IsLabelValue: empty, or at most 63 bytes of [A-Za-z0-9-_.] starting and ending alphanumeric. */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 63) errs.push('must be no more than 63 bytes');
  if (!anchored(LABEL_VALUE_FMT).test(value)) errs.push(regexError(LABEL_VALUE_MSG, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  return errs;
}

/** A name validator: `prefix` when it is a generateName, to which 5 characters will be appended. */
export type NameFn = (name: string, prefix: boolean) => string[];

/** maskTrailingDash, quirk included: a trailing '-' and the character before it become "a". */
function maskTrailingDash(name: string): string {
  return name.length > 1 && name.endsWith('-') ? `${name.slice(0, -2)}a` : name;
}

export const nameIsDNSSubdomain: NameFn = (name, prefix) => isDNS1123Subdomain(prefix ? maskTrailingDash(name) : name);
export const nameIsDNSLabel: NameFn = (name, prefix) => isDNS1123Label(prefix ? maskTrailingDash(name) : name);
/** path.ValidatePathSegmentName: what every object's name must be, to sit in a URL. */
export const pathSegmentName: NameFn = (name, prefix) => {
  if (!prefix && (name === '.' || name === '..')) return [`may not be '${name}'`];
  return ['/', '%'].filter((c) => name.includes(c)).map((c) => `may not contain '${c}'`);
};

// ---- ObjectMeta --------------------------------------------------------------------------------

function isRecord(x: unknown): x is Json {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function str(x: unknown): string {
  return typeof x === 'string' ? x : '';
}

function stringMap(x: unknown): [string, string][] {
  return isRecord(x) ? Object.entries(x).map(([k, val]) => [k, str(val)]) : [];
}

export const ANNOTATIONS_LIMIT = 256 * 1024;

export function labelErrors(labels: unknown, field: string): FieldError[] {
  const out: FieldError[] = [];
  for (const [key, value] of stringMap(labels)) {
    for (const msg of isQualifiedName(key)) out.push(invalid(field, q(key), msg));
    for (const msg of isValidLabelValue(value)) out.push(invalid(field, q(value), msg));
  }
  return out;
}

/** ValidateAnnotations: keys are qualified names (case aside); keys and values together at most 256 KiB. */
function annotationErrors(annotations: unknown, field: string): FieldError[] {
  const out: FieldError[] = [];
  let size = 0;
  for (const [key, value] of stringMap(annotations)) {
    for (const msg of isQualifiedName(key.toLowerCase())) out.push(invalid(field, q(key), msg));
    size += byteLength(key) + byteLength(value);
  }
  if (size > ANNOTATIONS_LIMIT) out.push(tooLong(field, ANNOTATIONS_LIMIT));
  return out;
}

function ownerReferenceErrors(refs: unknown, field: string): FieldError[] {
  if (!Array.isArray(refs)) return [];
  const out: FieldError[] = [];
  let controller = '';
  for (const ref of refs) {
    if (!isRecord(ref)) continue;
    const apiVersion = str(ref.apiVersion);
    const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
    if (version === '') out.push(invalid(`${field}.apiVersion`, q(apiVersion), 'version must not be empty'));
    if (str(ref.kind) === '') out.push(invalid(`${field}.kind`, q(''), 'must not be empty'));
    if (str(ref.name) === '') out.push(invalid(`${field}.name`, q(''), 'must not be empty'));
    if (str(ref.uid) === '') out.push(invalid(`${field}.uid`, q(''), 'must not be empty'));
    if (ref.controller === true) {
      const current = `${str(ref.kind)}/${str(ref.name)}`;
      if (controller !== '') {
        out.push(
          invalid(
            field,
            '[]v1.OwnerReference{…}',
            `Only one reference can have Controller set to true. Found "true" in references for ${controller} and ${current}`,
          ),
        );
      } else controller = current;
    }
  }
  return out;
}

function finalizerErrors(finalizers: unknown, field: string): FieldError[] {
  if (!Array.isArray(finalizers)) return [];
  return finalizers.flatMap((f) => isQualifiedName(str(f)).map((msg) => invalid(field, q(str(f)), msg)));
}

/** ValidateObjectMetaAccessor: on create, after generateName has made the name. */
export function objectMetaErrors(meta: unknown, namespaced: boolean, nameFn: NameFn): FieldError[] {
  const m = isRecord(meta) ? meta : {};
  const out: FieldError[] = [];
  const generateName = str(m.generateName);
  const name = str(m.name);
  if (generateName !== '') for (const msg of nameFn(generateName, true)) out.push(invalid('metadata.generateName', q(generateName), msg));
  if (name === '') out.push(required('metadata.name', 'name or generateName is required'));
  else for (const msg of nameFn(name, false)) out.push(invalid('metadata.name', q(name), msg));
  return [...out, ...commonMetaErrors(m, namespaced)];
}

function commonMetaErrors(m: Json, namespaced: boolean): FieldError[] {
  const out: FieldError[] = [];
  const namespace = str(m.namespace);
  if (namespaced) {
    if (namespace === '') out.push(required('metadata.namespace'));
    else for (const msg of nameIsDNSLabel(namespace, false)) out.push(invalid('metadata.namespace', q(namespace), msg));
  } else if (namespace !== '') out.push(forbidden('metadata.namespace', 'not allowed on this type'));
  out.push(...labelErrors(m.labels, 'metadata.labels'));
  out.push(...annotationErrors(m.annotations, 'metadata.annotations'));
  out.push(...ownerReferenceErrors(m.ownerReferences, 'metadata.ownerReferences'));
  out.push(...finalizerErrors(m.finalizers, 'metadata.finalizers'));
  return out;
}

/** ValidateObjectMetaAccessorUpdate. */
export function objectMetaUpdateErrors(meta: unknown, old: unknown): FieldError[] {
  const m = isRecord(meta) ? meta : {};
  const o = isRecord(old) ? old : {};
  const out: FieldError[] = [];
  if (str(m.resourceVersion) === '') out.push(invalid('metadata.resourceVersion', q(''), 'must be specified for an update'));
  for (const key of ['name', 'namespace', 'uid', 'creationTimestamp', 'deletionTimestamp']) {
    if (str(m[key]) !== str(o[key])) out.push(invalid(`metadata.${key}`, q(str(m[key])), 'field is immutable'));
  }
  out.push(...labelErrors(m.labels, 'metadata.labels'));
  out.push(...annotationErrors(m.annotations, 'metadata.annotations'));
  out.push(...ownerReferenceErrors(m.ownerReferences, 'metadata.ownerReferences'));
  return out;
}

/** The generic check every create gets after its kind's own (rest.BeforeCreate): names that fit a URL path. */
export function genericCreateErrors(object: Json, namespaced: boolean): FieldError[] {
  return objectMetaErrors(object.metadata, namespaced, pathSegmentName);
}

// ---- kinds -------------------------------------------------------------------------------------

export interface KindValidation {
  /** The strategy's Validate on create. */
  create(object: Json): FieldError[];
  /** The strategy's ValidateUpdate. */
  update(object: Json, old: Json): FieldError[];
}

function leaseSpecErrors(spec: unknown): FieldError[] {
  const s = isRecord(spec) ? spec : {};
  const out: FieldError[] = [];
  if (typeof s.leaseDurationSeconds === 'number' && s.leaseDurationSeconds <= 0) {
    out.push(invalid('spec.leaseDurationSeconds', v(s.leaseDurationSeconds), 'must be greater than 0'));
  }
  if (typeof s.leaseTransitions === 'number' && s.leaseTransitions < 0) {
    out.push(invalid('spec.leaseTransitions', v(s.leaseTransitions), 'must be greater than or equal to 0'));
  }
  if (typeof s.strategy === 'string' && s.strategy !== '') {
    if (!s.strategy.includes('/')) {
      if (s.strategy !== 'OldestEmulationVersion')
        out.push(notSupported('spec.strategy.strategy', q(s.strategy), ['OldestEmulationVersion']));
    } else for (const msg of isQualifiedName(s.strategy)) out.push(invalid('spec.strategy.strategy', q(s.strategy), msg));
  }
  if (typeof s.preferredHolder === 'string' && s.preferredHolder !== '' && str(s.strategy) === '') {
    out.push(forbidden('spec.preferredHolder', 'may only be specified if `strategy` is defined'));
  }
  return out;
}

const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** validateNodeTaints: note the path, metadata.taints, as the real server words it. */
function taintErrors(taints: unknown): FieldError[] {
  if (!Array.isArray(taints)) return [];
  const out: FieldError[] = [];
  const seen = new Set<string>();
  taints.forEach((taint: unknown, i) => {
    const t = isRecord(taint) ? taint : {};
    const at = `metadata.taints[${i}]`;
    const key = str(t.key);
    const value = str(t.value);
    const effect = str(t.effect);
    for (const msg of isQualifiedName(key)) out.push(invalid(`${at}.key`, q(key), msg));
    const valueErrors = isValidLabelValue(value);
    if (valueErrors.length > 0) out.push(invalid(`${at}.value`, q(value), valueErrors.join(';')));
    if (effect === '') out.push(required(`${at}.effect`));
    else if (!TAINT_EFFECTS.includes(effect)) out.push(notSupported(`${at}.effect`, q(effect), TAINT_EFFECTS));
    if (seen.has(`${effect}\u0000${key}`)) {
      out.push(
        duplicate(
          at,
          `core.Taint{Key:${q(key)}, Value:${q(value)}, Effect:${q(effect)}, TimeAdded:<…>}`,
          'taints must be unique by key and effect pair',
        ),
      );
    }
    seen.add(`${effect}\u0000${key}`);
  });
  return out;
}

function nodeErrors(node: Json): FieldError[] {
  const spec = isRecord(node.spec) ? node.spec : {};
  return [...objectMetaErrors(node.metadata, false, nameIsDNSSubdomain), ...taintErrors(spec.taints)];
}

/** legacyValidateEvent: what every core/v1 Event must be (the request is v1, so nothing stricter). */
function legacyEventErrors(event: Json): FieldError[] {
  const out: FieldError[] = [];
  const namespace = str(isRecord(event.metadata) ? event.metadata.namespace : undefined);
  // core/v1 names the object involvedObject; events.k8s.io/v1, regarding.
  const about = isRecord(event.involvedObject) ? event.involvedObject : isRecord(event.regarding) ? event.regarding : {};
  const involved = str(about.namespace);
  const noMatch = invalid('involvedObject.namespace', q(involved), 'does not match event.namespace');
  if (str(event.eventTime) === '') {
    if (involved === '' ? namespace !== '' && namespace !== 'default' : involved !== namespace) out.push(noMatch);
  } else {
    if (involved === '' && namespace !== 'default' && namespace !== 'kube-system') out.push(noMatch);
    const controller = str(event.reportingComponent ?? event.reportingController);
    const controllerField = 'reportingController';
    if (controller === '') out.push(required(controllerField));
    for (const msg of isQualifiedName(controller)) out.push(invalid(controllerField, q(controller), msg));
    const instance = str(event.reportingInstance);
    if (instance === '') out.push(required('reportingInstance'));
    if (instance.length > 128) out.push(invalid('reportingInstance', q(''), 'can have at most 128 characters'));
    const action = str(event.action);
    if (action === '') out.push(required('action'));
    if (action.length > 128) out.push(invalid('action', q(''), 'can have at most 128 characters'));
    const reason = str(event.reason);
    if (reason === '') out.push(required('reason'));
    if (reason.length > 128) out.push(invalid('reason', q(''), 'can have at most 128 characters'));
    const message = str(event.apiVersion === 'v1' ? event.message : event.note);
    if (message.length > 1024) out.push(invalid('message', q(''), 'can have at most 1024 characters'));
  }
  for (const msg of isDNS1123Subdomain(namespace)) out.push(invalid('namespace', q(namespace), msg));
  return out;
}

/** ValidateEventCreate for events.k8s.io/v1: the legacy rules and the strict ones. */
function eventsV1Errors(event: Json): FieldError[] {
  const out = [...legacyEventErrors(event), ...objectMetaErrors(event.metadata, true, nameIsDNSSubdomain)];
  const series = isRecord(event.series) ? event.series : null;
  if (series !== null) {
    if (typeof series.count !== 'number' || series.count < 2) out.push(invalid('series.count', q(''), 'should be at least 2'));
    if (str(series.lastObservedTime) === '') out.push(required('series.lastObservedTime'));
  }
  if (str(event.eventTime) === '') out.push(required('eventTime'));
  if (event.type !== 'Normal' && event.type !== 'Warning') out.push(invalid('type', q(''), `has invalid value: ${str(event.type)}`));
  if (str(event.deprecatedFirstTimestamp) !== '') out.push(invalid('firstTimestamp', q(''), 'needs to be unset'));
  if (str(event.deprecatedLastTimestamp) !== '') out.push(invalid('lastTimestamp', q(''), 'needs to be unset'));
  if (typeof event.deprecatedCount === 'number' && event.deprecatedCount !== 0) out.push(invalid('count', q(''), 'needs to be unset'));
  if (isRecord(event.deprecatedSource) && (str(event.deprecatedSource.component) !== '' || str(event.deprecatedSource.host) !== '')) {
    out.push(invalid('source', q(''), 'needs to be unset'));
  }
  return out;
}

const namespacedDNSSubdomain = (object: Json): FieldError[] => objectMetaErrors(object.metadata, true, nameIsDNSSubdomain);

/** Per apiVersion/kind; a kind without an entry gets ObjectMeta's checks with DNS-subdomain names. */
export const KINDS: Record<string, KindValidation> = {
  'coordination.k8s.io/v1/Lease': {
    create: (lease) => [...namespacedDNSSubdomain(lease), ...leaseSpecErrors(lease.spec)],
    update: (lease, old) => [...objectMetaUpdateErrors(lease.metadata, old.metadata), ...leaseSpecErrors(lease.spec)],
  },
  'v1/Node': {
    create: nodeErrors,
    update: (node, old) => {
      const out = [...nodeErrors(node), ...objectMetaUpdateErrors(node.metadata, old.metadata)];
      const was = isRecord(old.spec) ? str(old.spec.providerID) : '';
      const now = isRecord(node.spec) ? str(node.spec.providerID) : '';
      if (was !== '' && was !== now)
        out.push(forbidden('spec.providerID', 'node updates may not change providerID except from "" to valid'));
      return out;
    },
  },
  'v1/Namespace': {
    create: (ns) => objectMetaErrors(ns.metadata, false, nameIsDNSLabel),
    update: (ns, old) => [...objectMetaErrors(ns.metadata, false, nameIsDNSLabel), ...objectMetaUpdateErrors(ns.metadata, old.metadata)],
  },
  'v1/Event': {
    create: legacyEventErrors,
    update: legacyEventErrors,
  },
  'events.k8s.io/v1/Event': {
    create: eventsV1Errors,
    update: (event, old) => [...legacyEventErrors(event), ...objectMetaUpdateErrors(event.metadata, old.metadata)],
  },
};

/** Kinds whose objects are cluster-scoped (the rest are namespaced). */
const CLUSTER_SCOPED = new Set([
  'v1/Node',
  'v1/Namespace',
  'rbac.authorization.k8s.io/v1/ClusterRole',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
]);

/** RBAC objects may be named like `system:forewarn`: any name that fits a path segment. */
const RBAC = /^rbac\.authorization\.k8s\.io\//;

export function kindValidation(apiVersion: string, kind: string): KindValidation {
  const key = `${apiVersion}/${kind}`;
  const known = KINDS[key];
  if (known) return known;
  const namespaced = !CLUSTER_SCOPED.has(key);
  const nameFn = RBAC.test(key) ? pathSegmentName : nameIsDNSSubdomain;
  return {
    create: (object) => objectMetaErrors(object.metadata, namespaced, nameFn),
    update: (object, old) => [
      ...objectMetaErrors(object.metadata, namespaced, nameFn),
      ...objectMetaUpdateErrors(object.metadata, old.metadata),
    ],
  };
}

export function isNamespacedKind(apiVersion: string, kind: string): boolean {
  return !CLUSTER_SCOPED.has(`${apiVersion}/${kind}`);
}
