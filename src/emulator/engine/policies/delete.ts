// [seed] Scale-in or delete: a Terminate, with the scale set's terminateNotificationProfile as
// notice (5–15 min); without terminate notification the VM is removed at once, with no event.
// "After Terminate or Delete the VM is gone." [choice] EventSource User (the seed leaves it blank).
import { policy } from './policy.js';

export const deleteVm = policy({
  type: 'delete',
  eventType: 'Terminate',
  source: 'User',
  description: 'Virtual machine is going to be deleted as requested by authorized user.',
  durationInSeconds: -1,
  minimumNoticeMs: (members, timing) => timing.ms(Math.max(...members.map((vm) => vm.terminateNotificationMinutes ?? 0)) * 60),
  withoutNotice: (vm) => (vm.terminateNotificationMinutes === null ? 'remove' : null),
  // [choice] Deleting a VM already being deleted is refused, as a second eviction is.
  exclusiveWith: ['Terminate'],
  onImpactEnd: (vm, act) => act.remove(vm),
});
