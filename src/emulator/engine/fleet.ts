// The fleet: VMs grouped into FC tenants and placed on hosts.
import type { ScheduledEventsPolicy } from './scheduled-events-policy.js';
import { isIP } from 'node:net';
import { TERMINATE_NOTICE_MINUTES } from './timing.js';
import { conflict, invalid, notFound, type EngineError } from './errors.js';
import { computerNamePrefixProblem, computerNameProblem, defaultComputerName } from './computer-name.js';

export const TENANT_KINDS = ['standalone', 'availabilitySet', 'scaleSet', 'cloudService'] as const;
export type TenantKind = (typeof TENANT_KINDS)[number];

export const PRIORITIES = ['Regular', 'Spot'] as const;
export type Priority = (typeof PRIORITIES)[number];

/** [imds] What becomes of an evicted Spot VM; Azure's default is Deallocate. */
export const EVICTION_POLICIES = ['Deallocate', 'Delete'] as const;
export type EvictionPolicy = (typeof EVICTION_POLICIES)[number];

/** [choice] A VM is running unless a Spot eviction deallocated it; Azure's other power states have no events. */
export const POWER_STATES = ['running', 'deallocated'] as const;
export type PowerState = (typeof POWER_STATES)[number];

export const OS_TYPES = ['Linux', 'Windows'] as const;
export type OsType = (typeof OS_TYPES)[number];
/** [choice] A VM that declares no osType runs Linux (Ubuntu 22.04); shown by /metadata/instance, and it picks computer name rules. */
export const DEFAULT_OS_TYPE: OsType = 'Linux';

/**
 * [imds] How a scale set orchestrates its VMs. Uniform (Forewarn's default, and what it always modelled):
 * instances `<set>_<instance id>`, computer names `<prefix><6 base-36 digits of the id>`. Flexible: the VMs
 * are ordinary VMs, named `<set>_<8 characters of a GUID>`, computer names `<prefix><6 random characters>`.
 */
export const ORCHESTRATION_MODES = ['Uniform', 'Flexible'] as const;
export type OrchestrationMode = (typeof ORCHESTRATION_MODES)[number];

/** [imds] Azure regions with zones have three. */
export const ZONES = ['1', '2', '3'] as const;
export type Zone = (typeof ZONES)[number];

/**
 * What /metadata/instance shows about a VM beyond its place in the fleet; each field as declared,
 * absent ones take the defaults of `src/emulator/imds/instance-defaults.ts`. Tenants may declare all but
 * each VM's own fields (computerName and the per-NIC privateIp, publicIp, macAddress) for their VMs in
 * fleet files. orchestrationMode and computerNamePrefix are a scale set's: its VMs agree on them.
 */
export interface InstanceSettings {
  location?: string | undefined;
  zone?: Zone | undefined;
  vmSize?: string | undefined;
  osType?: OsType | undefined;
  resourceGroup?: string | undefined;
  subscriptionId?: string | undefined;
  tags?: Readonly<Record<string, string>> | undefined;
  /** ARM's scheduledEventsPolicy: Event Grid publishing and automatic approval of user-initiated events. */
  scheduledEventsPolicy?: ScheduledEventsPolicy | undefined;
  /** Scale-set VMs only; Uniform when absent. */
  orchestrationMode?: OrchestrationMode | undefined;
  /** Scale-set VMs only (ARM's osProfile.computerNamePrefix); the scale set's name when absent. */
  computerNamePrefix?: string | undefined;
  /** osProfile.computerName, the VM's host name; derived from its name or scale set when absent. */
  computerName?: string | undefined;
  privateIp?: string | undefined;
  publicIp?: string | undefined;
  macAddress?: string | undefined;
}

/** The settings' keys, in the order APIs list them. */
export const INSTANCE_SETTING_KEYS = [
  'location',
  'zone',
  'vmSize',
  'osType',
  'resourceGroup',
  'subscriptionId',
  'tags',
  'scheduledEventsPolicy',
  'orchestrationMode',
  'computerNamePrefix',
  'computerName',
  'privateIp',
  'publicIp',
  'macAddress',
] as const satisfies readonly (keyof InstanceSettings)[];

