// [seed] Spot eviction: a Preempt with about 30 s of notice. "After a Preempt the Spot VM is evicted
// per its eviction policy: Delete removes it; Deallocate leaves it stopped (not running, no further
// events) until it is started again. A second eviction of a VM already being evicted gets 409."
// [choice] EventSource Platform (the seed leaves it blank).
import { policy } from './policy.js';

export const spotEviction = policy({
  type: 'spot-eviction',
  eventType: 'Preempt',
  source: 'Platform',
  description: 'Spot virtual machine is being evicted.',
  durationInSeconds: -1,
  check: (vm) => (vm.priority === 'Spot' ? null : `spot-eviction applies only to Spot VMs; '${vm.name}' is Regular`),
  exclusiveWith: ['Preempt'],
  onImpactEnd: (vm, act) => (vm.evictionPolicy === 'Delete' ? act.remove(vm) : act.deallocate(vm)),
});
