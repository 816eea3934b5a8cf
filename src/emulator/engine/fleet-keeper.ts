// The fleet as the engine changes it: VMs added, removed (and remembered as deleted), started after
// an eviction, deallocated or moved by a policy, with the state file's change marks and the start
// fleet a reset returns to. Fleet (fleet.ts) holds placement; this adds what a change means to the
// rest of the engine: whose document it touches and which events it ends.
import type { KeyChanges } from './changes.js';
import type { EngineCore } from './core.js';
import { FIRST_INCARNATION } from './documents.js';
import { conflict } from './errors.js';
import { vmToSpec, type Vm, type VmSpec } from './fleet.js';
import type { EngineEvent } from './model.js';
import type { VmActions } from './policies/index.js';
import { StartFleet } from './start-fleet.js';

export class FleetKeeper {
  /** VMs added, changed or removed since the state file last took them. */
  readonly changes: KeyChanges<string>;
  /** VMs a Spot eviction deallocated. */
  readonly deallocated = new Set<string>();
  /** What a reset returns to. */
  readonly startFleet: StartFleet;
  readonly #core: EngineCore;

  constructor(core: EngineCore) {
    this.#core = core;
    this.changes = core.changes.table<string>();
    this.startFleet = new StartFleet(core.fleet);
  }

  /** The fleet as specs, in its order: what a snapshot saves. */
  specs(): VmSpec[] {
    const { fleet } = this.#core;
    return [...fleet.vms.values()].map((vm) => vmToSpec(vm, fleet.tenantOf(vm)));
  }

  /** Adds a VM to the fleet and to the index of deallocated VMs; nothing else hears of it. */
  place(spec: VmSpec): Vm {
    const vm = this.#core.fleet.add(spec);
    this.#core.documents.tenantChanged(vm.tenant);
    if (vm.powerState === 'deallocated') this.deallocated.add(vm.name);
    return vm;
  }

  add(spec: VmSpec): Vm {
    const { documents } = this.#core;
    const vm = this.place(spec);
    this.startFleet.joined(vm.name);
    this.changes.inserted(vm.name);
    this.#core.history.forgetDeleted(vm.name);
    this.#core.markMutated();
    // A returning name must not show an old incarnation with new events.
    if (documents.incarnations.has(vm.name)) documents.touchName(vm.name);
    else documents.incarnations.set(vm.name, FIRST_INCARNATION);
    return vm;
  }

  /**
   * `deletedBy` marks a VM a delete operation removed, as opposed to one taken out through the
   * control API; `cause` is the event whose impact removed it, which ends completed, not cancelled.
   */
  remove(name: string, deletedBy?: { operation: string; at: number }, cause?: EngineEvent): Vm {
    const { fleet, live } = this.#core;
    const vm = fleet.get(name);
    this.startFleet.willChange(vm);
    this.startFleet.left(name);
    this.#core.documents.touchName(name);
    fleet.remove(name);
    this.#core.documents.tenantChanged(vm.tenant);
    this.deallocated.delete(name);
    live.forgetVm(name);
    this.changes.deleted(name);
    if (deletedBy) {
      const { tenant, host, faultDomain, updateDomain } = vm;
      this.#core.history.recordDeleted({
        name,
        tenant,
        host,
        faultDomain,
        updateDomain,
        deletedAt: deletedBy.at,
        operation: deletedBy.operation,
      });
    }
    this.#core.markMutated();
    // Events of a tenant with no VMs left have nobody to tell; they end silently. One that has
    // Started has had its impact, so it ends completed; only a Scheduled one is called off.
    if (!fleet.tenants.has(vm.tenant)) {
      for (const e of [...live.ofTenant(vm.tenant)]) {
        this.#core.lifecycle.end(e, this.#core.clock.now(), e !== cause && e.status === 'Scheduled');
      }
    }
    return { ...vm };
  }

  /** [seed] Starts a VM a Spot eviction deallocated: it runs, and sees its tenant's events, again. */
  start(name: string): Vm {
    const vm = this.#core.fleet.get(name);
    if (vm.powerState !== 'deallocated')
      throw conflict(`VM '${name}' is ${vm.powerState}, not deallocated; only a deallocated VM can be started`);
    this.startFleet.willChange(vm);
    vm.powerState = 'running';
    this.deallocated.delete(name);
    this.changes.updated(name);
    this.#core.documents.touchVm(name);
    this.#core.markMutated();
    return vm;
  }

  /** What a policy may do to a VM, carried out with the indexes and history kept right. */
  actions(event: EngineEvent, at: number): VmActions {
    const { fleet } = this.#core;
    return {
      moveToNewHost: (vm) => {
        // [choice] A new host, named after a fresh id; never one the fleet already has.
        const base = `host-${this.#core.newId().slice(-12).toLowerCase()}`;
        let host = base;
        for (let n = 2; fleet.hosts.has(host); n++) host = `${base}-${n}`;
        this.startFleet.willChange(vm);
        fleet.moveToHost(vm.name, host);
        this.changes.updated(vm.name);
        this.#core.markMutated();
      },
      remove: (vm) => {
        if (fleet.vms.has(vm.name)) this.remove(vm.name, { operation: event.operationId, at }, event);
      },
      deallocate: (vm) => {
        if (!fleet.vms.has(vm.name) || vm.powerState === 'deallocated') return;
        // Its document empties: a stopped VM sees no events.
        this.#core.documents.touchVm(vm.name);
        this.startFleet.willChange(vm);
        vm.powerState = 'deallocated';
        this.deallocated.add(vm.name);
        this.changes.updated(vm.name);
        this.#core.markMutated();
      },
    };
  }

  clear(): void {
    this.#core.fleet.clear();
    this.#core.documents.tenantChanged();
    this.deallocated.clear();
  }
}
