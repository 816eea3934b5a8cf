// The ARM acknowledge routes in the control API's OpenAPI description: their bodies (registered with the
// control API's own schemas) and the routes, with ARM's error shape instead of the control API's.
import { z } from 'zod';
import { ACKNOWLEDGED_VALUE, ARM_ACKNOWLEDGE_API_VERSION, ARM_ACKNOWLEDGE_API_VERSIONS, ARM_COMPUTE_TYPES } from '../../protocol/arm.js';
import type { RouteDoc } from './openapi.js';
import { registry } from './schemas.js';

export const ArmErrorResponse = z
  .object({ error: z.object({ code: z.string().meta({ examples: ['ResourceNotFound'] }), message: z.string() }) })
  .register(registry, { id: 'ArmError', description: "ARM's error body, on the ARM routes only" });

export const ScheduledEventIdList = z
  .object({ value: z.array(z.string().min(1)).min(1).meta({ description: 'Event ids (EventId), all of the named resource' }) })
  .register(registry, { id: 'ScheduledEventIdList', description: "ARM's MaintenanceScheduledEventIdList" });

export const ScheduledEventApproveResponse = z
  .object({ value: z.literal(ACKNOWLEDGED_VALUE) })
  .register(registry, { id: 'ScheduledEventApproveResponse', description: "ARM's answer to an acknowledge" });

const json = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ArmError' } } },
});

const BASE =
  '/subscriptions/:subscriptionId/resourcegroups/:resourceGroupName/providers/microsoft.compute/:resourceType/:resourceName' +
  '/providers/microsoft.maintenance/scheduledevents';

const QUERY = [
  {
    name: 'api-version',
    in: 'query',
    required: true,
    description: `The Maintenance provider's api-version; \`az maintenance scheduledevent acknowledge\` sends ${ARM_ACKNOWLEDGE_API_VERSION}`,
    schema: { type: 'string', enum: [...ARM_ACKNOWLEDGE_API_VERSIONS] },
  },
];

const RESPONSES = {
  200: {
    description: 'Approved',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ScheduledEventApproveResponse' } } },
  },
  400: json(
    'No api-version (MissingApiVersionParameter), one not served (NoRegisteredProviderFound), or a bad list body (InvalidRequestContent)',
  ),
  401: json(
    'No bearer token (AuthenticationFailed), a malformed header (AuthenticationFailedInvalidHeader), a token that is neither ' +
      "this emulator's nor its control token (InvalidAuthenticationToken), an expired one (ExpiredAuthenticationToken) or one " +
      'for another audience than ARM (InvalidAuthenticationTokenAudience)',
  ),
  404: json(
    'No such VM or scale set in that subscription and resource group, an event id never issued (or forgotten), or an event ' +
      'that names no VM of the resource (ResourceNotFound)',
  ),
  409: json('The event has already Started, Completed or been Canceled (Conflict)'),
};

const PARAMS = { resourceType: { type: 'string', enum: [...ARM_COMPUTE_TYPES] } };

const PATH_NOTE =
  'Matched without regard to case, as ARM matches (`Microsoft.Compute` and `microsoft.compute` alike); resourceType is ' +
  `${ARM_COMPUTE_TYPES.join(' or ')}. Always needs a bearer token: a managed identity token for ARM's audience from this emulator's IMDS, or the control token. `;

/** The two ARM routes: any other method or path under /subscriptions/ gets ARM's 405 or 404. */
export const ARM_ROUTES: readonly RouteDoc[] = [
  {
    method: 'POST',
    path: `${BASE}/:scheduledEventId/acknowledge`,
    operationId: 'armAcknowledgeScheduledEvent',
    summary: `ARM: approve one Scheduled event of a VM or scale set, as an IMDS POST from its VM would. ${PATH_NOTE}`,
    query: QUERY,
    params: PARAMS,
    errors: 'arm',
    responses: RESPONSES,
  },
  {
    method: 'POST',
    path: BASE,
    operationId: 'armAcknowledgeScheduledEvents',
    summary: `ARM: approve several Scheduled events of a VM or scale set; every id is checked before any is approved. ${PATH_NOTE}`,
    body: 'ScheduledEventIdList',
    query: QUERY,
    params: PARAMS,
    errors: 'arm',
    responses: RESPONSES,
  },
];
