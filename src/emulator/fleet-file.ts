// `--fleet FILE`: a fleet described in YAML or JSON, checked up front with positions in every error.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { LineCounter, isMap, isNode, isPair, isScalar, isSeq, parseDocument, type Document, type Node } from 'yaml';
import { z } from 'zod';
import { EngineError } from './engine/errors.js';
import { Fleet, TENANT_KINDS, type VmSpec } from './engine/fleet.js';
import { VmSpecSchema } from './vm-spec.js';

export class FleetFileError extends Error {
  override name = 'FleetFileError';
  constructor(
    message: string,
    readonly file: string,
    readonly line: number,
    readonly col: number,
  ) {
    super(message);
  }
}

// A VM's own entry is exactly what POST /v1/vms takes.
const VmEntry = VmSpecSchema;

const TenantEntry = z.strictObject({
  name: z.string(),
  kind: z.enum(TENANT_KINDS),
  faultDomainCount: z.int().optional(),
  terminateNotificationMinutes: z.int().optional(),
  osImageNotification: z.boolean().optional(),
  gpu: z.boolean().optional(),
});

const HostEntry = z.strictObject({
  name: z.string(),
  vms: z.array(z.string()),
});

const FleetDocument = z.strictObject({
  vms: z.array(VmEntry).min(1, { message: 'a fleet needs at least one VM' }),
  tenants: z.array(TenantEntry).optional(),
  hosts: z.array(HostEntry).optional(),
});
type FleetDocument = z.infer<typeof FleetDocument>;

type Path = readonly (string | number)[];

/** One problem at a place in the file. */
interface Problem {
  path: Path;
  message: string;
  /** Point at this key's name rather than its value (unknown keys). */
  key?: string | undefined;
}

/** Reads and checks a fleet file; every error names file:line:col, the field and the problem. */
export function loadFleetFile(path: string): VmSpec[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'is a directory' : e.message;
    throw new FleetFileError(`${path}: cannot read the fleet file: ${why}`, path, 0, 0);
  }
  return parseFleet(text, path);
}

/** Parses fleet text; `file` names it in errors, and its extension picks JSON or YAML. */
export function parseFleet(text: string, file: string): VmSpec[] {
  const lineCounter = new LineCounter();
  // JSON is read by the YAML parser too (YAML 1.2 is a superset), which gives positions for both.
  const json = extname(file).toLowerCase() === '.json';
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number) => lineCounter.linePos(offset);
  const fail = (offset: number, message: string): never => {
    const { line, col } = at(offset);
    throw new FleetFileError(`${file}:${line}:${col}: ${message}`, file, line, col);
  };
  if (json) {
    try {
      JSON.parse(text);
    } catch (err) {
      // V8 names the offset only sometimes; the YAML parser's error position is the fallback.
      const message = (err as Error).message;
      const position = /at position (\d+)/.exec(message);
      const offset = position ? Number(position[1]) : (doc.errors[0]?.pos[0] ?? 0);
      const why = message.replace(/ (in JSON )?at position \d+.*$/s, '').replace(/, (\.\.\.)?".*" is not valid JSON$/s, '');
      fail(offset, `JSON syntax error: ${why}`);
    }
  }
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    fail(e.pos[0], `${json ? 'JSON' : 'YAML'} syntax error: ${e.message}`);
  }
  const data: unknown = doc.toJS({ maxAliasCount: 100 });
  if (data === null || data === undefined) fail(0, 'the file is empty; expected a mapping with "vms"');

  const parsed = FleetDocument.safeParse(data);
  if (!parsed.success) {
    const problems: Problem[] = parsed.error.issues.map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        const key = issue.keys[0]!;
        return { path: [...issue.path, key] as Path, key, message: `unknown key "${key}"` } as Problem;
      }
      return { path: issue.path as Path, message: cleanMessage(issue.message) };
    });
    throw problemError(doc, file, lineCounter, problems);
  }
  return resolveFleet(parsed.data, (problem) => problemError(doc, file, lineCounter, [problem]));
}

function cleanMessage(message: string): string {
  if (/received undefined$/.test(message)) return 'missing (required)';
  return message.replace(/^Invalid (input|option): /, '');
}

/** Turns the earliest problem into an error at its place in the file. */
function problemError(doc: Document, file: string, lineCounter: LineCounter, problems: Problem[]): FleetFileError {
  const located = problems.map((p) => ({ ...p, offset: offsetOf(doc, p.path, p.key) }));
  located.sort((a, b) => a.offset - b.offset);
  const first = located[0]!;
  const { line, col } = lineCounter.linePos(first.offset);
  const where = formatPath(first.path);
  const more = located.length > 1 ? ` (and ${located.length - 1} more problem${located.length > 2 ? 's' : ''})` : '';
  return new FleetFileError(`${file}:${line}:${col}: ${where ? `${where}: ` : ''}${first.message}${more}`, file, line, col);
}

/** The offset of the deepest node on `path` that exists; for a key, its name. */
function offsetOf(doc: Document, path: Path, key?: string): number {
  let node: unknown = doc.contents;
  let offset = rangeStart(node) ?? 0;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i]!;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === segment);
      if (!pair) break;
      const last = i === path.length - 1;
      if (last && key !== undefined && segment === key) {
        offset = rangeStart(pair.key) ?? offset;
        break;
      }
      node = pair.value;
      offset = rangeStart(node) ?? rangeStart(pair.key) ?? offset;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment];
      if (item === undefined) break;
      node = item;
      offset = rangeStart(node) ?? offset;
    } else {
      break;
    }
  }
  return offset;
}

