// Manifest checks as strict as `kubectl apply --validate=strict` against a real API server. The schema
// is @kubernetes/client-node's generated models (each V1* class's attributeTypeMap): an unknown field
// (case matters) or a wrong type is a problem with its path. On top of that, the required fields and
// rules a real server refuses an object without: names, containers' name and image, a DaemonSet's
// selector matching its template, bindings' roleRef and subjects, rules' verbs, PDB bounds.
import * as k8s from '@kubernetes/client-node';

export interface Problem {
  /** Dotted path from the object's root: `spec.template.spec.containers[0].image`. */
  field: string;
  message: string;
}

interface Attribute {
  name: string;
  baseName: string;
  type: string;
  format: string;
}

type Model = { getAttributeTypeMap(): Attribute[] };
type Json = Record<string, unknown>;

/** apiVersion/kind → the client-node model that is its schema. */
const MODELS: Record<string, string> = {
  'v1/Namespace': 'V1Namespace',
  'v1/Node': 'V1Node',
  'v1/Pod': 'V1Pod',
  'v1/ServiceAccount': 'V1ServiceAccount',
  'v1/ConfigMap': 'V1ConfigMap',
  'v1/Event': 'CoreV1Event',
  'events.k8s.io/v1/Event': 'EventsV1Event',
  'policy/v1/PodDisruptionBudget': 'V1PodDisruptionBudget',
  'policy/v1/Eviction': 'V1Eviction',
  'coordination.k8s.io/v1/Lease': 'V1Lease',
  'apps/v1/DaemonSet': 'V1DaemonSet',
  'rbac.authorization.k8s.io/v1/ClusterRole': 'V1ClusterRole',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': 'V1ClusterRoleBinding',
  'rbac.authorization.k8s.io/v1/Role': 'V1Role',
  'rbac.authorization.k8s.io/v1/RoleBinding': 'V1RoleBinding',
};

/** Fields the models type as strings that hold resource quantities, which JSON may also write as numbers. */
const QUANTITIES = new Set([
  'V1ResourceRequirements.limits',
  'V1ResourceRequirements.requests',
  'V1EmptyDirVolumeSource.sizeLimit',
  'V1NodeStatus.capacity',
  'V1NodeStatus.allocatable',
  'V1PodSpec.overhead',
]);
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$/;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

export function modelFor(apiVersion: unknown, kind: unknown): string | undefined {
  return MODELS[`${String(apiVersion)}/${String(kind)}`];
}

function model(name: string): Model | undefined {
  const found = (k8s as unknown as Record<string, unknown>)[name];
  return typeof found === 'function' && 'getAttributeTypeMap' in found ? (found as unknown as Model) : undefined;
}

function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'object') return 'mapping';
  return typeof v;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/** Walks `value` against the model type `type`, adding problems. */
