// The fleet a reset returns to, kept copy-on-write. While a VM is as it started, the fleet itself is
// its record; only a VM about to change or leave leaves its original spec here. A second copy of
// every VM cost 168 bytes each at a million VMs, and the time to make it.
import type { Fleet, Vm, VmSpec } from './fleet.js';
import { vmToSpec } from './fleet.js';

export class StartFleet {
  /** The start's VM names in order, while the start is the fleet as it was (copy-on-write); else null. */
  #order: string[] | null = null;
  /** The start as specs, when it is not the fleet as it was: restored from a file, or kept across a reset. */
  #specs: VmSpec[] | null = [];
  /** Originals of start VMs that changed or left since. */
  readonly #originals = new Map<string, VmSpec>();
  /** VMs added since the start: not the start's, whatever their names. */
  readonly #added = new Set<string>();
  readonly #fleet: Fleet;

  constructor(fleet: Fleet) {
    this.#fleet = fleet;
  }

  /** The start is the fleet as it is now. */
  isNow(): void {
    this.#order = [...this.#fleet.vms.keys()];
    this.#specs = null;
    this.#originals.clear();
    this.#added.clear();
  }

  /** The start is these specs, whatever the fleet is; they are the caller's to give away. */
  are(specs: VmSpec[]): void {
    this.#order = null;
    this.#specs = specs;
    this.#originals.clear();
    this.#added.clear();
  }

  /** The start as specs, in order; copies the caller may keep or change. */
  specs(): VmSpec[] {
    if (this.#specs !== null) return structuredClone(this.#specs);
    return this.#order!.map((name) => {
      const original = this.#originals.get(name);
      return original !== undefined ? structuredClone(original) : this.#specOf(this.#fleet.vms.get(name)!);
    });
  }

  /** Call before a VM changes or leaves the fleet: a start VM's original is kept. */
  willChange(vm: Vm): void {
    if (this.#order === null || this.#added.has(vm.name) || this.#originals.has(vm.name)) return;
    this.#originals.set(vm.name, this.#specOf(vm));
  }

  /** A VM joined the fleet after the start. */
  joined(name: string): void {
    if (this.#order !== null) this.#added.add(name);
  }

  /** A VM that joined after the start left again. */
  left(name: string): void {
    this.#added.delete(name);
  }

  #specOf(vm: Vm): VmSpec {
    return vmToSpec(vm, this.#fleet.tenantOf(vm));
  }
}
