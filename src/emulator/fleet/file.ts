// `--fleet FILE`: a fleet described in YAML or JSON, checked up front with positions in every error.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { EngineError } from '../engine/errors.js';
import { Fleet, TENANT_KINDS, fleetRuleFields, type VmSpec } from '../engine/fleet.js';
import {
  AVAILABILITY_SET_DEFAULTS,
  FleetGeneratorError,
  MAX_AVAILABILITY_SET_FAULT_DOMAINS,
  MAX_GENERATED_VMS,
  generateAvailabilitySets,
  generateScaleSet,
  scaleSetTenants,
} from './generator.js';
import { InstanceSettingsSchema, VmSpecSchema } from './vm-spec.js';
import { mergePolicies } from '../engine/scheduled-events-policy.js';
import {
  CheckedDocument,
  DocumentError,
  formatPath,
  issueProblems,
  readDocumentFile,
  type Path,
  type Problem,
} from '../../shared/checked-document.js';

/** A problem in a fleet file: file, line, col, field path and problem, as `FILE:line:col: path: problem`. */
export class FleetFileError extends DocumentError {
  override name = 'FleetFileError';
}

// A VM's own entry is exactly what POST /v1/vms takes.
const VmEntry = VmSpecSchema;
const vmField = VmSpecSchema.shape;

/** Instance metadata a tenant or scale set gives all its VMs; the computer name and per-NIC settings are each VM's own. */
const { privateIp: _ip, publicIp: _pip, macAddress: _mac, computerName: _cn, ...tenantInstanceFields } = InstanceSettingsSchema;
const TENANT_INSTANCE_KEYS = Object.keys(tenantInstanceFields) as (keyof typeof tenantInstanceFields)[];

const TenantEntry = z.strictObject({
  name: z.string(),
  kind: z.enum(TENANT_KINDS),
  ...tenantInstanceFields,
  faultDomainCount: z.int().optional(),
  updateDomainCount: z.int().optional(),
  terminateNotificationMinutes: z.int().optional(),
  osImageNotification: z.boolean().optional(),
  gpu: z.boolean().optional(),
  scaleSet: z.string().optional(),
});

/** A sanity bound: each placement group is a tenant of its own. */
const MAX_PLACEMENT_GROUPS = 1000;

const ScaleSetEntry = z.strictObject({
  name: z.string(),
  placementGroups: z.int().min(1).max(MAX_PLACEMENT_GROUPS).optional(),
  faultDomainCount: vmField.faultDomainCount,
  updateDomainCount: vmField.updateDomainCount,
  terminateNotificationMinutes: vmField.terminateNotificationMinutes,
  osImageNotification: vmField.osImageNotification,
  gpu: vmField.gpu,
  priority: vmField.priority,
  evictionPolicy: vmField.evictionPolicy,
  instances: z.int().min(0).max(MAX_GENERATED_VMS).optional(),
  hosts: z.union([z.int().min(1), z.array(z.string()).min(1)], { error: 'expected a host count or a list of host names' }).optional(),
  hostPrefix: z.string().optional(),
  ...tenantInstanceFields,
});

const GenerateEntry = z.strictObject({
  availabilitySets: z.int().min(1),
  vmsPerSet: z.int().min(1),
  hosts: z.int().min(1),
  faultDomainCount: z.int().min(1).max(MAX_AVAILABILITY_SET_FAULT_DOMAINS).optional(),
  updateDomainCount: z.int().min(1).max(20).optional(),
  prefix: z.string().optional(),
  hostPrefix: z.string().optional(),
});

const HostEntry = z.strictObject({
  name: z.string(),
  vms: z.array(z.string()),
});

const FleetDocument = z.strictObject({
  vms: z.array(VmEntry).optional(),
  tenants: z.array(TenantEntry).optional(),
  scaleSets: z.array(ScaleSetEntry).optional(),
  generate: z.array(GenerateEntry).optional(),
  hosts: z.array(HostEntry).optional(),
});
type FleetDocument = z.infer<typeof FleetDocument>;