function walk(value: unknown, type: string, format: string, path: string, out: Problem[], quantity = false): void {
  // null is "unset" on the wire, as YAML's empty values are.
  if (value === null || value === undefined || type === 'any' || type === 'object') return;
  const wrong = (expected: string): void => {
    out.push({ field: path, message: `expected ${expected}, got ${describe(value)}` });
  };
  const array = /^Array<(.+)>$/.exec(type);
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) return wrong('a list');
    value.forEach((item, i) => walk(item, array[1]!, '', `${path}[${i}]`, out, quantity));
  } else if (map) {
    if (!isRecord(value)) return wrong('a mapping');
    for (const [key, item] of Object.entries(value)) walk(item, map[1]!, '', join(path, key), out, quantity);
  } else if (quantity && type === 'string') {
    if (typeof value !== 'string' && typeof value !== 'number') return wrong('a quantity');
    if (!QUANTITY.test(String(value))) out.push({ field: path, message: `invalid quantity ${JSON.stringify(value)}` });
  } else if (type === 'string') {
    if (typeof value !== 'string') wrong('string');
  } else if (type === 'number') {
    if (typeof value !== 'number' || !Number.isFinite(value)) wrong('number');
    else if ((format === 'int32' || format === 'int64') && !Number.isInteger(value)) wrong('integer');
  } else if (type === 'boolean') {
    if (typeof value !== 'boolean') wrong('boolean');
  } else if (type === 'Date' || type === 'V1MicroTime') {
    if (typeof value !== 'string') wrong('a timestamp string');
    else if (Number.isNaN(Date.parse(value))) out.push({ field: path, message: `invalid timestamp ${JSON.stringify(value)}` });
  } else if (type === 'IntOrString') {
    if (typeof value === 'number' ? !Number.isInteger(value) : typeof value !== 'string') wrong('integer or string');
  } else {
    const found = model(type);
    if (found === undefined) return; // a type the models do not describe: accept it
    if (!isRecord(value)) return wrong('a mapping');
    const attributes = found.getAttributeTypeMap();
    for (const [key, item] of Object.entries(value)) {
      const attribute = attributes.find((a) => a.baseName === key);
      if (attribute === undefined) out.push({ field: join(path, key), message: 'unknown field' });
      else walk(item, attribute.type, attribute.format, join(path, key), out, QUANTITIES.has(`${type}.${key}`));
    }
    RULES[type]?.(value, path, out);
  }
}

function at(object: unknown, path: string): unknown {
  let v = object;
  for (const part of path.split('.')) v = isRecord(v) ? v[part] : undefined;
  return v;
}

function required(object: Json, key: string, path: string, out: Problem[], what = 'Required value'): boolean {
  const v = object[key];
  const empty = v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0);
  if (empty) out.push({ field: join(path, key), message: what });
  return !empty;
}

function labelProblems(labels: unknown, path: string, out: Problem[]): void {
  if (!isRecord(labels)) return;
  for (const [key, value] of Object.entries(labels)) {
    const slash = key.lastIndexOf('/');
    const prefix = slash >= 0 ? key.slice(0, slash) : '';
    const name = key.slice(slash + 1);
    if ((slash >= 0 && !DNS_SUBDOMAIN.test(prefix)) || name.length > 63 || !LABEL_NAME.test(name)) {
      out.push({ field: join(path, key), message: `invalid label key ${JSON.stringify(key)}` });
    }
    if (typeof value === 'string' && (value.length > 63 || !LABEL_VALUE.test(value))) {
      out.push({ field: join(path, key), message: `invalid label value ${JSON.stringify(value)}` });
    }
  }
}

function containerProblems(list: unknown, path: string, out: Problem[], names: Set<string>): void {
  if (!Array.isArray(list)) return;
  list.forEach((c, i) => {
    if (!isRecord(c)) return;
    const here = `${path}[${i}]`;
    if (required(c, 'name', here, out) && typeof c.name === 'string') {
      if (!DNS_LABEL.test(c.name))
        out.push({ field: `${here}.name`, message: `invalid value ${JSON.stringify(c.name)}: must be a DNS label` });
      if (names.has(c.name)) out.push({ field: `${here}.name`, message: `duplicate value ${JSON.stringify(c.name)}` });
      names.add(c.name);
    }
    required(c, 'image', here, out);
  });
}