/** [choice] Default private IPs: the lowest free address from 10.0.0.4 up (Azure keeps .0-.3 of a subnet). */
const FIRST_DEFAULT_IP = (10 << 24) + 4;
const ipv4ToInt = (ip: string) => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
const intToIpv4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');

/** What a caller declares; everything but `name` has a default. */
export interface VmSpec extends InstanceSettings {
  name: string;
  tenant?: string | undefined;
  tenantKind?: TenantKind | undefined;
  faultDomain?: number | undefined;
  updateDomain?: number | undefined;
  host?: string | undefined;
  address?: string | undefined;
  priority?: Priority | undefined;
  /** Spot VMs only; Deallocate when absent. */
  evictionPolicy?: EvictionPolicy | undefined;
  powerState?: PowerState | undefined;
  terminateNotificationMinutes?: number | undefined;
  osImageNotification?: boolean | undefined;
  gpu?: boolean | undefined;
  faultDomainCount?: number | undefined;
  updateDomainCount?: number | undefined;
  /** A scale set's name when its tenant is one of several placement groups; defaults to the tenant. */
  scaleSet?: string | undefined;
  vmId?: string | undefined;
}

export interface Vm {
  name: string;
  vmId: string;
  tenant: string;
  host: string;
  faultDomain: number;
  updateDomain: number;
  address: string | null;
  priority: Priority;
  /** Null for Regular VMs. */
  evictionPolicy: EvictionPolicy | null;
  powerState: PowerState;
  terminateNotificationMinutes: number | null;
  osImageNotification: boolean;
  gpu: boolean;
  /** The scale set this VM belongs to, or null outside scale sets. */
  scaleSet: string | null;
  /** Its scale set's orchestration mode, or null outside scale sets. */
  orchestrationMode: OrchestrationMode | null;
  /** osProfile.computerName: declared, or the default for its name, scale set and OS (`computer-name.ts`). */
  computerName: string;
  /** Instance metadata as declared (defaults are applied where it is shown). */
  instance: InstanceSettings;
  /** The primary private IPv4: declared, or the lowest free default one. */
  privateIp: string;
}

export interface Tenant {
  name: string;
  kind: TenantKind;
  faultDomainCount: number;
  updateDomainCount: number;
  /** Member names in insertion order. */
  vms: Set<string>;
}

export interface Host {
  name: string;
  vms: Set<string>;
  /**
   * A host sits in one rack, so it lies in one fault domain of every tenant it serves: per tenant
   * here, that fault domain and how many of its VMs the host carries, as count * DOMAIN_SLOTS +
   * faultDomain. One number, not a record under a host-and-tenant key: 80 bytes a VM less at a million.
   */
  domains: Map<string, number>;
}

/** Fault domains run from 0 to 19, so a count times this plus the fault domain keeps both. */
const DOMAIN_SLOTS = 32;

/** [choice] Update domain counts when a tenant does not declare one (Azure's default for availability sets is 5). */
const DEFAULT_UPDATE_DOMAIN_COUNT: Record<TenantKind, number> = {
  standalone: 1,
  availabilitySet: 5,
  scaleSet: 5,
  cloudService: 5,
};

/** [choice] Fault domain counts when a tenant does not declare one. */
const DEFAULT_FAULT_DOMAIN_COUNT: Record<TenantKind, number> = {
  standalone: 1,
  availabilitySet: 2,
  scaleSet: 5,
  cloudService: 5,
};

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}$/;

/**
 * The canonical form of an IP address, as Node reports a peer: IPv4-mapped IPv6
 * (`::ffff:10.0.0.4`) becomes plain IPv4, and IPv6 is lower-case and compressed.
 * Returns null for anything that is not an IP address.
 */
