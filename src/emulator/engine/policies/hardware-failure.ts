// [seed] Host hardware failure: "the event is created already Started, as Reboot, with NotBefore ''.
// Every VM on that host gets it." [choice] EventSource Platform (the seed leaves it blank).
import { policy } from './policy.js';

export const hardwareFailure = policy({
  type: 'hardware-failure',
  eventType: 'Reboot',
  source: 'Platform',
  description: 'The Host server is undergoing emergency repair.',
  durationInSeconds: -1,
  startsAtOnce: true,
});
