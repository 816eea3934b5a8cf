// Large fleets from a few numbers: availability sets spread over shared hosts, and scale-set instances.
import { flexibleNameSuffixes } from '../engine/computer-name.js';
import type { EvictionPolicy, OrchestrationMode, Priority, VmSpec } from '../engine/fleet.js';

/** [choice] The engine's defaults for an availability set; kept equal to it by a test. */
export const AVAILABILITY_SET_DEFAULTS = { faultDomainCount: 2, updateDomainCount: 5 } as const;
/** [choice] The engine's defaults for a scale set; kept equal to it by a test. */
export const SCALE_SET_DEFAULTS = { faultDomainCount: 5, updateDomainCount: 5 } as const;
/** Azure lets an availability set have at most 3 fault domains. */
export const MAX_AVAILABILITY_SET_FAULT_DOMAINS = 3;
/** A guard against typos like `vmsPerSet: 10000000`: one entry makes at most this many VMs. */
export const MAX_GENERATED_VMS = 1_000_000;

/** A bad option; `path` names it (e.g. `['hosts', 2]`) and `problem` says what is wrong, so callers can point at it. */
export class FleetGeneratorError extends Error {
  override name = 'FleetGeneratorError';
  readonly path: readonly (string | number)[];
  constructor(
    path: string | readonly (string | number)[],
    readonly problem: string,
  ) {
    const p = typeof path === 'string' ? [path] : path;
    super(`${p.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('')}: ${problem}`);
    this.path = p;
  }
}

export interface AvailabilitySetsOptions {
  /** How many availability sets: `<prefix>0` … `<prefix>{sets-1}`. */
  sets: number;
  vmsPerSet: number;
  /** How many hosts: `<hostPrefix>0` … `<hostPrefix>{hosts-1}`, shared by every set. */
  hosts: number;
  /** 1-3; default 2. */
  faultDomainCount?: number | undefined;
  /** 1-20; default 5. */
  updateDomainCount?: number | undefined;
  /** Default `as`. */
  prefix?: string | undefined;
  /** Default `host`. */
  hostPrefix?: string | undefined;
}

/**
 * `sets` availability sets of `vmsPerSet` VMs each, over `hosts` shared hosts. VM i of set s is
 * `<prefix>s-vm<i>` in fault domain i mod FD count and update domain i mod UD count. Host h serves
 * fault domain h mod FD count, and each VM goes to the next host of its fault domain in round robin,
 * so a host lies in one fault domain of every set it carries.
 */
export function generateAvailabilitySets(options: AvailabilitySetsOptions): VmSpec[] {
  const { sets, vmsPerSet, hosts } = options;
  const faultDomainCount = options.faultDomainCount ?? AVAILABILITY_SET_DEFAULTS.faultDomainCount;
  const updateDomainCount = options.updateDomainCount ?? AVAILABILITY_SET_DEFAULTS.updateDomainCount;
  const prefix = options.prefix ?? 'as';
  positiveInt('sets', sets);
  positiveInt('vmsPerSet', vmsPerSet);
  intIn('faultDomainCount', faultDomainCount, 1, MAX_AVAILABILITY_SET_FAULT_DOMAINS);
  intIn('updateDomainCount', updateDomainCount, 1, 20);
  if (sets * vmsPerSet > MAX_GENERATED_VMS) {
    throw new FleetGeneratorError('vmsPerSet', `${sets} sets of ${vmsPerSet} VMs make ${sets * vmsPerSet}; at most ${MAX_GENERATED_VMS}`);
  }
  const placer = new HostPlacer(hostNames(hosts, options.hostPrefix), faultDomainCount);

  const out: VmSpec[] = new Array<VmSpec>(sets * vmsPerSet);
  let k = 0;
  for (let s = 0; s < sets; s++) {
    const tenant = `${prefix}${s}`;
    const vmPrefix = `${tenant}-vm`;
    for (let i = 0; i < vmsPerSet; i++) {
      const faultDomain = i % faultDomainCount;
      out[k++] = {
        name: vmPrefix + i,
        tenant,
        tenantKind: 'availabilitySet',
        faultDomain,
        updateDomain: i % updateDomainCount,
        host: placer.next(faultDomain),
        faultDomainCount,
        updateDomainCount,
      };
    }
  }
  return out;
}

export interface ScaleSetOptions {
  name: string;
  /** How many instances: `<name>_0` … `<name>_{instances-1}` (Flexible: `<name>_<8 hex digits>`). */
  instances: number;
  /** Default Uniform. */
  orchestrationMode?: OrchestrationMode | undefined;
  /** Default 1; with several, the tenants are `<name>-pg0` … */
  placementGroups?: number | undefined;
  /** 1-20; default 5. */
  faultDomainCount?: number | undefined;
  /** 1-20; default 5. */
  updateDomainCount?: number | undefined;
  /** A host count (named `<hostPrefix><i>`) or the host names; absent: a host per instance. */
  hosts?: number | readonly string[] | undefined;
  /** Default `host`; only with a host count. */
  hostPrefix?: string | undefined;
  priority?: Priority | undefined;
  evictionPolicy?: EvictionPolicy | undefined;
  terminateNotificationMinutes?: number | undefined;
  osImageNotification?: boolean | undefined;
  gpu?: boolean | undefined;
}

