// [seed] Reimage or OS upgrade of a scale-set VM with OS image notification on: 15 min of notice;
// without it the VM is reimaged at once with no event. [choice] The seed gives no event type: a
// Reboot, since the VM restarts on its new image; EventSource User.
import { OS_IMAGE_NOTICE_SECONDS } from '../timing.js';
import { policy } from './policy.js';

export const reimage = policy({
  type: 'reimage',
  eventType: 'Reboot',
  source: 'User',
  description: 'Virtual machine is going to be reimaged as requested by authorized user.',
  durationInSeconds: -1,
  minimumNoticeMs: (_members, timing) => timing.ms(OS_IMAGE_NOTICE_SECONDS),
  check: (vm, tenantKind) =>
    tenantKind === 'scaleSet' ? null : `reimage applies only to scale-set VMs; '${vm.name}' is not in a scale set`,
  withoutNotice: (vm) => (vm.osImageNotification ? null : 'reimage'),
});