/** Checks beyond field types, run where the walk meets an object of that model. */
const RULES: Record<string, (object: Json, path: string, out: Problem[]) => void> = {
  V1ObjectMeta(meta, path, out) {
    labelProblems(meta.labels, join(path, 'labels'), out);
  },
  V1LabelSelector(selector, path, out) {
    labelProblems(selector.matchLabels, join(path, 'matchLabels'), out);
  },
  V1PodSpec(spec, path, out) {
    const names = new Set<string>();
    if (required(spec, 'containers', path, out)) containerProblems(spec.containers, join(path, 'containers'), out, names);
    containerProblems(spec.initContainers, join(path, 'initContainers'), out, names);
  },
  V1PolicyRule(rule, path, out) {
    required(rule, 'verbs', path, out, 'Required value: verbs must contain at least one value');
    const nonResource = Array.isArray(rule.nonResourceURLs) && rule.nonResourceURLs.length > 0;
    if (nonResource) {
      if (Array.isArray(rule.resources) && rule.resources.length > 0) {
        out.push({ field: join(path, 'nonResourceURLs'), message: 'rules cannot apply to both regular resources and non-resource URLs' });
      }
      return;
    }
    required(rule, 'apiGroups', path, out, 'Required value: resource rules must supply at least one api group');
    required(rule, 'resources', path, out, 'Required value: resource rules must supply at least one resource');
  },
  V1RoleRef(ref, path, out) {
    if (ref.apiGroup !== 'rbac.authorization.k8s.io') {
      out.push({
        field: join(path, 'apiGroup'),
        message: `unsupported value ${JSON.stringify(ref.apiGroup)}: must be "rbac.authorization.k8s.io"`,
      });
    }
    if (ref.kind !== 'Role' && ref.kind !== 'ClusterRole') {
      out.push({ field: join(path, 'kind'), message: `unsupported value ${JSON.stringify(ref.kind)}: must be "Role" or "ClusterRole"` });
    }
    required(ref, 'name', path, out);
  },
  RbacV1Subject(subject, path, out) {
    required(subject, 'name', path, out);
    const group = subject.apiGroup ?? '';
    if (subject.kind === 'ServiceAccount') {
      if (group !== '') out.push({ field: join(path, 'apiGroup'), message: `unsupported value ${JSON.stringify(group)}: must be ""` });
    } else if (subject.kind === 'User' || subject.kind === 'Group') {
      if (group !== 'rbac.authorization.k8s.io') {
        out.push({
          field: join(path, 'apiGroup'),
          message: `unsupported value ${JSON.stringify(group)}: must be "rbac.authorization.k8s.io"`,
        });
      }
    } else {
      out.push({
        field: join(path, 'kind'),
        message: `unsupported value ${JSON.stringify(subject.kind)}: must be "ServiceAccount", "User" or "Group"`,
      });
    }
  },
};

function nameProblems(object: Json, kind: string, allowGenerateName: boolean, out: Problem[]): void {
  const meta = isRecord(object.metadata) ? object.metadata : {};
  const name = meta.name;
  if (name === undefined || name === null || name === '') {
    if (!(allowGenerateName && typeof meta.generateName === 'string' && meta.generateName !== '')) {
      out.push({ field: 'metadata.name', message: 'Required value: name or generateName is required' });
    }
    return;
  }
  if (typeof name !== 'string') return; // the walk reported its type
  if (kind.startsWith('rbac.authorization.k8s.io/')) {
    // RBAC objects may be named like `system:forewarn`: any valid path segment.
    if (name === '.' || name === '..' || /[/%]/.test(name))
      out.push({ field: 'metadata.name', message: `invalid value ${JSON.stringify(name)}` });
    return;
  }
  const pattern = kind === 'v1/Namespace' ? DNS_LABEL : DNS_SUBDOMAIN;
  const limit = kind === 'v1/Namespace' ? 63 : 253;
  if (name.length > limit || !pattern.test(name)) {
    out.push({
      field: 'metadata.name',
      message: `invalid value ${JSON.stringify(name)}: must be a lowercase RFC 1123 ${kind === 'v1/Namespace' ? 'label' : 'subdomain'}`,
    });
  }
}

function percentOrCount(value: unknown, field: string, out: Problem[]): void {
  if (typeof value === 'number' && value < 0) out.push({ field, message: `invalid value ${value}: must be greater than or equal to 0` });
  if (typeof value === 'string') {
    const m = /^(\d+)%$/.exec(value);
    if (!m)
      out.push({
        field,
        message: `invalid value ${JSON.stringify(value)}: a valid percent string must be a numeric string followed by an ending '%'`,
      });
    else if (Number(m[1]) > 100) out.push({ field, message: `invalid value ${JSON.stringify(value)}: must not be greater than 100%` });
  }
}

