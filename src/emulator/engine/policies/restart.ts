// [seed] User restart: a Reboot from the user; non-persistent memory is lost, the VM stays where it is.
import { policy } from './policy.js';

export const restart = policy({
  type: 'restart',
  eventType: 'Reboot',
  source: 'User',
  description: 'Virtual machine is going to be restarted as requested by authorized user.',
  durationInSeconds: -1,
  autoApproval: 'userInitiatedReboot',
});
