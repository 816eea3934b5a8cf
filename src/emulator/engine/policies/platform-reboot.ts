// [seed] Platform reboot: routine maintenance that reboots the host; rolls one fault domain at a time over a tenant.
import { policy } from './policy.js';

export const platformReboot = policy({
  type: 'platform-reboot',
  eventType: 'Reboot',
  source: 'Platform',
  description: 'The Host server is undergoing maintenance.',
  durationInSeconds: -1,
  routine: true,
});