/** Whole-object rules per apiVersion/kind. */
const KIND_RULES: Record<string, (object: Json, out: Problem[]) => void> = {
  'apps/v1/DaemonSet'(object, out) {
    if (!isRecord(object.spec)) {
      out.push({ field: 'spec', message: 'Required value' });
      return;
    }
    const spec = object.spec;
    if (!required(spec, 'selector', 'spec', out)) return;
    const selector = spec.selector;
    if (!isRecord(selector)) return;
    const matchLabels = isRecord(selector.matchLabels) ? selector.matchLabels : {};
    const expressions = Array.isArray(selector.matchExpressions) ? selector.matchExpressions : [];
    if (Object.keys(matchLabels).length === 0 && expressions.length === 0) {
      out.push({ field: 'spec.selector', message: 'invalid value: empty selector is invalid for daemonset' });
      return;
    }
    if (!isRecord(spec.template)) {
      out.push({ field: 'spec.template', message: 'Required value' });
      return;
    }
    const labels = at(spec.template, 'metadata.labels');
    const templateLabels: Record<string, unknown> = isRecord(labels) ? labels : {};
    const byLabel = Object.entries(matchLabels).every(([k, v]) => templateLabels[k] === v);
    const byExpression = expressions.every((e: unknown) => {
      if (!isRecord(e) || typeof e.key !== 'string') return false;
      const has = Object.hasOwn(templateLabels, e.key);
      const values = Array.isArray(e.values) ? e.values : [];
      if (e.operator === 'In') return has && values.includes(templateLabels[e.key]);
      if (e.operator === 'NotIn') return !has || !values.includes(templateLabels[e.key]);
      if (e.operator === 'Exists') return has;
      if (e.operator === 'DoesNotExist') return !has;
      return false;
    });
    if (!byLabel || !byExpression) {
      out.push({
        field: 'spec.template.metadata.labels',
        message: `invalid value ${JSON.stringify(templateLabels)}: \`selector\` does not match template \`labels\``,
      });
    }
    const restart = at(spec.template, 'spec.restartPolicy');
    if (restart !== undefined && restart !== 'Always') {
      out.push({ field: 'spec.template.spec.restartPolicy', message: `unsupported value ${JSON.stringify(restart)}: must be "Always"` });
    }
  },
  'rbac.authorization.k8s.io/v1/RoleBinding'(object, out) {
    bindingProblems(object, true, out);
  },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding'(object, out) {
    bindingProblems(object, false, out);
  },
  'rbac.authorization.k8s.io/v1/Role'(object, out) {
    const rules = Array.isArray(object.rules) ? object.rules : [];
    rules.forEach((rule: unknown, i) => {
      if (isRecord(rule) && Array.isArray(rule.nonResourceURLs) && rule.nonResourceURLs.length > 0) {
        out.push({ field: `rules[${i}].nonResourceURLs`, message: 'namespaced rules cannot apply to non-resource URLs' });
      }
    });
  },
  'policy/v1/PodDisruptionBudget'(object, out) {
    const spec = isRecord(object.spec) ? object.spec : {};
    if (spec.minAvailable !== undefined && spec.maxUnavailable !== undefined) {
      out.push({ field: 'spec', message: 'invalid value: minAvailable and maxUnavailable cannot be both set' });
    }
    percentOrCount(spec.minAvailable, 'spec.minAvailable', out);
    percentOrCount(spec.maxUnavailable, 'spec.maxUnavailable', out);
  },
  'v1/ConfigMap'(object, out) {
    for (const field of ['data', 'binaryData']) {
      const map = object[field];
      if (!isRecord(map)) continue;
      for (const key of Object.keys(map)) {
        if (!CONFIG_KEY.test(key))
          out.push({
            field: `${field}.${key}`,
            message: `invalid key ${JSON.stringify(key)}: must consist of alphanumeric characters, '-', '_' or '.'`,
          });
      }
    }
  },
  'v1/Event'(object, out) {
    // A cluster-scoped object's events live in "default"; a namespaced object's in its own namespace.
    const namespace = at(object, 'metadata.namespace');
    const involved = at(object, 'involvedObject.namespace') ?? '';
    if (involved === '' ? namespace !== 'default' && namespace !== undefined : involved !== namespace) {
      out.push({ field: 'involvedObject.namespace', message: `invalid value ${JSON.stringify(involved)}: does not match event.namespace` });
    }
  },
  'events.k8s.io/v1/Event'(object, out) {
    for (const key of ['eventTime', 'reportingController', 'reportingInstance', 'action', 'reason']) required(object, key, '', out);
    if (object.type !== 'Normal' && object.type !== 'Warning') {
      out.push({ field: 'type', message: `unsupported value ${JSON.stringify(object.type)}: must be "Normal" or "Warning"` });
    }
  },
};