export function normalizeAddress(address: string): string | null {
  const lower = address.trim().toLowerCase();
  if (lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4) return lower.slice(7);
  const kind = isIP(lower);
  if (kind === 4) return lower;
  if (kind !== 6) return null;
  const canonical = new URL(`http://[${lower}]/`).hostname.slice(1, -1);
  // The URL parser writes a mapped IPv4 tail in hex; keep such addresses in their IPv4 form.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (mapped) {
    const hi = parseInt(mapped[1]!, 16);
    const lo = parseInt(mapped[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return canonical;
}

/** Whether some VMs of this tenant may see only the events that name them (see seesOnlyOwnEvents). */
export function mayHideOthersEvents(tenant: Tenant): boolean {
  return tenant.kind === 'scaleSet' && tenant.faultDomainCount === 1;
}

/** What the VMs of one scale set share, across its placement groups. */
interface ScaleSetRecord {
  /** As its VMs declare it (the first to join sets it for those that do not); absent: Uniform. */
  orchestrationMode: OrchestrationMode | undefined;
  /** As its VMs declare it; absent: the default prefix, from the scale set's name. */
  computerNamePrefix: string | undefined;
  /** [choice] Computer names are unique in a scale set, compared without case, as host names are: lower-cased name → VM. */
  computerNames: Map<string, string>;
}

export class Fleet {
  readonly vms = new Map<string, Vm>();
  readonly tenants = new Map<string, Tenant>();
  readonly hosts = new Map<string, Host>();
  readonly #byAddress = new Map<string, Vm>();
  /** vmIds are unique, as Azure's are; compared without case, as GUIDs are. */
  readonly #byVmId = new Map<string, Vm>();
  /** Private IPs in use, as integers, declared or default. */
  readonly #byPrivateIp = new Map<number, Vm>();
  /** No default IP below this is free (a hint; removals lower it). */
  #nextDefaultIp = FIRST_DEFAULT_IP;
  /** Scale sets by name, while they have VMs. */
  readonly #scaleSets = new Map<string, ScaleSetRecord>();

  constructor(private readonly newId: () => string) {}

  get size(): number {
    return this.vms.size;
  }

  /** Validates a spec against the fleet without changing anything. */
  resolve(spec: VmSpec): { vm: Vm; tenant: Omit<Tenant, 'vms'> } {
    if (typeof spec.name !== 'string' || !NAME.test(spec.name)) {
      throw invalid(`VM name ${JSON.stringify(spec.name)} must be 1-80 letters, digits, '_', '.' or '-'`, 'name');
    }
    if (this.vms.has(spec.name)) throw conflict(`a VM named '${spec.name}' already exists`, 'name');
    const tenantName = spec.tenant ?? spec.name;
    if (!NAME.test(tenantName)) throw invalid(`tenant name ${JSON.stringify(tenantName)} is not a valid name`, 'tenant');
    const existing = this.tenants.get(tenantName);
    // [choice] A named tenant without a kind joins as its existing kind, or as an availability set.
    const kind = spec.tenantKind ?? existing?.kind ?? (spec.tenant === undefined ? 'standalone' : 'availabilitySet');
    if (existing && existing.kind !== kind) {
      throw conflict(`tenant '${tenantName}' is a ${existing.kind}, not a ${kind}`, 'tenantKind');
    }
    if (kind === 'standalone' && existing && existing.vms.size > 0) {
      throw conflict(`tenant '${tenantName}' is a standalone VM's and cannot hold a second VM`, 'tenant');
    }
    const faultDomainCount = spec.faultDomainCount ?? existing?.faultDomainCount ?? DEFAULT_FAULT_DOMAIN_COUNT[kind];
    if (!Number.isInteger(faultDomainCount) || faultDomainCount < 1 || faultDomainCount > 20) {
      throw invalid(`faultDomainCount must be an integer from 1 to 20, got ${faultDomainCount}`, 'faultDomainCount');
    }
    if (existing && existing.faultDomainCount !== faultDomainCount) {
      throw conflict(`tenant '${tenantName}' has ${existing.faultDomainCount} fault domains, not ${faultDomainCount}`, 'faultDomainCount');
    }
    const faultDomain = spec.faultDomain ?? 0;
    if (!Number.isInteger(faultDomain) || faultDomain < 0 || faultDomain >= faultDomainCount) {
      throw invalid(`faultDomain must be an integer from 0 to ${faultDomainCount - 1}, got ${faultDomain}`, 'faultDomain');
    }
    const updateDomainCount = spec.updateDomainCount ?? existing?.updateDomainCount ?? DEFAULT_UPDATE_DOMAIN_COUNT[kind];
    if (!Number.isInteger(updateDomainCount) || updateDomainCount < 1 || updateDomainCount > 20) {
      throw invalid(`updateDomainCount must be an integer from 1 to 20, got ${updateDomainCount}`, 'updateDomainCount');
    }
    if (existing && existing.updateDomainCount !== updateDomainCount) {
      throw conflict(
        `tenant '${tenantName}' has ${existing.updateDomainCount} update domains, not ${updateDomainCount}`,
        'updateDomainCount',
      );
    }
    const updateDomain = spec.updateDomain ?? 0;
    if (!Number.isInteger(updateDomain) || updateDomain < 0 || updateDomain >= updateDomainCount) {
      throw invalid(`updateDomain must be an integer from 0 to ${updateDomainCount - 1}, got ${updateDomain}`, 'updateDomain');
    }
    if (spec.scaleSet !== undefined && kind !== 'scaleSet') {
      throw invalid('scaleSet applies only to scale-set VMs (tenantKind scaleSet)', 'scaleSet');
    }
    const scaleSet = kind === 'scaleSet' ? (spec.scaleSet ?? tenantName) : null;
    if (scaleSet !== null && !NAME.test(scaleSet))
      throw invalid(`scale set name ${JSON.stringify(scaleSet)} is not a valid name`, 'scaleSet');
    const address = spec.address === undefined ? null : normalizeAddress(spec.address);
    if (spec.address !== undefined && address === null) {
      throw invalid(`address ${JSON.stringify(spec.address)} is not an IPv4 or IPv6 address`, 'address');
    }
    if (address !== null && this.#byAddress.has(address)) {
      throw conflict(`address ${address} already belongs to VM '${this.#byAddress.get(address)!.name}'`, 'address');
    }
    const minutes = spec.terminateNotificationMinutes ?? null;
    if (minutes !== null) {
      if (kind !== 'scaleSet')
        throw invalid('terminateNotificationMinutes applies only to scale-set VMs (tenantKind scaleSet)', 'terminateNotificationMinutes');
      const { min, max } = TERMINATE_NOTICE_MINUTES;
      if (!Number.isInteger(minutes) || minutes < min || minutes > max) {
        throw invalid(
          `terminateNotificationMinutes must be an integer from ${min} to ${max}, got ${minutes}`,
          'terminateNotificationMinutes',
        );
      }
    }
    if (spec.osImageNotification && kind !== 'scaleSet') {
      throw invalid('osImageNotification applies only to scale-set VMs (tenantKind scaleSet)', 'osImageNotification');
    }
    const host = spec.host ?? `host-${spec.name}`;
    if (!NAME.test(host)) throw invalid(`host name ${JSON.stringify(host)} is not a valid name`, 'host');
    // A host sits in one rack, so it lies in a single fault domain of every tenant it serves.
    const carried = this.hosts.get(host);
    const placed = carried?.domains.get(tenantName);
    if (placed !== undefined && placed % DOMAIN_SLOTS !== faultDomain) {
      const example = [...carried!.vms].find((n) => this.vms.get(n)!.tenant === tenantName)!;
      throw conflict(
        `host '${host}' already carries '${example}' of tenant '${tenantName}' in fault domain ${placed % DOMAIN_SLOTS}; ` +
          `a host lies in one fault domain of each tenant, so '${spec.name}' cannot be in fault domain ${faultDomain} there`,
        'faultDomain',
        'host',
      );
    }
    if (spec.vmId !== undefined && this.#byVmId.has(spec.vmId.toLowerCase())) {
      throw conflict(`vmId ${spec.vmId} already belongs to VM '${this.#byVmId.get(spec.vmId.toLowerCase())!.name}'`, 'vmId');
    }
    const instance = instanceSettings(spec);
    if (instance.privateIp !== undefined) {
      const owner = this.#byPrivateIp.get(ipv4ToInt(instance.privateIp));
      if (owner !== undefined) {
        throw conflict(
          `privateIp ${instance.privateIp} already belongs to VM '${owner.name}'${owner.instance.privateIp === undefined ? ' (a default address)' : ''}`,
          'privateIp',
        );
      }
    }
    const { orchestrationMode, computerName } = this.#computerName(spec.name, scaleSet, instance);
    // Most VMs declare no instance settings: they share one frozen empty record (about 58 bytes a VM at a million).
    const settings = Object.keys(instance).length === 0 ? NO_INSTANCE_SETTINGS : instance;
    const priority = spec.priority ?? 'Regular';
    if (spec.evictionPolicy !== undefined && priority !== 'Spot') {
      throw invalid('evictionPolicy applies only to Spot VMs (priority Spot)', 'evictionPolicy');
    }
    if (spec.powerState === 'deallocated' && priority !== 'Spot') {
      throw invalid('powerState deallocated applies only to Spot VMs, which an eviction deallocates', 'powerState');
    }
    const vm: Vm = {
      name: spec.name,
      vmId: spec.vmId ?? this.newId().toLowerCase(),
      tenant: tenantName,
      host,
      faultDomain,
      updateDomain,
      address,
      priority,
      evictionPolicy: priority === 'Spot' ? (spec.evictionPolicy ?? 'Deallocate') : null,
      powerState: spec.powerState ?? 'running',
      terminateNotificationMinutes: minutes,
      osImageNotification: spec.osImageNotification ?? false,
      gpu: spec.gpu ?? false,
      scaleSet,
      orchestrationMode,
      computerName,
      instance: settings,
      privateIp: instance.privateIp ?? '',
    };
    return { vm, tenant: { name: tenantName, kind, faultDomainCount, updateDomainCount } };
  }

  /**
   * The VM's orchestration mode and computer name, checked against Azure's rules and its scale set.
   * A scale set's orchestrationMode and computerNamePrefix are shared: a VM that declares none takes
   * those of the VMs already there (written into `instance`, so a saved VM keeps them).
   */
  #computerName(
    name: string,
    scaleSet: string | null,
    instance: InstanceSettings,
  ): { orchestrationMode: OrchestrationMode | null; computerName: string } {
    const osType = instance.osType ?? DEFAULT_OS_TYPE;
    let orchestrationMode: OrchestrationMode | null = null;
    if (scaleSet === null) {
      for (const key of ['orchestrationMode', 'computerNamePrefix'] as const) {
        if (instance[key] !== undefined) throw invalid(`${key} applies only to scale-set VMs (tenantKind scaleSet)`, key);
      }
    } else {
      const set = this.#scaleSets.get(scaleSet);
      if (set !== undefined) {
        const mode = set.orchestrationMode ?? 'Uniform';
        if (instance.orchestrationMode === undefined) {
          if (set.orchestrationMode !== undefined) instance.orchestrationMode = set.orchestrationMode;
        } else if (instance.orchestrationMode !== mode) {
          throw conflict(`scale set '${scaleSet}' is ${mode}, not ${instance.orchestrationMode}`, 'orchestrationMode');
        }
        if (instance.computerNamePrefix === undefined) {
          if (set.computerNamePrefix !== undefined) instance.computerNamePrefix = set.computerNamePrefix;
        } else if (instance.computerNamePrefix !== set.computerNamePrefix) {
          const has =
            set.computerNamePrefix === undefined
              ? 'no computerNamePrefix (its prefix is its name)'
              : `computerNamePrefix '${set.computerNamePrefix}'`;
          throw conflict(`scale set '${scaleSet}' has ${has}, not '${instance.computerNamePrefix}'`, 'computerNamePrefix');
        }
      }
      orchestrationMode = instance.orchestrationMode ?? 'Uniform';
      if (instance.computerNamePrefix !== undefined) {
        const problem = computerNamePrefixProblem(instance.computerNamePrefix, osType);
        if (problem !== null) throw invalid(`computerNamePrefix ${problem}`, 'computerNamePrefix', 'osType');
      }
    }
    if (instance.computerName !== undefined) {
      const problem = computerNameProblem(instance.computerName, osType);
      if (problem !== null) throw invalid(`computerName ${problem}`, 'computerName', 'osType');
    }
    const computerName =
      instance.computerName ??
      defaultComputerName({ name, scaleSet, orchestrationMode, computerNamePrefix: instance.computerNamePrefix, osType });
    if (scaleSet !== null) {
      const owner = this.#scaleSets.get(scaleSet)?.computerNames.get(computerName.toLowerCase());
      if (owner !== undefined) {
        const declared = instance.computerName !== undefined;
        throw conflict(
          `computer name '${computerName}' already belongs to VM '${owner}' of scale set '${scaleSet}'; ` +
            `computer names are unique in a scale set${declared ? '' : ' (give one VM its own computerName)'}`,
          declared ? 'computerName' : 'name',
        );
      }
    }
    return { orchestrationMode, computerName };
  }

  add(spec: VmSpec): Vm {
    const { vm, tenant } = this.resolve(spec);
    let t = this.tenants.get(tenant.name);
    if (!t) {
      t = { ...tenant, vms: new Set() };
      this.tenants.set(t.name, t);
    }
    t.vms.add(vm.name);
    this.#placeOnHost(vm, vm.host);
    this.vms.set(vm.name, vm);
    if (vm.address !== null) this.#byAddress.set(vm.address, vm);
    this.#byVmId.set(vm.vmId.toLowerCase(), vm);
    if (vm.privateIp === '') vm.privateIp = this.#takeDefaultIp();
    this.#byPrivateIp.set(ipv4ToInt(vm.privateIp), vm);
    if (vm.scaleSet !== null) {
      let set = this.#scaleSets.get(vm.scaleSet);
      if (set === undefined) {
        set = {
          orchestrationMode: vm.instance.orchestrationMode,
          computerNamePrefix: vm.instance.computerNamePrefix,
          computerNames: new Map(),
        };
        this.#scaleSets.set(vm.scaleSet, set);
      }
      set.computerNames.set(vm.computerName.toLowerCase(), vm.name);
    }
    return vm;
  }

  #takeDefaultIp(): string {
    let n = this.#nextDefaultIp;
    while (this.#byPrivateIp.has(n)) n++;
    this.#nextDefaultIp = n + 1;
    return intToIpv4(n);
  }

  remove(name: string): Vm {
    const vm = this.get(name);
    this.vms.delete(name);
    if (vm.address !== null) this.#byAddress.delete(vm.address);
    this.#byVmId.delete(vm.vmId.toLowerCase());
    const ip = ipv4ToInt(vm.privateIp);
    this.#byPrivateIp.delete(ip);
    if (ip >= FIRST_DEFAULT_IP && ip < this.#nextDefaultIp) this.#nextDefaultIp = ip;
    if (vm.scaleSet !== null) {
      const set = this.#scaleSets.get(vm.scaleSet)!;
      set.computerNames.delete(vm.computerName.toLowerCase());
      if (set.computerNames.size === 0) this.#scaleSets.delete(vm.scaleSet);
    }
    const t = this.tenants.get(vm.tenant);
    t?.vms.delete(name);
    if (t && t.vms.size === 0) this.tenants.delete(t.name);
    this.#takeOffHost(vm);
    return vm;
  }

  /** Places a VM on another host, as a redeploy does; the host is created if new. */
  moveToHost(name: string, host: string): void {
    const vm = this.get(name);
    this.#takeOffHost(vm);
    vm.host = host;
    this.#placeOnHost(vm, host);
  }

  /** Puts a VM on a host (created if new), in its tenant's fault domain there. */
  #placeOnHost(vm: Vm, name: string): void {
    let host = this.hosts.get(name);
    if (!host) this.hosts.set(name, (host = { name, vms: new Set(), domains: new Map() }));
    host.vms.add(vm.name);
    host.domains.set(vm.tenant, (host.domains.get(vm.tenant) ?? vm.faultDomain) + DOMAIN_SLOTS);
  }

  /** Takes a VM off its host; a host left empty is gone. */
  #takeOffHost(vm: Vm): void {
    const host = this.hosts.get(vm.host);
    if (!host) return;
    host.vms.delete(vm.name);
    if (host.vms.size === 0) {
      this.hosts.delete(host.name);
      return;
    }
    const placed = host.domains.get(vm.tenant)! - DOMAIN_SLOTS;
    if (placed < DOMAIN_SLOTS) host.domains.delete(vm.tenant);
    else host.domains.set(vm.tenant, placed);
  }

  get(name: string): Vm {
    const vm = this.vms.get(name);
    if (!vm) throw notFound(`no VM named '${name}'`);
    return vm;
  }

  tenantOf(vm: Vm): Tenant {
    return this.tenants.get(vm.tenant)!;
  }

  byAddress(address: string): Vm | undefined {
    // Node gives canonical addresses already, so only the mapped form needs undoing on this hot path.
    return this.#byAddress.get(address.startsWith('::ffff:') ? address.slice(7) : address);
  }

  /** [seed] GPU VMs in a single-fault-domain scale set see only events that name them. */
  seesOnlyOwnEvents(vm: Vm): boolean {
    // The VM's own flag first: most VMs have no GPU, and a tenant lookup costs more at a million VMs.
    return vm.gpu && mayHideOthersEvents(this.tenantOf(vm));
  }

  clear(): void {
    this.vms.clear();
    this.tenants.clear();
    this.hosts.clear();
    this.#byAddress.clear();
    this.#byVmId.clear();
    this.#byPrivateIp.clear();
    this.#scaleSets.clear();
    this.#nextDefaultIp = FIRST_DEFAULT_IP;
  }
}

