// Manifest checks as strict as `kubectl apply --validate=strict` (fieldValidation=Strict) against a
// real API server, for FakeKube.apply and the kinds only manifests create: each object is decoded as
// the server decodes it (decode.ts: unknown fields, wrong types, bad times, by path), validated as the
// server validates it (validation.ts: names, labels, annotations, the agent's kinds), and checked by
// the rules below, which a real server also enforces but this fake words in its own way (README.md):
// containers' name and image, a DaemonSet's selector matching its template, bindings' roleRef and
// subjects, rules' verbs, PDB bounds, ConfigMap keys. Unlike the server, it lists every problem.
import * as k8s from '@kubernetes/client-node';
import { decode, type Model } from './decode.js';
import { errorBody, isNamespacedKind, kindValidation, labelErrors, type FieldError } from './validation.js';

export interface Problem {
  /** Dotted path from the object's root: `spec.template.spec.containers[0].image`. */
  field: string;
  message: string;
}

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

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
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

/** Rules run wherever the object holds a model of that name. */
const RULES: Record<string, (object: Json, path: string, out: Problem[]) => void> = {
  V1LabelSelector(selector, path, out) {
    for (const e of labelErrors(selector.matchLabels, join(path, 'matchLabels'))) out.push({ field: e.field, message: errorBody(e) });
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

/** Every problem with one manifest, by path; empty when a real server (fieldValidation=Strict) would take it. */
export function objectProblems(object: unknown): Problem[] {
  if (!isRecord(object)) return [{ field: '', message: `expected a mapping, got ${describe(object)}` }];
  const out: Problem[] = [];
  if (typeof object.apiVersion !== 'string' || object.apiVersion === '') out.push({ field: 'apiVersion', message: 'Required value' });
  if (typeof object.kind !== 'string' || object.kind === '') out.push({ field: 'kind', message: 'Required value' });
  if (out.length > 0) return out;
  const apiVersion = String(object.apiVersion);
  const kindName = String(object.kind);
  const kind = `${apiVersion}/${kindName}`;
  const className = MODELS[kind];
  if (className === undefined) return [{ field: 'kind', message: `${kind} is not a kind this server serves` }];
  const decoded = decode(object, className);
  out.push(...decoded.issues);
  const checked = decoded.object;
  // An Eviction is not stored: it has no rules of its own.
  if (kindName !== 'Eviction') {
    // kubectl fills in the namespace of its context.
    const meta = isRecord(checked.metadata) ? checked.metadata : {};
    if (isNamespacedKind(apiVersion, kindName) && (meta.namespace === undefined || meta.namespace === '')) {
      checked.metadata = { ...meta, namespace: 'default' };
    }
    for (const e of kindValidation(apiVersion, kindName).create(checked)) out.push({ field: e.field, message: errorBody(e) });
  }
  rulesAt(checked, className, '', out);
  KIND_RULES[kind]?.(checked, out);
  return out;
}

/** This file's own rules (not decoding, not validation.ts) as 422 causes, for writes through the API. */
export function manifestRuleErrors(object: Json): FieldError[] {
  const kind = `${String(object.apiVersion)}/${String(object.kind)}`;
  const className = MODELS[kind];
  if (className === undefined) return [];
  const out: Problem[] = [];
  rulesAt(object, className, '', out);
  KIND_RULES[kind]?.(object, out);
  return out.map((p) => ({ type: 'FieldValueInvalid', field: p.field, detail: '', body: p.message }));
}

/** Runs RULES wherever the object holds a model that has some. */
function rulesAt(value: unknown, type: string, path: string, out: Problem[]): void {
  if (value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(type);
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (array) {
    if (Array.isArray(value)) value.forEach((item, i) => rulesAt(item, array[1]!, `${path}[${i}]`, out));
    return;
  }
  if (map) {
    if (isRecord(value)) for (const [key, item] of Object.entries(value)) rulesAt(item, map[1]!, join(path, key), out);
    return;
  }
  const found = model(type);
  if (found === undefined || !isRecord(value)) return;
  for (const attribute of found.getAttributeTypeMap())
    rulesAt(value[attribute.baseName], attribute.type, join(path, attribute.baseName), out);
  RULES[type]?.(value, path, out);
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
