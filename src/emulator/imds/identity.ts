// Which VM is asking (SPEC §4): source address, then /vms/NAME/ prefix, then the only VM.
import type { Fleet, Vm } from '../engine/fleet.js';

export type Identity = { ok: true; vm: Vm } | { ok: false; message: string };

/** The prefixed form of a path, for error messages: `/vms/NAME` + this. */
export type ImdsPath = '/metadata/scheduledevents' | `/metadata/instance${string}` | '/metadata/versions';

export function identify(fleet: Fleet, remoteAddress: string | undefined, prefixName: string | undefined, path: ImdsPath): Identity {
  if (remoteAddress !== undefined) {
    const byAddress = fleet.byAddress(remoteAddress);
    if (byAddress !== undefined) return { ok: true, vm: byAddress };
  }
  if (prefixName !== undefined) {
    const named = fleet.vms.get(prefixName);
    return named !== undefined ? { ok: true, vm: named } : { ok: false, message: `No VM named '${prefixName}' in the fleet` };
  }
  if (fleet.vms.size === 1) return { ok: true, vm: fleet.vms.values().next().value as Vm };
  if (fleet.vms.size === 0) {
    return { ok: false, message: 'No VMs are emulated: add one to the fleet (POST /v1/vms on the control API)' };
  }
  return {
    ok: false,
    message:
      'Several VMs are emulated: name one by source address (a VM\'s "address") ' +
      `or by the path prefix /vms/NAME${path}`,
  };
}