/** The FC tenants of a scale set: itself with one placement group, else `<name>-pg<k>`. */
export function scaleSetTenants(name: string, placementGroups = 1): string[] {
  return placementGroups === 1 ? [name] : Array.from({ length: placementGroups }, (_, k) => `${name}-pg${k}`);
}

/**
 * A scale set's instances, named as Azure names them: instance i is `<name>_<i>` in placement group
 * i mod P; as the j-th instance of its group (j = floor(i / P)) it is in fault domain j mod FD count
 * and update domain j mod UD count. With hosts, placement follows `generateAvailabilitySets`.
 * [choice] In a Flexible scale set, instance i is `<name>_<8 hex digits>` instead (Azure: 8 characters
 * of a GUID), the same for the same name and i (`flexibleNameSuffixes`).
 */
export function generateScaleSet(options: ScaleSetOptions): VmSpec[] {
  const { name, instances } = options;
  const placementGroups = options.placementGroups ?? 1;
  const faultDomainCount = options.faultDomainCount ?? SCALE_SET_DEFAULTS.faultDomainCount;
  const updateDomainCount = options.updateDomainCount ?? SCALE_SET_DEFAULTS.updateDomainCount;
  intIn('instances', instances, 0, MAX_GENERATED_VMS);
  positiveInt('placementGroups', placementGroups);
  intIn('faultDomainCount', faultDomainCount, 1, 20);
  intIn('updateDomainCount', updateDomainCount, 1, 20);
  if (options.hostPrefix !== undefined && typeof options.hosts !== 'number') {
    throw new FleetGeneratorError('hostPrefix', 'applies only with a host count (hosts: N)');
  }
  const placer = options.hosts === undefined ? null : new HostPlacer(hostNames(options.hosts, options.hostPrefix), faultDomainCount);
  const tenants = scaleSetTenants(name, placementGroups);
  // Only settings that are on are written, so the specs read like hand-written ones.
  const extra: Partial<VmSpec> = {};
  if (options.priority !== undefined) extra.priority = options.priority;
  if (options.evictionPolicy !== undefined) extra.evictionPolicy = options.evictionPolicy;
  if (options.terminateNotificationMinutes !== undefined) extra.terminateNotificationMinutes = options.terminateNotificationMinutes;
  if (options.osImageNotification !== undefined) extra.osImageNotification = options.osImageNotification;
  if (options.gpu !== undefined) extra.gpu = options.gpu;
  if (options.orchestrationMode !== undefined) extra.orchestrationMode = options.orchestrationMode;
  const suffix = options.orchestrationMode === 'Flexible' ? flexibleNameSuffixes(name) : String;

  const out: VmSpec[] = new Array<VmSpec>(instances);
  for (let i = 0; i < instances; i++) {
    const j = Math.floor(i / placementGroups);
    const faultDomain = j % faultDomainCount;
    const spec: VmSpec = {
      name: `${name}_${suffix(i)}`,
      tenant: tenants[i % placementGroups]!,
      tenantKind: 'scaleSet',
      faultDomain,
      updateDomain: j % updateDomainCount,
      ...extra,
      faultDomainCount,
      updateDomainCount,
    };
    if (placer) spec.host = placer.next(faultDomain);
    if (placementGroups > 1) spec.scaleSet = name;
    out[i] = spec;
  }
  return out;
}

/**
 * Host h serves fault domain h mod F; a VM of fault domain f goes to the next host serving f.
 * One FD per host for everything placed through one placer keeps the engine's host rule.
 */
class HostPlacer {
  readonly #counters: number[];
  readonly #perDomain: number[];

  constructor(
    private readonly names: readonly string[],
    private readonly faultDomainCount: number,
  ) {
    if (names.length < faultDomainCount) {
      throw new FleetGeneratorError('hosts', `must be at least the fault domain count (${faultDomainCount}), got ${names.length}`);
    }
    this.#counters = new Array<number>(faultDomainCount).fill(0);
    this.#perDomain = Array.from({ length: faultDomainCount }, (_, f) => Math.floor((names.length - 1 - f) / faultDomainCount) + 1);
  }

  next(faultDomain: number): string {
    const c = this.#counters[faultDomain]!;
    this.#counters[faultDomain] = c + 1 === this.#perDomain[faultDomain]! ? 0 : c + 1;
    return this.names[faultDomain + this.faultDomainCount * c]!;
  }
}

function hostNames(hosts: number | readonly string[], hostPrefix = 'host'): readonly string[] {
  if (typeof hosts !== 'number') {
    const seen = new Set<string>();
    hosts.forEach((h, i) => {
      if (seen.has(h)) throw new FleetGeneratorError(['hosts', i], `host '${h}' is listed twice`);
      seen.add(h);
    });
    return hosts;
  }
  positiveInt('hosts', hosts);
  if (hosts > MAX_GENERATED_VMS) throw new FleetGeneratorError('hosts', `must be at most ${MAX_GENERATED_VMS}, got ${hosts}`);
  return Array.from({ length: hosts }, (_, h) => `${hostPrefix}${h}`);
}

function positiveInt(field: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) throw new FleetGeneratorError(field, `must be a positive integer, got ${value}`);
}

function intIn(field: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new FleetGeneratorError(field, `must be an integer from ${min} to ${max}, got ${value}`);
  }
}
