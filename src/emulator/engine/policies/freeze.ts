// [seed] Platform host update / live migration: a Freeze, memory kept, a few seconds of pause.
// Over a tenant it is routine maintenance and rolls one fault domain at a time.
import { policy } from './policy.js';

export const freeze = policy({
  type: 'freeze',
  eventType: 'Freeze',
  source: 'Platform',
  description: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
  durationInSeconds: 5,
  routine: true,
});
