// Scheduled events as Azure Resource Manager names them: the event's resource id, the Maintenance resource
// provider's acknowledge routes (single and list) and ARM's error body. Shared by the emulator, which serves
// the routes, and the controller, which calls them.

/** The compute resource types a scheduled event hangs under (SPEC §4). */
export const ARM_COMPUTE_TYPES = ['virtualMachines', 'virtualMachineScaleSets'] as const;
export type ArmComputeType = (typeof ARM_COMPUTE_TYPES)[number];

/** [azure] The api-version `az maintenance scheduledevent acknowledge` sends (SPEC §4). */
export const ARM_ACKNOWLEDGE_API_VERSION = '2023-10-01-preview';
/**
 * [azure] The api-versions of the Maintenance provider that carry the acknowledge routes: the single route
 * arrived in 2023-10-01-preview; the .NET SDK's list route defaults to 2025-10-01-preview.
 */
export const ARM_ACKNOWLEDGE_API_VERSIONS: readonly string[] = Object.freeze(['2023-10-01-preview', '2025-10-01-preview']);

/** [azure] What a successful acknowledge answers (`ScheduledEventApproveResponse.value`). */
export const ACKNOWLEDGED_VALUE = 'Successfully Approved';

/** The resource (VM or scale set) an event is published under, and the event. */
export interface ScheduledEventResourceId {
  subscriptionId: string;
  resourceGroup: string;
  resourceType: ArmComputeType;
  resourceName: string;
  /** Absent: the list route (`…/providers/Microsoft.Maintenance/scheduledevents`). */
  eventId?: string;
}

/** [azure] The event's ARM id, cased as Microsoft's Event Grid sample cases it. */
export function scheduledEventArmId(id: ScheduledEventResourceId & { eventId: string }): string {
  return `${parentArmId(id)}/providers/microsoft.maintenance/scheduledevents/${id.eventId}`;
}

/** The VM's or scale set's ARM id. */
export function parentArmId(id: Omit<ScheduledEventResourceId, 'eventId'>): string {
  return `/subscriptions/${id.subscriptionId}/resourceGroups/${id.resourceGroup}/providers/Microsoft.Compute/${id.resourceType}/${id.resourceName}`;
}

/** The path (no query) that acknowledges one event, or a list of them when `eventId` is absent. */
export function acknowledgePath(id: ScheduledEventResourceId): string {
  const base =
    `/subscriptions/${encodeURIComponent(id.subscriptionId)}/resourcegroups/${encodeURIComponent(id.resourceGroup)}` +
    `/providers/microsoft.compute/${id.resourceType}/${encodeURIComponent(id.resourceName)}/providers/microsoft.maintenance/scheduledevents`;
  return id.eventId === undefined ? base : `${base}/${encodeURIComponent(id.eventId)}/acknowledge`;
}

const SEGMENT = '([^/]+)';
// ARM matches path segments without regard to case; names keep theirs.
const EVENT_ID_PATTERN = new RegExp(
  `^/subscriptions/${SEGMENT}/resourcegroups/${SEGMENT}/providers/microsoft\\.compute/${SEGMENT}/${SEGMENT}` +
    `/providers/microsoft\\.maintenance/scheduledevents(?:/${SEGMENT}(/acknowledge)?)?/?$`,
  'i',
);

/**
 * Reads an event's ARM id (an Event Grid subject) or an acknowledge path. `acknowledge` says which:
 * true wants the single or list acknowledge route, false an event's id. Undefined when it is neither.
 */
export function parseScheduledEventPath(path: string, acknowledge: boolean): ScheduledEventResourceId | undefined {
  const m = EVENT_ID_PATTERN.exec(path);
  if (!m) return undefined;
  const [, subscriptionId, resourceGroup, rawType, resourceName, eventId, ack] = m as unknown as (string | undefined)[];
  const resourceType = ARM_COMPUTE_TYPES.find((t) => t.toLowerCase() === rawType!.toLowerCase());
  if (resourceType === undefined) return undefined;
  // An event id names the event; the single route ends in /acknowledge; the list route has neither.
  if (acknowledge ? eventId !== undefined && ack === undefined : eventId === undefined || ack !== undefined) return undefined;
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  const parsed: ScheduledEventResourceId = {
    subscriptionId: decode(subscriptionId!),
    resourceGroup: decode(resourceGroup!),
    resourceType,
    resourceName: decode(resourceName!),
  };
  if (eventId !== undefined) parsed.eventId = decode(eventId);
  return parsed;
}

/** [azure] ARM's error body: `{"error": {"code", "message"}}`. */
export interface ArmErrorBody {
  error: { code: string; message: string };
}

export function armError(code: string, message: string): ArmErrorBody {
  return { error: { code, message } };
}

/** The list route's body (`MaintenanceScheduledEventIdList`). */
export interface ScheduledEventIdList {
  value: string[];
}
