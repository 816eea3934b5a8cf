// Every operation kind's policy, by type: adding an operation means adding its file and a line here.
import type { OperationType } from '../operations.js';
import { degradedHardware } from './degraded-hardware.js';
import { deleteVm } from './delete.js';
import { freeze } from './freeze.js';
import { hardwareFailure } from './hardware-failure.js';
import { hostUpdate } from './host-update.js';
import { platformRedeploy } from './platform-redeploy.js';
import { platformReboot } from './platform-reboot.js';
import type { OperationPolicy } from './policy.js';
import { redeploy } from './redeploy.js';
import { reimage } from './reimage.js';
import { restart } from './restart.js';
import { spotEviction } from './spot-eviction.js';

export type { OperationPolicy, TargetScope, VmActions } from './policy.js';

export const POLICIES: Readonly<Record<OperationType, OperationPolicy>> = {
  restart,
  redeploy,
  freeze,
  'platform-reboot': platformReboot,
  'platform-redeploy': platformRedeploy,
  'degraded-hardware': degradedHardware,
  'hardware-failure': hardwareFailure,
  'spot-eviction': spotEviction,
  delete: deleteVm,
  reimage,
  'host-update': hostUpdate,
};

/** The event types some operation refuses a second of on the same VM: the only ones looked up by VM. */
export const EXCLUSIVE_EVENT_TYPES: ReadonlySet<string> = new Set(Object.values(POLICIES).flatMap((p) => p.exclusiveWith));
