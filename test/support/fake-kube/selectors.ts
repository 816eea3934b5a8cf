// Label and field selectors, in the query-string syntax list requests carry and as LabelSelector objects.

type Labels = Record<string, string>;

interface Requirement {
  key: string;
  op: 'in' | 'notin' | 'exists' | '!exists';
  values: string[];
}

export class SelectorError extends Error {}

function splitTopLevel(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')') depth--;
    else if (text[i] === ',' && depth === 0) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  out.push(text.slice(start));
  return out.map((s) => s.trim()).filter((s) => s !== '');
}

function parseRequirement(text: string): Requirement {
  let m = /^!\s*([\w./-]+)$/.exec(text);
  if (m) return { key: m[1]!, op: '!exists', values: [] };
  m = /^([\w./-]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(text);
  if (m) return { key: m[1]!, op: m[2] as 'in' | 'notin', values: m[3]!.split(',').map((v) => v.trim()) };
  m = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(text);
  if (m) return { key: m[1]!, op: m[2] === '!=' ? 'notin' : 'in', values: [m[3]!] };
  m = /^([\w./-]+)$/.exec(text);
  if (m) return { key: m[1]!, op: 'exists', values: [] };
  throw new SelectorError(`unable to parse requirement: ${JSON.stringify(text)}`);
}

function holds(r: Requirement, labels: Labels): boolean {
  const has = Object.hasOwn(labels, r.key);
  switch (r.op) {
    case 'exists':
      return has;
    case '!exists':
      return !has;
    case 'in':
      return has && r.values.includes(labels[r.key]!);
    case 'notin':
      return !has || !r.values.includes(labels[r.key]!);
  }
}

/** `k=v,k2!=v2,k3 in (a,b),!k4` → a predicate on labels; throws SelectorError on bad syntax. */
export function parseLabelSelector(text: string): (labels: Labels) => boolean {
  const requirements = splitTopLevel(text).map(parseRequirement);
  return (labels) => requirements.every((r) => holds(r, labels));
}

export interface LabelSelector {
  matchLabels?: Labels;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** A LabelSelector object; an empty one selects everything, a missing one nothing (policy/v1 semantics). */
export function selects(selector: LabelSelector | undefined | null, labels: Labels): boolean {
  if (selector === undefined || selector === null) return false;
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpression = (selector.matchExpressions ?? []).every((e) => {
    const op = { In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!exists' }[e.operator] as Requirement['op'] | undefined;
    return op !== undefined && holds({ key: e.key, op, values: e.values ?? [] }, labels);
  });
  return byLabel && byExpression;
}

/** The field labels each resource supports in fieldSelector, as a real server does (others are a 400). */
const FIELDS: Record<string, string[]> = {
  pods: [
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.nominatedNodeName',
  ],
  nodes: ['spec.unschedulable'],
  events: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
};

function fieldValue(object: unknown, path: string): string {
  let at = object;
  for (const part of path.split('.')) at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[part] : undefined;
  if (path === 'source' && typeof at === 'object' && at !== null) at = (at as Record<string, unknown>).component;
  if (at === undefined || at === null) return path === 'spec.unschedulable' || path === 'spec.hostNetwork' ? 'false' : '';
  return String(at);
}

/** `spec.nodeName=n1,status.phase!=Succeeded` for `resource` → a predicate on objects; throws SelectorError. */
export function parseFieldSelector(text: string, resource: string): (object: unknown) => boolean {
  const supported = ['metadata.name', 'metadata.namespace', ...(FIELDS[resource] ?? [])];
  const terms = splitTopLevel(text).map((term) => {
    const m = /^([\w.]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw new SelectorError(`invalid field selector: ${JSON.stringify(term)}`);
    if (!supported.includes(m[1]!)) throw new SelectorError(`field label not supported: ${m[1]}`);
    return { path: m[1]!, negate: m[2] === '!=', value: m[3]! };
  });
  return (object) => terms.every((t) => (fieldValue(object, t.path) === t.value) !== t.negate);
}
