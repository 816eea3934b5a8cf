// Which VM is asking (SPEC §4): source address, then /vms/NAME/ prefix, then the only VM.
import type { Fleet, Vm } from '../engine/fleet.js';

/** The prefixed form of a path, for error messages: `/vms/NAME` + this. */
export type ImdsPath =
  '/metadata/scheduledevents' | `/metadata/instance${string}` | '/metadata/versions' | '/metadata/identity/oauth2/token';

/** Looks up the VM behind each request; allocates nothing once a VM is known (this is the hot path). */
export class Identifier {
  /** The single VM of a one-VM fleet, kept so finding it needs no iterator. */
  #only: Vm | undefined;

  constructor(private readonly fleet: Fleet) {}

  /** The VM asking, or undefined: then `refusal` says why. */
  vmOf(remoteAddress: string | undefined, prefixName: string | undefined): Vm | undefined {
    const fleet = this.fleet;
    if (remoteAddress !== undefined) {
      const byAddress = fleet.byAddress(remoteAddress);
      if (byAddress !== undefined) return byAddress;
    }
    if (prefixName !== undefined) return fleet.vms.get(prefixName);
    if (fleet.vms.size !== 1) return undefined;
    // Still the only VM if the fleet holds it under its name (a VM replaced under that name is a new object).
    const only = this.#only;
    if (only !== undefined && fleet.vms.get(only.name) === only) return only;
    return (this.#only = fleet.vms.values().next().value as Vm);
  }

  /** Why `vmOf` found no VM: the 404 message. */
  refusal(prefixName: string | undefined, path: ImdsPath): string {
    if (prefixName !== undefined) return `No VM named '${prefixName}' in the fleet`;
    if (this.fleet.vms.size === 0) return 'No VMs are emulated: add one to the fleet (POST /v1/vms on the control API)';
    return 'Several VMs are emulated: name one by source address (a VM\'s "address") ' + `or by the path prefix /vms/NAME${path}`;
  }
}
