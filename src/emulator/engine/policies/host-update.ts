// [seed] A host update: routine maintenance, a Freeze per fault domain in turn over a tenant;
// on a host, one job that waits for every tenant there.
import { policy } from './policy.js';

export const hostUpdate = policy({
  type: 'host-update',
  eventType: 'Freeze',
  source: 'Platform',
  description: 'The Host server is undergoing maintenance.',
  durationInSeconds: 9,
  routine: true,
  // [choice] A host update holds its tenants wherever it runs, on a host too: one at a time, as
  // before rollouts of other kinds existed.
  holdsTenant: () => true,
});
