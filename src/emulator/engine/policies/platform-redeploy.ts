// [seed] Platform redeploy / healing: not routine, so it does not roll; the VM ends up on another host.
import { policy } from './policy.js';

export const platformRedeploy = policy({
  type: 'platform-redeploy',
  eventType: 'Redeploy',
  source: 'Platform',
  description: 'The Host server is undergoing emergency repair.',
  durationInSeconds: -1,
  onImpactStart: (vm, act) => act.moveToNewHost(vm),
});
