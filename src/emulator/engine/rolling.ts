// A host update rolls over a tenant one fault domain at a time.
import type { Vm } from './fleet.js';

export type StepStatus = 'pending' | 'scheduled' | 'started' | 'done' | 'skipped' | 'cancelled';

export interface RollingStep {
  faultDomain: number;
  vms: string[];
  status: StepStatus;
  events: string[];
  /** When the step's event is (or was) created; null until it is planned. */
  at: number | null;
}

/** One step per fault domain that has VMs, lowest first. */
export function planSteps(vms: readonly Vm[]): RollingStep[] {
  const byFd = new Map<number, string[]>();
  for (const vm of vms) {
    const list = byFd.get(vm.faultDomain);
    if (list) list.push(vm.name);
    else byFd.set(vm.faultDomain, [vm.name]);
  }
  return (
    [...byFd.entries()]
      .sort(([a], [b]) => a - b)
      // slice(): an exact copy of a list grown by push, which holds slack (see lists.ts).
      .map(([faultDomain, names]) => ({ faultDomain, vms: names.slice(), status: 'pending', events: [], at: null }))
  );
}