function rangeStart(node: unknown): number | undefined {
  return isNode(node) ? (node as Node).range?.[0] : undefined;
}

/** `vms[1].faultDomain`. */
export function formatPath(path: Path): string {
  let out = '';
  for (const segment of path) out += typeof segment === 'number' ? `[${segment}]` : out ? `.${segment}` : segment;
  return out;
}

/** Which field an engine rule complains about, by the start of its message. */
const RULE_FIELDS: readonly [RegExp, keyof VmSpec][] = [
  [/^VM name/, 'name'],
  [/^a VM named/, 'name'],
  [/^tenant name/, 'tenant'],
  [/^tenant '.*' is a standalone/, 'tenant'],
  [/^tenant '.*' is an? /, 'tenantKind'],
  [/^tenant '.*' has \d+ fault domains/, 'faultDomainCount'],
  [/^faultDomainCount/, 'faultDomainCount'],
  [/^faultDomain /, 'faultDomain'],
  [/^updateDomain/, 'updateDomain'],
  [/^address/, 'address'],
  [/^terminateNotificationMinutes/, 'terminateNotificationMinutes'],
  [/^osImageNotification/, 'osImageNotification'],
  [/^host name/, 'host'],
];

/** Tenant defaults and host placement, then the engine's own rules, VM by VM. */
function resolveFleet(fleetDoc: FleetDocument, error: (p: Problem) => FleetFileError): VmSpec[] {
  const tenantIndex = new Map<string, number>();
  fleetDoc.tenants?.forEach((t, i) => {
    if (tenantIndex.has(t.name)) {
      throw error({ path: ['tenants', i, 'name'], message: `tenant '${t.name}' is listed twice (first at tenants[${tenantIndex.get(t.name)}])` });
    }
    tenantIndex.set(t.name, i);
  });

  const vmIndex = new Map<string, number>();
  fleetDoc.vms.forEach((vm, i) => {
    const first = vmIndex.get(vm.name);
    if (first !== undefined) throw error({ path: ['vms', i, 'name'], message: `duplicate VM name '${vm.name}' (first at vms[${first}])` });
    vmIndex.set(vm.name, i);
  });

  // hosts: [{name, vms}] places VMs; each VM at most once, and never against its own `host`.
  const placement = new Map<string, { host: string; at: Path }>();
  const hostIndex = new Map<string, number>();
  fleetDoc.hosts?.forEach((h, i) => {
    if (hostIndex.has(h.name)) {
      throw error({ path: ['hosts', i, 'name'], message: `host '${h.name}' is listed twice (first at hosts[${hostIndex.get(h.name)}])` });
    }
    hostIndex.set(h.name, i);
    h.vms.forEach((name, j) => {
      const at: Path = ['hosts', i, 'vms', j];
      const v = vmIndex.get(name);
      if (v === undefined) throw error({ path: at, message: `no VM named '${name}' in vms` });
      const earlier = placement.get(name);
      if (earlier) throw error({ path: at, message: `VM '${name}' is already placed on host '${earlier.host}' (${formatPath(earlier.at)})` });
      const own = fleetDoc.vms[v]!.host;
      if (own !== undefined && own !== h.name) {
        throw error({ path: at, message: `VM '${name}' is placed on host '${h.name}' here but on '${own}' in vms[${v}].host` });
      }
      placement.set(name, { host: h.name, at });
    });
  });

  const fleet = new Fleet(() => randomUUID());
  return fleetDoc.vms.map((entry, i) => {
    const t = entry.tenant === undefined ? undefined : tenantIndex.get(entry.tenant);
    const tenant = t === undefined ? undefined : fleetDoc.tenants![t]!;
    const spec: VmSpec = dropUndefined({
      name: entry.name,
      tenant: entry.tenant,
      tenantKind: entry.tenantKind ?? tenant?.kind,
      faultDomain: entry.faultDomain,
      updateDomain: entry.updateDomain,
      host: entry.host ?? placement.get(entry.name)?.host,
      address: entry.address,
      priority: entry.priority,
      terminateNotificationMinutes: entry.terminateNotificationMinutes ?? tenant?.terminateNotificationMinutes,
      osImageNotification: entry.osImageNotification ?? tenant?.osImageNotification,
      gpu: entry.gpu ?? tenant?.gpu,
      faultDomainCount: entry.faultDomainCount ?? tenant?.faultDomainCount,
    });
    try {
      fleet.add(spec);
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
      const field = RULE_FIELDS.find(([re]) => re.test(err.message))?.[1];
      // Point at where the offending value was written: the VM, its tenant's defaults, or its host entry.
      let path: Path = ['vms', i];
      if (field !== undefined && field in entry) path = ['vms', i, field];
      else if (field === 'tenantKind' && t !== undefined) path = ['tenants', t, 'kind'];
      else if (field !== undefined && t !== undefined && field in tenant!) path = ['tenants', t, field];
      else if (field === 'host' && placement.has(entry.name)) path = placement.get(entry.name)!.at;
      else if (field === 'tenantKind' && 'tenant' in entry) path = ['vms', i, 'tenant'];
      throw error({ path, message: `VM '${entry.name}': ${err.message}` });
    }
    return spec;
  });
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