/**
 * [choice] The most VMs one control API request may build (a scenario's fleet), unless the emulator
 * is started with `--max-request-vms N`. Building is synchronous; at this size a build costs a few
 * tens of ms, so IMDS answers are never held up for long. Fleet files given on the command line are
 * the operator's own and are read before the emulator listens: they are not limited by this.
 */
export const MAX_FLEET_VMS = 2000;
/** What `--max-request-vms` may be set to: up to what one generate entry may make. */
export const MAX_REQUEST_VMS_RANGE = { min: 1, max: MAX_GENERATED_VMS } as const;

/** What a fleet section would build, counted on the raw data before any schema check or generation. */
export function countFleetVms(data: unknown): { vms: number; hostNames: number; tenants: number } {
  const list = (key: string): unknown[] => {
    const v = isObject(data) && Object.hasOwn(data, key) ? data[key] : undefined;
    return Array.isArray(v) ? v : [];
  };
  const num = (entry: unknown, key: string): number => {
    const v = isObject(entry) && Object.hasOwn(entry, key) ? entry[key] : undefined;
    return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0;
  };
  let vms = list('vms').length;
  let hostNames = 0;
  // Declared tenants cost work even without VMs: a scale set makes one per placement group.
  let tenants = list('tenants').length;
  for (const s of list('scaleSets')) {
    vms += num(s, 'instances');
    hostNames = Math.max(hostNames, num(s, 'hosts'));
    tenants += Math.max(1, num(s, 'placementGroups'));
  }
  for (const g of list('generate')) {
    vms += num(g, 'availabilitySets') * num(g, 'vmsPerSet');
    hostNames = Math.max(hostNames, num(g, 'hosts'));
    tenants += num(g, 'availabilitySets');
  }
  return { vms, hostNames, tenants };
}

