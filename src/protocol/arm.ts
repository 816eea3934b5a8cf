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

/**
 * [azure] The audiences ARM takes, in the order its InvalidAuthenticationTokenAudience message lists them
 * (quoted in Azure-Samples/active-directory-dotnetcore-daemon-v2#145 and hashicorp/go-azure-helpers#51).
 * @azure/identity asks IMDS for `https://management.azure.com` when given the scope
 * `https://management.azure.com/.default` (it drops `/.default`), the CLI for `https://management.core.windows.net/`.
 */
export const ARM_AUDIENCES: readonly string[] = Object.freeze([
  'https://management.core.windows.net/',
  'https://management.core.windows.net',
  'https://management.azure.com/',
  'https://management.azure.com',
]);

/**
 * [azure] ARM's answers to a request it cannot authenticate, each as Azure sends it: a missing header
 * (hashicorp/terraform-provider-azurerm#3612), one that is not `Bearer <token>` (Azure/azure-sdk-for-python#4124),
 * a token it cannot read (Azure/azure-powershell#27882), one for another audience, one that has expired
 * (microsoft/vscode-azureappservice#2483, with .NET's en-US times).
 */
export const ARM_AUTH_ERRORS = {
  missingHeader: () => armError('AuthenticationFailed', "Authentication failed. The 'Authorization' header is missing."),
  invalidHeader: () =>
    armError('AuthenticationFailedInvalidHeader', "Authentication failed. The 'Authorization' header is provided in an invalid format."),
  invalidToken: () => armError('InvalidAuthenticationToken', 'The access token is invalid.'),
  wrongAudience: (audience: string) =>
    armError(
      'InvalidAuthenticationTokenAudience',
      `The access token has been obtained for wrong audience or resource '${audience}'. ` +
        `It should exactly match with one of the allowed audiences ${ARM_AUDIENCES.map((a) => `'${a}'`).join(',')}.`,
    ),
  expired: (expiresAt: number, now: number) =>
    armError(
      'ExpiredAuthenticationToken',
      `The access token expiry UTC time '${dotNetUtc(expiresAt)}' is earlier than current UTC time '${dotNetUtc(now)}'.`,
    ),
} as const;

/** A time as .NET's en-US DateTime.ToString() writes it, which ARM's messages use: `5/14/2023 4:22:51 PM`. */
export function dotNetUtc(ms: number): string {
  const d = new Date(ms);
  const h = d.getUTCHours();
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${d.getUTCMonth() + 1}/${d.getUTCDate()}/${d.getUTCFullYear()} ` +
    `${h % 12 === 0 ? 12 : h % 12}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} ${h < 12 ? 'AM' : 'PM'}`
  );
}

/**
 * [azure] ARM's answers to a bad api-version: none at all (MicrosoftDocs/feedback#2279), or one the
 * resource provider does not serve (`NoRegisteredProviderFound`, as for provider routes in Azure/azure-cli#28496).
 * [choice] The Maintenance provider's scheduledevents are not tied to a region: the location is named `global`.
 */
export const ARM_API_VERSION_ERRORS = {
  missing: () => armError('MissingApiVersionParameter', 'The api-version query parameter (?api-version=) is required for all requests.'),
  unsupported: (version: string) =>
    armError(
      'NoRegisteredProviderFound',
      `No registered resource provider found for location 'global' and API version '${version}' for type 'scheduledevents'. ` +
        `The supported api-versions are '${ARM_ACKNOWLEDGE_API_VERSIONS.join(', ')}'. The supported locations are 'global'.`,
    ),
} as const;

/** [azure] ARM's 404 for a resource that does not exist (its message form, with the link it adds). */
export function armResourceNotFound(resourceType: string, name: string, resourceGroup: string) {
  return armError(
    'ResourceNotFound',
    `The Resource '${resourceType}/${name}' under resource group '${resourceGroup}' was not found. ` +
      'For more details please go to https://aka.ms/ARMResourceNotFoundFix',
  );
}

/** [azure] ARM's 405 (Azure/azure-powershell#9709). */
export function armMethodNotAllowed(method: string, url: string) {
  return armError('MethodNotAllowed', `The HTTP method '${method}' is not supported on the resource '${url}'.`);
}