function bindingProblems(object: Json, namespaced: boolean, out: Problem[]): void {
  if (!isRecord(object.roleRef)) out.push({ field: 'roleRef', message: 'Required value' });
  else if (!namespaced && object.roleRef.kind === 'Role') {
    out.push({ field: 'roleRef.kind', message: 'unsupported value "Role": a ClusterRoleBinding can only reference a ClusterRole' });
  }
  if (!Array.isArray(object.subjects) || object.subjects.length === 0) {
    out.push({ field: 'subjects', message: 'Required value: a binding without subjects grants nothing' });
    return;
  }
  object.subjects.forEach((s: unknown, i) => {
    if (!namespaced && isRecord(s) && s.kind === 'ServiceAccount' && (s.namespace === undefined || s.namespace === '')) {
      out.push({ field: `subjects[${i}].namespace`, message: 'Required value' });
    }
  });
}

export interface CheckOptions {
  /** Creates through the API may leave the name to `metadata.generateName`. */
  allowGenerateName?: boolean;
}

/** Every problem with one object, by path; empty when a real server (with strict field validation) would take it. */
export function objectProblems(object: unknown, options: CheckOptions = {}): Problem[] {
  if (!isRecord(object)) return [{ field: '', message: `expected a mapping, got ${describe(object)}` }];
  const out: Problem[] = [];
  if (typeof object.apiVersion !== 'string' || object.apiVersion === '') out.push({ field: 'apiVersion', message: 'Required value' });
  if (typeof object.kind !== 'string' || object.kind === '') out.push({ field: 'kind', message: 'Required value' });
  if (out.length > 0) return out;
  const kind = `${String(object.apiVersion)}/${String(object.kind)}`;
  const className = MODELS[kind];
  if (className === undefined) return [{ field: 'kind', message: `${kind} is not a kind this server serves` }];
  walk(object, className, '', '', out);
  if (object.kind !== 'Eviction') nameProblems(object, kind, options.allowGenerateName ?? false, out);
  KIND_RULES[kind]?.(object, out);
  return out;
}

/** The object as messages name it: `DaemonSet forewarn-agent`, or `document N` when it has no name. */
export function objectLabel(object: unknown, index: number): string {
  const name = at(object, 'metadata.name');
  const kind = isRecord(object) && typeof object.kind === 'string' && object.kind !== '' ? object.kind : null;
  if (kind === null) return `document ${index + 1}`;
  return typeof name === 'string' && name !== '' ? `${kind} ${name}` : `${kind} (document ${index + 1}, unnamed)`;
}

/** One manifest's problems as `Kind name: path: problem` lines; `index` is its place in the list. */
export function manifestProblems(object: unknown, index: number): string[] {
  return objectProblems(object).map((p) => `${objectLabel(object, index)}: ${p.field === '' ? '' : `${p.field}: `}${p.message}`);
}

/** Problems as `Kind name: path: problem` lines, for a whole list of manifests. */
export function checkManifests(objects: unknown[]): string[] {
  return objects.flatMap((object, i) => manifestProblems(object, i));
}