/** Why a fleet sent in one request is too big to build, or null; `option` names the setting that raises the limit. */
export function requestFleetTooBig(data: unknown, limit: number, option = '--max-request-vms'): string | null {
  const { vms, hostNames, tenants } = countFleetVms(data);
  if (vms > limit) return `the fleet has ${vms} VMs; one request builds at most ${limit} (${option}), or give a large fleet to --fleet`;
  if (hostNames > limit) return `a host count of ${hostNames} makes too many hosts; one request builds at most ${limit} (${option})`;
  if (tenants > limit) return `the fleet declares ${tenants} tenants; one request builds at most ${limit} (${option})`;
  return null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads and checks a fleet file; every error names file:line:col, the field and the problem. */
export function loadFleetFile(path: string): VmSpec[] {
  return parseFleet(readDocumentFile(path, 'fleet file', FleetFileError), path);
}

/** Parses fleet text; `file` names it in errors, and its extension picks JSON or YAML. */
export function parseFleet(text: string, file: string): VmSpec[] {
  const source = new CheckedDocument(text, file, { error: FleetFileError, empty: 'the file is empty; expected a mapping with "vms"' });
  const parsed = FleetDocument.safeParse(source.data);
  if (!parsed.success) throw source.all(issueProblems(parsed.error.issues));
  // Sections are read in the order written, so a duplicate is reported where it occurs second.
  const order = Object.keys(source.data as object) as (keyof FleetDocument)[];
  const error = (problem: Problem) => source.error(problem);
  checkTotal(parsed.data, order, error);
  return resolveFleet(parsed.data, order, error);
}

/**
 * [choice] The most VMs one fleet file makes in all: the largest fleet the emulator aims to hold.
 * Each entry is already capped; this stops many entries adding up past it, before anything is generated.
 */
export const MAX_FILE_FLEET_VMS = MAX_GENERATED_VMS;

function checkTotal(fleetDoc: FleetDocument, order: readonly (keyof FleetDocument)[], error: (p: Problem) => FleetFileError): void {
  let total = 0;
  const add = (n: number, path: Path) => {
    // An entry too big on its own is reported by the generator, in its own words.
    if (n > MAX_GENERATED_VMS) return;
    total += n;
    if (total > MAX_FILE_FLEET_VMS) {
      throw error({
        path,
        message: `brings the fleet to ${total} VMs with the entries before it; a fleet file makes at most ${MAX_FILE_FLEET_VMS}`,
      });
    }
  };
  for (const section of order) {
    if (section === 'vms') add(fleetDoc.vms!.length, ['vms']);
    else if (section === 'scaleSets') fleetDoc.scaleSets!.forEach((s, i) => add(s.instances ?? 0, ['scaleSets', i, 'instances']));
    else if (section === 'generate')
      fleetDoc.generate!.forEach((g, i) => add(g.availabilitySets * g.vmsPerSet, ['generate', i, 'vmsPerSet']));
  }
}

type Section = 'vms' | 'scaleSets' | 'generate';

/** Where a VM comes from: its own entry, or the scale set or generate entry that made it. */
interface Source {
  section: Section;
  index: number;
}

/** A tenant's defaults for its VMs, and where each was written. */
interface TenantDecl {
  at: Path;
  defaults: Partial<VmSpec>;
  written: Partial<Record<keyof VmSpec, Path>>;
  /** The scale set this tenant is (a placement group of). */
  scaleSet: string | undefined;
}

interface VmRecord {
  spec: VmSpec;
  source: Source;
}

/** Expands scaleSets and generate, applies tenant defaults and host placement, then the engine's own rules, VM by VM. */
function resolveFleet(fleetDoc: FleetDocument, order: readonly (keyof FleetDocument)[], error: (p: Problem) => FleetFileError): VmSpec[] {
  const tenants = new Map<string, TenantDecl>();
  const declare = (name: string, decl: TenantDecl, where: Path) => {
    const first = tenants.get(name);
    if (first) throw error({ path: where, message: `tenant '${name}' is declared twice (first at ${formatPath(first.at)})` });
    tenants.set(name, decl);
  };
  const scaleSets = new Map<string, { at: Path; tenants: string[] }>();
  const generated = new Map<string, VmSpec[]>();
  const generatorError = (at: Path, err: unknown, rename: Record<string, string> = {}): never => {
    if (!(err instanceof FleetGeneratorError)) throw err;
    const [head, ...rest] = err.path;
    throw error({ path: [...at, rename[head as string] ?? head!, ...rest], message: err.problem });
  };

  // 1. Tenants, from every section that declares them.
  for (const section of order) {
    if (section === 'tenants') {
      fleetDoc.tenants!.forEach((t, i) => {
        const at: Path = ['tenants', i];
        const { name, kind, ...rest } = t;
        declare(
          name,
          {
            at,
            defaults: { tenantKind: kind, ...rest },
            written: writtenFields(t, at, { name: 'tenant', kind: 'tenantKind' }),
            scaleSet: kind === 'scaleSet' ? (t.scaleSet ?? name) : undefined,
          },
          [...at, 'name'],
        );
      });
    } else if (section === 'scaleSets') {
      fleetDoc.scaleSets!.forEach((s, i) => {
        const at: Path = ['scaleSets', i];
        const first = scaleSets.get(s.name);
        if (first)
          throw error({ path: [...at, 'name'], message: `scale set '${s.name}' is listed twice (first at ${formatPath(first.at)})` });
        if (s.instances === undefined && (s.hosts !== undefined || s.hostPrefix !== undefined)) {
          const key = s.hosts !== undefined ? 'hosts' : 'hostPrefix';
          throw error({ path: [...at, key], message: 'places generated instances; set instances too' });
        }
        let specs: VmSpec[];
        try {
          specs = generateScaleSet({ ...s, instances: s.instances ?? 0 });
        } catch (err) {
          return generatorError(at, err);
        }
        const shared = tenantInstance(s);
        generated.set(`scaleSets.${i}`, Object.keys(shared).length === 0 ? specs : specs.map((spec) => ({ ...spec, ...shared })));
        const placementGroups = s.placementGroups ?? 1;
        const names = scaleSetTenants(s.name, placementGroups);
        scaleSets.set(s.name, { at, tenants: names });
        const { name, placementGroups: _pg, instances: _n, hosts: _h, hostPrefix: _hp, ...settings } = s;
        const written = writtenFields(settings, at);
        written.tenant = written.scaleSet = written.tenantKind = [...at, 'name'];
        for (const tenant of names) {
          const defaults: Partial<VmSpec> = { tenantKind: 'scaleSet', ...settings };
          if (tenant !== name) defaults.scaleSet = name;
          declare(tenant, { at, defaults, written, scaleSet: name }, [...at, 'name']);
        }
      });
    } else if (section === 'generate') {
      fleetDoc.generate!.forEach((g, i) => {
        const at: Path = ['generate', i];
        let specs: VmSpec[];
        try {
          specs = generateAvailabilitySets({ ...g, sets: g.availabilitySets });
        } catch (err) {
          return generatorError(at, err, { sets: 'availabilitySets' });
        }
        generated.set(`generate.${i}`, specs);
        const faultDomainCount = g.faultDomainCount ?? AVAILABILITY_SET_DEFAULTS.faultDomainCount;
        const updateDomainCount = g.updateDomainCount ?? AVAILABILITY_SET_DEFAULTS.updateDomainCount;
        const written = writtenFields({ faultDomainCount: g.faultDomainCount, updateDomainCount: g.updateDomainCount }, at);
        written.tenant = written.tenantKind = 'prefix' in g ? [...at, 'prefix'] : at;
        const decl: TenantDecl = {
          at,
          defaults: { tenantKind: 'availabilitySet', faultDomainCount, updateDomainCount },
          written,
          scaleSet: undefined,
        };
        const prefix = g.prefix ?? 'as';
        for (let s = 0; s < g.availabilitySets; s++) declare(`${prefix}${s}`, decl, written.tenant);
      });
    }
  }

  // 2. VMs, generated or listed, each name once.
  const records: VmRecord[] = [];
  const byName = new Map<string, VmRecord>();
  const label = (source: Source) => formatPath([source.section, source.index]);
  const add = (record: VmRecord, where: () => Path) => {
    const first = byName.get(record.spec.name);
    if (first) throw error({ path: where(), message: `duplicate VM name '${record.spec.name}' (first at ${label(first.source)})` });
    byName.set(record.spec.name, record);
    records.push(record);
  };
  for (const section of order) {
    if (section === 'scaleSets' || section === 'generate') {
      fleetDoc[section]!.forEach((_, index) => {
        const source: Source = { section, index };
        for (const spec of generated.get(`${section}.${index}`)!) add({ spec, source }, () => generatedPath(fleetDoc, source, ['name']));
      });
    } else if (section === 'vms') {
      fleetDoc.vms!.forEach((entry, index) => {
        const spec = listedVm(entry, index, tenants, scaleSets, error);
        add({ spec, source: { section, index } }, () => ['vms', index, 'name']);
      });
    }
  }
  // A declared tenant that no VM joins is almost always a misspelt tenant on a VM.
  const joined = new Set(records.map((r) => r.spec.tenant ?? r.spec.name));
  fleetDoc.tenants?.forEach((t, i) => {
    if (!joined.has(t.name)) {
      throw error({ path: ['tenants', i, 'name'], message: `tenant '${t.name}' is declared but no VM is in it` });
    }
  });
  if (records.length === 0) {
    throw error({
      path: fleetDoc.vms ? ['vms'] : [],
      message: 'a fleet needs at least one VM: list some under vms, or give scaleSets instances, or generate them',
    });
  }

  // 3. hosts: [{name, vms}] places VMs; each VM at most once, and never against a host it already has.
  const placement = new Map<string, { host: string; at: Path }>();
  const hostIndex = new Map<string, number>();
  fleetDoc.hosts?.forEach((h, i) => {
    if (hostIndex.has(h.name)) {
      throw error({ path: ['hosts', i, 'name'], message: `host '${h.name}' is listed twice (first at hosts[${hostIndex.get(h.name)}])` });
    }
    hostIndex.set(h.name, i);
    h.vms.forEach((name, j) => {
      const at: Path = ['hosts', i, 'vms', j];
      const record = byName.get(name);
      if (record === undefined) throw error({ path: at, message: `no VM named '${name}' in the fleet` });
      const earlier = placement.get(name);
      if (earlier)
        throw error({ path: at, message: `VM '${name}' is already placed on host '${earlier.host}' (${formatPath(earlier.at)})` });
      const own = record.spec.host;
      if (own !== undefined && own !== h.name) {
        const from = record.source.section === 'vms' ? `in vms[${record.source.index}].host` : `by ${label(record.source)}.hosts`;
        throw error({ path: at, message: `VM '${name}' is placed on host '${h.name}' here but on '${own}' ${from}` });
      }
      record.spec.host = h.name;
      placement.set(name, { host: h.name, at });
    });
  });

  // 4. The engine's rules, blamed on where the offending value was written.
  const fleet = new Fleet(() => randomUUID());
  for (const record of records) {
    try {
      fleet.add(record.spec);
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
      const fields = fleetRuleFields(err);
      const path = blame(fleetDoc, record, fields, tenants, placement);
      throw error({ path, message: `VM '${record.spec.name}': ${err.message}` });
    }
  }
  return records.map((r) => r.spec);
}

/** A listed VM with its tenant's defaults; a VM's own fields win. */
function listedVm(
  entry: NonNullable<FleetDocument['vms']>[number],
  i: number,
  tenants: ReadonlyMap<string, TenantDecl>,
  scaleSets: ReadonlyMap<string, { tenants: string[] }>,
  error: (p: Problem) => FleetFileError,
): VmSpec {
  const groups = (name: string) => {
    const names = scaleSets.get(name)!.tenants;
    return `scale set '${name}' has ${names.length} placement groups: set tenant to one of ${names[0]} … ${names[names.length - 1]}`;
  };
  let tenantName = entry.tenant;
  // `scaleSet: S` alone joins S when S is a single tenant.
  if (tenantName === undefined && entry.scaleSet !== undefined && scaleSets.has(entry.scaleSet)) {
    const names = scaleSets.get(entry.scaleSet)!.tenants;
    if (names.length > 1) throw error({ path: ['vms', i, 'scaleSet'], message: groups(entry.scaleSet) });
    tenantName = names[0];
  }
  if (tenantName !== undefined && !tenants.has(tenantName) && (scaleSets.get(tenantName)?.tenants.length ?? 0) > 1) {
    throw error({ path: ['vms', i, 'tenant'], message: groups(tenantName) });
  }
  const decl = tenantName === undefined ? undefined : tenants.get(tenantName);
  if (entry.scaleSet !== undefined && decl?.scaleSet !== undefined && entry.scaleSet !== decl.scaleSet) {
    throw error({
      path: ['vms', i, 'scaleSet'],
      message: `tenant '${tenantName}' belongs to scale set '${decl.scaleSet}', not '${entry.scaleSet}'`,
    });
  }
  const d = decl?.defaults ?? {};
  return dropUndefined({
    name: entry.name,
    tenant: tenantName,
    tenantKind: entry.tenantKind ?? d.tenantKind,
    faultDomain: entry.faultDomain,
    updateDomain: entry.updateDomain,
    host: entry.host,
    address: entry.address,
    priority: entry.priority ?? d.priority,
    evictionPolicy: entry.evictionPolicy ?? d.evictionPolicy,
    powerState: entry.powerState,
    terminateNotificationMinutes: entry.terminateNotificationMinutes ?? d.terminateNotificationMinutes,
    osImageNotification: entry.osImageNotification ?? d.osImageNotification,
    gpu: entry.gpu ?? d.gpu,
    faultDomainCount: entry.faultDomainCount ?? d.faultDomainCount,
    updateDomainCount: entry.updateDomainCount ?? d.updateDomainCount,
    scaleSet: entry.scaleSet ?? d.scaleSet,
    vmId: entry.vmId,
    ...tenantInstance(d),
    ...tenantInstance(entry),
    // [choice] Tags add up: the tenant's, then the VM's own, which win on a shared name.
    tags: d.tags === undefined && entry.tags === undefined ? undefined : { ...d.tags, ...entry.tags },
    scheduledEventsPolicy: mergePolicies(d.scheduledEventsPolicy, entry.scheduledEventsPolicy),
    computerName: entry.computerName,
    privateIp: entry.privateIp,
    publicIp: entry.publicIp,
    macAddress: entry.macAddress,
  });
}

/** The tenant-wide instance settings written in an entry. */
function tenantInstance(entry: Partial<VmSpec>): Partial<VmSpec> {
  const out: Partial<VmSpec> = {};
  for (const key of TENANT_INSTANCE_KEYS) if (entry[key] !== undefined) (out as Record<string, unknown>)[key] = entry[key];
  return out;
}

/** Where the value behind an engine complaint was written: the VM, its tenant's defaults, its host entry, or the entry that generated it. */
function blame(
  fleetDoc: FleetDocument,
  record: VmRecord,
  fields: readonly (keyof VmSpec)[],
  tenants: ReadonlyMap<string, TenantDecl>,
  placement: ReadonlyMap<string, { at: Path }>,
): Path {
  const { section, index } = record.source;
  const placed = placement.get(record.spec.name);
  if (section !== 'vms') {
    if (fields.includes('host') && placed) return placed.at;
    return generatedPath(fleetDoc, record.source, fields);
  }
  const entry = fleetDoc.vms![index]!;
  for (const f of fields) if (f in entry) return ['vms', index, f];
  const decl = record.spec.tenant === undefined ? undefined : tenants.get(record.spec.tenant);
  for (const f of fields) {
    const written = decl?.written[f];
    if (written) return written;
  }
  if (fields.includes('host') && placed) return placed.at;
  if (fields.includes('tenantKind') && 'tenant' in entry) return ['vms', index, 'tenant'];
  return ['vms', index];
}

/** Which key of a scaleSets or generate entry sets each VM field. */
function generatedKeys(section: 'scaleSets' | 'generate'): Partial<Record<keyof VmSpec, readonly string[]>> {
  return section === 'scaleSets'
    ? {
        name: ['name'],
        tenant: ['name'],
        scaleSet: ['name'],
        tenantKind: ['name'],
        host: ['hosts', 'hostPrefix'],
        faultDomain: ['faultDomainCount'],
      }
    : {
        name: ['prefix', 'availabilitySets'],
        tenant: ['prefix'],
        tenantKind: ['prefix'],
        host: ['hostPrefix', 'hosts'],
        faultDomain: ['faultDomainCount'],
      };
}

function generatedPath(fleetDoc: FleetDocument, source: Source, fields: readonly (keyof VmSpec)[]): Path {
  const section = source.section as 'scaleSets' | 'generate';
  const entry = fleetDoc[section]![source.index]!;
  const at: Path = [section, source.index];
  const keys = generatedKeys(section);
  for (const f of fields) for (const key of keys[f] ?? [f]) if (key in entry) return [...at, key];
  return at;
}

/** The path of each key written in an entry, under the VmSpec field it sets. */
function writtenFields(entry: object, at: Path, rename: Record<string, keyof VmSpec> = {}): Partial<Record<keyof VmSpec, Path>> {
  const written: Partial<Record<keyof VmSpec, Path>> = {};
  for (const [key, value] of Object.entries(entry)) if (value !== undefined) written[rename[key] ?? (key as keyof VmSpec)] = [...at, key];
  return written;
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