/** The spec fields a fleet rule blames, most first, as its throw names them; empty if none. */
export function fleetRuleFields(err: EngineError): readonly (keyof VmSpec)[] {
  return err.fields.filter((f): f is keyof VmSpec => typeof f === 'string');
}

/** The one spec field most to blame for a fleet rule, if any. */
export function fleetRuleField(err: EngineError): keyof VmSpec | undefined {
  return fleetRuleFields(err)[0];
}

/** The declared instance settings of a spec, checked and in canonical form (MAC upper-case, no separators). */
const NO_INSTANCE_SETTINGS: InstanceSettings = Object.freeze({});

function instanceSettings(spec: VmSpec): InstanceSettings {
  const out: InstanceSettings = {};
  for (const key of INSTANCE_SETTING_KEYS) {
    const value = spec[key];
    // Objects are copied, so a caller's later change to its spec never reaches the VM.
    if (value !== undefined) (out as Record<string, unknown>)[key] = typeof value === 'object' ? structuredClone(value) : value;
  }
  for (const key of ['privateIp', 'publicIp'] as const) {
    const ip = out[key];
    if (ip !== undefined && isIP(ip) !== 4) throw invalid(`${key} ${JSON.stringify(ip)} is not an IPv4 address`, key);
  }
  if (out.macAddress !== undefined) {
    const hex = out.macAddress.replace(/[-:]/g, '').toUpperCase();
    if (!/^[0-9A-F]{12}$/.test(hex))
      throw invalid(`macAddress ${JSON.stringify(out.macAddress)} is not a MAC address (12 hex digits)`, 'macAddress');
    out.macAddress = hex;
  }
  return out;
}

