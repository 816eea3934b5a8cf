// [seed] User redeploy: "the VM moves to another node; ephemeral disks are lost", so a later
// failure of its old host no longer touches it.
import { policy } from './policy.js';

export const redeploy = policy({
  type: 'redeploy',
  eventType: 'Redeploy',
  source: 'User',
  description: 'Virtual machine is going to be redeployed as requested by authorized user.',
  durationInSeconds: -1,
  autoApproval: 'userInitiatedRedeploy',
  // [choice] The move is made when the impact begins: from then on the old host is not the VM's.
  onImpactStart: (vm, act) => act.moveToNewHost(vm),
});
