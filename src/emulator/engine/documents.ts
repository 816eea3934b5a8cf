// What each VM sees: which live events are visible to it, whose documents a change touched, and the
// incarnation each document carries. The one place visibility is decided, so a VM's document, its
// incarnation and the listeners told of a change can never disagree.
import type { EventView } from '../../protocol/types.js';
import { Incarnations } from './incarnations.js';
import type { EngineCore } from './core.js';
import { mayHideOthersEvents, type Vm } from './fleet.js';
import type { DocumentState, EngineEvent } from './model.js';

/** [choice] A VM's first document has incarnation 1, as in the seed's example sequence. */
export const FIRST_INCARNATION = 1;

export class Documents {
  /** By VM name, for VMs that left too (a name that comes back keeps rising); saved in the state file. */
  readonly incarnations: Incarnations;
  /** Slots of the documents changed since the last commit, in the order first marked. */
  #changed: number[] = [];
  /** The current commit's mark; starts above the 0 a new slot holds. */
  #mark = 1;
  /**
   * The VMs of each touched tenant whose VMs all see its events, as incarnation slots in the
   * tenant's order, so marking their documents looks nothing up; dropped when the tenant's VMs change.
   */
  readonly #tenantSlots = new Map<string, number[]>();
  readonly #core: EngineCore;

  constructor(core: EngineCore) {
    this.#core = core;
    this.incarnations = new Incarnations(core.changes);
  }

  incarnation(name: string): number {
    return this.incarnations.get(name) ?? FIRST_INCARNATION;
  }

  /** The document a VM sees now; the caller has ticked. */
  documentFor(name: string): DocumentState {
    const vm = this.#core.fleet.get(name);
    const events: EventView[] = [];
    for (const e of this.#core.live.ofTenant(vm.tenant)) {
      if (this.visible(vm, e)) events.push(toView(e));
    }
    return { vm: name, incarnation: this.incarnation(name), events };
  }

  visible(vm: Vm, event: { tenant: string; resources: readonly string[] }): boolean {
    return (
      event.tenant === vm.tenant &&
      vm.powerState === 'running' &&
      (!this.#core.fleet.seesOnlyOwnEvents(vm) || event.resources.includes(vm.name)) &&
      this.#core.activation.enabled(vm.name)
    );
  }

  /** Marks a VM changed if enabling or disabling it (or stopping and starting it) changes what it sees. */
  touchVm(name: string): void {
    const vm = this.#core.fleet.vms.get(name);
    if (!vm) return;
    const own = this.#core.fleet.seesOnlyOwnEvents(vm);
    if (this.#core.live.ofTenant(vm.tenant).some((e) => !own || e.resources.includes(name))) this.touchName(name);
  }

  /** Marks every VM that sees this event as having a changed document. */
  touch(event: EngineEvent): void {
    const { fleet, activation } = this.#core;
    if (activation.mode === 'off') {
      // Every running VM of such a tenant sees it: no lookup of each VM (or, once cached, of the
      // tenant), which is most of a change's cost at a million VMs. Deallocated VMs are few, and
      // their index says which.
      const slots = this.#tenantSlots.get(event.tenant) ?? this.#cacheSlots(event.tenant);
      if (slots !== null) {
        const stopped = this.#core.vms.deallocated;
        for (const slot of slots) {
          if (stopped.size > 0 && stopped.has(this.incarnations.nameOf(slot))) continue;
          if (this.incarnations.mark(slot, this.#mark)) this.#changed.push(slot);
        }
        return;
      }
    }
    const tenant = fleet.tenants.get(event.tenant);
    if (!tenant) return;
    for (const name of tenant.vms) {
      if (this.visible(fleet.vms.get(name)!, event)) this.touchName(name);
    }
  }

  /** A VM whose document changed whatever it sees: added, removed, or back under an old name. */
  touchName(name: string): void {
    const slot = this.incarnations.slotOf(name, FIRST_INCARNATION);
    if (this.incarnations.mark(slot, this.#mark)) this.#changed.push(slot);
  }

  /** A VM joined or left this tenant, or (no tenant) the fleet was cleared. */
  tenantChanged(tenant?: string): void {
    if (tenant === undefined) this.#tenantSlots.clear();
    else this.#tenantSlots.delete(tenant);
  }

  /** Forgets every incarnation: a restore puts back the saved ones. */
  clearIncarnations(): void {
    this.incarnations.clear();
    this.#tenantSlots.clear();
  }

  /** A tenant whose VMs all see its events while running, as incarnation slots; null for any other. */
  #cacheSlots(name: string): number[] | null {
    const tenant = this.#core.fleet.tenants.get(name);
    if (tenant === undefined || mayHideOthersEvents(tenant)) return null;
    const slots = [...tenant.vms].map((vm) => this.incarnations.slotOf(vm, FIRST_INCARNATION));
    this.#tenantSlots.set(name, slots);
    return slots;
  }

  /** Restored documents are the saved ones, under their saved incarnations. */
  forgetTouched(): void {
    this.#changed = [];
    this.#mark++;
  }

  /** Identifies a VM's visible events and their states, to tell whether its document changed. */
  signature(name: string): string {
    const vm = this.#core.fleet.vms.get(name);
    if (!vm) return '';
    return this.#core.live
      .ofTenant(vm.tenant)
      .filter((e) => this.visible(vm, e))
      .map((e) => `${e.id}:${e.status}`)
      .join(',');
  }

  /** Every VM whose visible events changed gets exactly one new incarnation; returns them. */
  commit(): string[] {
    if (this.#changed.length === 0) return [];
    const slots = this.#changed;
    this.forgetTouched();
    return slots.map((slot) => this.incarnations.bump(slot));
  }
}

function toView(e: EngineEvent): EventView {
  return {
    id: e.id,
    status: e.status,
    type: e.type,
    resources: e.resources,
    notBefore: e.status === 'Started' ? null : e.notBefore,
    description: e.description,
    source: e.source,
    durationInSeconds: e.durationInSeconds,
  };
}
