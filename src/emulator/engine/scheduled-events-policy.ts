// A VM's scheduledEventsPolicy, with ARM's names (Microsoft.Compute, on a VM, scale set or
// availability set): whether its events are also published to Event Grid, and whether a
// user-initiated Reboot or Redeploy is approved automatically instead of waiting.

import type { ApiVersion } from '../../protocol/versions.js';

/** The settings ARM takes; each is optional, and absent means off. */
export interface ScheduledEventsPolicy {
  scheduledEventsAdditionalPublishingTargets?: {
    eventGridAndResourceGraph?: { enable?: boolean; scheduledEventsApiVersion?: ApiVersion };
  };
  userInitiatedReboot?: { automaticallyApprove?: boolean };
  userInitiatedRedeploy?: { automaticallyApprove?: boolean };
}

/** The settings that approve a user-initiated event of one kind. */
export type AutoApproval = 'userInitiatedReboot' | 'userInitiatedRedeploy';

export function approvesAutomatically(policy: ScheduledEventsPolicy | undefined, setting: AutoApproval): boolean {
  return policy?.[setting]?.automaticallyApprove === true;
}

/**
 * [choice] A VM's own policy over its set's, setting by setting (as tags add up): a VM that
 * declares only userInitiatedReboot keeps its set's Event Grid publishing.
 */
export function mergePolicies(
  set: ScheduledEventsPolicy | undefined,
  own: ScheduledEventsPolicy | undefined,
): ScheduledEventsPolicy | undefined {
  if (set === undefined || own === undefined) return own ?? set;
  const ownGrid = own.scheduledEventsAdditionalPublishingTargets?.eventGridAndResourceGraph;
  const setGrid = set.scheduledEventsAdditionalPublishingTargets?.eventGridAndResourceGraph;
  const grid = ownGrid === undefined || setGrid === undefined ? (ownGrid ?? setGrid) : { ...setGrid, ...ownGrid };
  return {
    ...(grid !== undefined ? { scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: grid } } : {}),
    ...((own.userInitiatedReboot ?? set.userInitiatedReboot)
      ? { userInitiatedReboot: { ...set.userInitiatedReboot, ...own.userInitiatedReboot } }
      : {}),
    ...((own.userInitiatedRedeploy ?? set.userInitiatedRedeploy)
      ? { userInitiatedRedeploy: { ...set.userInitiatedRedeploy, ...own.userInitiatedRedeploy } }
      : {}),
  };
}
