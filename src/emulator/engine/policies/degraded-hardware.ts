// [seed] Degraded hardware: a failure is predicted, so the VM is moved to healthy hardware with
// NotBefore "days away, up to about 7 days"; the VM may self-redeploy before then.
import { DEGRADED_HARDWARE_NOTICE_SECONDS } from '../timing.js';
import { policy } from './policy.js';

export const degradedHardware = policy({
  type: 'degraded-hardware',
  eventType: 'Redeploy',
  source: 'Platform',
  description: 'The Host server hardware is predicted to fail; the virtual machine will be moved to healthy hardware.',
  durationInSeconds: -1,
  defaultNoticeMs: (_members, timing) => timing.ms(DEGRADED_HARDWARE_NOTICE_SECONDS),
  onImpactStart: (vm, act) => act.moveToNewHost(vm),
});