/** The plain-data view of a VM, for APIs, fleet files and the state file. */
export function vmToSpec(
  vm: Vm,
  tenant: Tenant,
): Required<
  Omit<VmSpec, 'address' | 'terminateNotificationMinutes' | 'scaleSet' | 'evictionPolicy' | 'powerState' | keyof InstanceSettings>
> & {
  address?: string;
  terminateNotificationMinutes?: number;
  scaleSet?: string;
  evictionPolicy?: EvictionPolicy;
  powerState?: PowerState;
} & InstanceSettings {
  return {
    name: vm.name,
    vmId: vm.vmId,
    tenant: vm.tenant,
    tenantKind: tenant.kind,
    faultDomain: vm.faultDomain,
    updateDomain: vm.updateDomain,
    host: vm.host,
    ...(vm.address !== null ? { address: vm.address } : {}),
    priority: vm.priority,
    ...(vm.evictionPolicy !== null ? { evictionPolicy: vm.evictionPolicy } : {}),
    ...(vm.powerState !== 'running' ? { powerState: vm.powerState } : {}),
    ...(vm.terminateNotificationMinutes !== null ? { terminateNotificationMinutes: vm.terminateNotificationMinutes } : {}),
    osImageNotification: vm.osImageNotification,
    gpu: vm.gpu,
    faultDomainCount: tenant.faultDomainCount,
    updateDomainCount: tenant.updateDomainCount,
    ...(vm.scaleSet !== null && vm.scaleSet !== vm.tenant ? { scaleSet: vm.scaleSet } : {}),
    // Only what was declared: a default private IP is not pinned by a save and restore.
    ...vm.instance,
  };
}
