// The control API's OpenAPI 3.1 description, generated from the same zod schemas that validate requests.
import { createRequire } from 'node:module';
import { z } from 'zod';
import { API_VERSIONS, LATEST_API_VERSION } from '../../protocol/versions.js';
import { PAGE_PARAMETERS, STATUS_PARAMETER } from './page-query.js';
import { registry, STREAM_INCLUDES } from './schemas.js';
import { DEFAULT_MAX_STREAMS, DEFAULT_STREAM_BUFFER_KIB } from './stream.js';
import { MAX_FLEET_VMS } from '../fleet/file.js';
import { BODY_LIMIT_TEXT } from '../http/limits.js';
import { ARM_ROUTES } from './arm-openapi.js';

type Json = Record<string, unknown>;

/** How a route is described; `path` is in fastify form (`:name`), the document uses `{name}`. */
export interface RouteDoc {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  path: string;
  summary: string;
  /** Component id of the JSON request body, if the route takes one. */
  body?: string;
  /** Status → component id, or a ready-made OpenAPI response object. */
  responses: Record<number, string | Json>;
  query?: Json[];
  /** Schemas of path parameters that are not any string. */
  params?: Record<string, Json>;
  /** Set where the generated one would be unwieldy (the ARM routes). */
  operationId?: string;
  /** `arm`: ARM's error body on every error, and a bearer token always required (control/arm.ts). */
  errors?: 'arm';
}

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
const json = (id: string, description: string): Json => ({
  description,
  content: { 'application/json': { schema: ref(id) } },
});

/** Every route of the control API. The server test checks the server answers each one. */
/** The process routes' 403: real impact off, or (without a token) the request guard. */
const IMPACT_OFF_403 =
  'Real impact is off: the emulator started without --impact (library: impact: true, with a token). ' +
  'Without a token, also a request from another web page or to a Host name that is not allowed';

export const ROUTES: readonly RouteDoc[] = [
  { method: 'GET', path: '/v1/fleet', summary: 'VMs, tenants and hosts', responses: { 200: 'Fleet' } },
  {
    method: 'POST',
    path: '/v1/vms',
    summary: 'Add a VM',
    body: 'VmBody',
    responses: { 201: 'Vm', 400: 'Error', 409: 'Error' },
  },
  { method: 'GET', path: '/v1/vms/:name', summary: 'One VM', responses: { 200: 'Vm', 404: 'Error' } },
  {
    method: 'DELETE',
    path: '/v1/vms/:name',
    summary: 'Remove a VM at once, with no event',
    responses: { 200: 'Vm', 404: 'Error' },
  },
  {
    method: 'POST',
    path: '/v1/vms/:name/start',
    summary: 'Start a VM a Spot eviction deallocated: it runs and gets events again',
    responses: { 200: 'Vm', 404: 'Error', 409: 'Error' },
  },
  {
    method: 'PUT',
    path: '/v1/vms/:name/process',
    summary:
      'Real impact: bind the VM to a local process (a pid, a pidfile, or a command Forewarn starts and owns). ' +
      'Freeze stops it (SIGSTOP, then SIGCONT); Reboot and Redeploy terminate it and start an owned command again; Preempt, Terminate and Delete end it for good',
    body: 'ProcessBody',
    responses: {
      200: 'Process',
      400: json(
        'Error',
        'A bad body, a pid that may not be bound (pid 1, the emulator or an ancestor, no such process), or a pidfile that may not be trusted; the message says which',
      ),
      404: 'Error',
      403: json('Error', IMPACT_OFF_403),
      409: json('Error', 'The VM is not running (rebooting, deallocated, …)'),
    },
  },
  {
    method: 'GET',
    path: '/v1/vms/:name/process',
    summary: 'What the VM is bound to, and its impact log',
    responses: { 200: 'Process', 403: json('Error', IMPACT_OFF_403), 404: json('Error', 'No such VM, or it is bound to no process') },
  },
  {
    method: 'DELETE',
    path: '/v1/vms/:name/process',
    summary: 'Unbind: an owned command is terminated (SIGTERM, then SIGKILL), a process Forewarn stopped is continued',
    responses: { 200: 'Process', 403: json('Error', IMPACT_OFF_403), 404: json('Error', 'No such VM, or it is bound to no process') },
  },
  {
    method: 'GET',
    path: '/v1/vms/:name/document',
    summary: 'Exactly the Scheduled Events document that VM would get from IMDS',
    query: [
      {
        name: 'api-version',
        in: 'query',
        required: false,
        description: `Defaults to the latest, ${LATEST_API_VERSION}`,
        schema: { type: 'string', enum: [...API_VERSIONS] },
      },
    ],
    responses: {
      200: {
        description: 'The document, byte for byte as IMDS sends it',
        headers: { ETag: { description: 'The quoted DocumentIncarnation', schema: { type: 'string' } } },
        content: { 'application/json': { schema: ref('Document') } },
      },
      304: { description: 'If-None-Match named the current incarnation' },
      400: json('ImdsError', 'Invalid api-version; the body is IMDS’s own'),
      404: 'Error',
    },
  },
  {
    method: 'POST',
    path: '/v1/operations',
    summary: 'Create maintenance on VMs, a host (one job for every tenant on it) or a tenant: events, or immediate deletes and reimages',
    body: 'OperationBody',
    responses: { 201: 'OperationCreated', 400: 'Error', 404: 'Error', 409: 'Error' },
  },
  {
    method: 'GET',
    path: '/v1/operations',
    summary: 'Operations, newest first, a page at a time: every running one, and finished ones up to --history-limit',
    query: [...PAGE_PARAMETERS, STATUS_PARAMETER],
    responses: { 200: 'OperationList', 400: json('Error', 'A bad limit, before or status; the message names it') },
  },
  {
    method: 'GET',
    path: '/v1/operations/:id',
    summary: 'One operation: its status and, for a rolling host update, its steps and progress',
    responses: { 200: 'OperationEnvelope', 404: 'Error' },
  },
  { method: 'GET', path: '/v1/events', summary: 'Every live event with its internal state', responses: { 200: 'EventList' } },
  { method: 'GET', path: '/v1/events/:id', summary: 'One live event', responses: { 200: 'EventEnvelope', 404: 'Error' } },
  {
    method: 'GET',
    path: '/v1/history',
    summary:
      'Events that have ended since the last reset, as they were when they ended, the latest to end first, a page at a time; ' +
      'the emulator keeps the last --history-limit of them',
    query: [...PAGE_PARAMETERS],
    responses: { 200: 'History', 400: json('Error', 'A bad limit or before; the message names it') },
  },
  {
    method: 'POST',
    path: '/v1/events/:id/approve',
    summary:
      'Approve an event on behalf of a VM, as its POST to IMDS would: 404 for an unknown VM, 400 if it cannot see the event, 409 once the event has ended',
    body: 'ApproveBody',
    responses: { 200: 'EventEnvelope', 400: 'Error', 404: 'Error', 409: 'Error' },
  },
  {
    method: 'POST',
    path: '/v1/events/:id/cancel',
    summary: 'Cancel a Scheduled event; 409 once it has Started',
    responses: { 200: 'EventEnvelope', 404: 'Error', 409: 'Error' },
  },
  {
    method: 'POST',
    path: '/v1/events/:id/complete',
    summary: 'End a Started event now; 409 while still Scheduled',
    responses: { 200: 'EventEnvelope', 404: 'Error', 409: 'Error' },
  },
  { method: 'GET', path: '/v1/clock', summary: 'The simulated time', responses: { 200: 'Clock' } },
  {
    method: 'POST',
    path: '/v1/clock/advance',
    summary: 'Move the manual clock forward and apply what falls due',
    body: 'AdvanceBody',
    responses: { 200: 'Clock', 400: 'Error', 409: json('Error', 'The clock is system time') },
  },
  {
    method: 'POST',
    path: '/v1/faults',
    summary: 'Inject a fault into IMDS answers, or duplicate Event Grid notifications',
    body: 'FaultBody',
    responses: { 201: 'FaultEnvelope', 400: 'Error', 404: 'Error' },
  },
  { method: 'GET', path: '/v1/faults', summary: 'Pending faults', responses: { 200: 'FaultList' } },
  { method: 'DELETE', path: '/v1/faults', summary: 'Clear every fault', responses: { 200: 'Cleared' } },
  {
    method: 'POST',
    path: '/v1/reset',
    summary: 'Back to the start state: initial fleet, no events, no faults, fresh rate limits',
    responses: { 200: 'Ok' },
  },
  {
    method: 'POST',
    path: '/v1/scenarios',
    summary: "Run a scenario (a built-in by name, or inline) on the emulator's clock; it replaces the fleet",
    body: 'ScenarioBody',
    responses: {
      200: json('ScenarioRun', 'Manual clock: the whole run, with its report'),
      202: json('ScenarioRun', 'System clock: started; its report is at GET /v1/scenarios/{id}'),
      400: 'Error',
      404: 'Error',
      409: json('Error', "timing differs from the emulator's"),
      413: json(
        'Error',
        `Body larger than ${BODY_LIMIT_TEXT}, or a fleet of more VMs than one request may build (--max-request-vms, ${MAX_FLEET_VMS} by default)`,
      ),
    },
  },
  { method: 'GET', path: '/v1/scenarios', summary: 'The built-in scenarios', responses: { 200: 'ScenarioList' } },
  {
    method: 'GET',
    path: '/v1/scenarios/:id',
    summary: 'A scenario run and its report so far',
    responses: { 200: 'ScenarioRun', 404: 'Error' },
  },
  {
    method: 'POST',
    path: '/v1/scenarios/:id/cancel',
    summary: 'Stop a running scenario between steps; what it did stays. POST /v1/reset stops every run too',
    responses: {
      200: json('ScenarioRun', 'The run, now aborted, with its report'),
      404: 'Error',
      409: json('Error', 'The run has already ended'),
    },
  },
  {
    method: 'GET',
    path: '/v1/stream',
    summary: 'Server-sent events: every change of every document, and with include=changes every change of state',
    query: [
      {
        name: 'include',
        in: 'query',
        required: false,
        description: '`changes` adds a `changed` event (data: StreamChanged) after each burst of changes of any kind',
        schema: { type: 'string', enum: [...STREAM_INCLUDES] },
      },
    ],
    responses: {
      200: {
        description:
          'An event stream. `hello` (data: StreamHello) on connect; `document` (data: StreamDocument) per changed VM; ' +
          'with include=changes, `changed` (data: StreamChanged); `impact` (data: ImpactEntry) when real impact signals or starts a bound process; ' +
          'a `: keep-alive` comment every 15 s. ' +
          `A client that stops reading is reset once more than ${DEFAULT_STREAM_BUFFER_KIB} KiB (--stream-buffer-kib) wait unsent for it; ` +
          'reconnect, and treat the new `hello` as "fetch everything afresh".',
        content: { 'text/event-stream': { schema: { type: 'string' } } },
      },
      503: {
        description: `${DEFAULT_MAX_STREAMS} streams (--max-streams) are already open`,
        headers: { 'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' } } },
        content: { 'application/json': { schema: ref('Error') } },
      },
    },
  },
  {
    method: 'POST',
    path: '/v1/eventgrid/subscriptions',
    summary:
      "Subscribe a webhook to every status change of the events of VMs whose scheduledEventsPolicy publishes to Event Grid, after Event Grid's validation handshake",
    body: 'EventGridSubscriptionBody',
    responses: {
      201: 'EventGridSubscriptionEnvelope',
      400: json('Error', 'A bad body, or a webhook that failed the validation handshake; the message says why'),
    },
  },
  {
    method: 'GET',
    path: '/v1/eventgrid/subscriptions',
    summary: 'Every Event Grid subscription',
    responses: { 200: 'EventGridSubscriptionList' },
  },
  {
    method: 'GET',
    path: '/v1/eventgrid/subscriptions/:id',
    summary: 'One subscription, with its delivery counts',
    responses: { 200: 'EventGridSubscriptionEnvelope', 404: 'Error' },
  },
  {
    method: 'DELETE',
    path: '/v1/eventgrid/subscriptions/:id',
    summary: 'Delete a subscription; what it had not delivered is dropped',
    responses: { 200: 'EventGridSubscriptionEnvelope', 404: 'Error' },
  },
  {
    method: 'GET',
    path: '/v1/eventgrid/subscriptions/:id/deadletters',
    summary: "The events a subscription dead-lettered, with Event Grid's dead-letter properties",
    responses: { 200: 'EventGridDeadLetterList', 404: 'Error' },
  },
  {
    method: 'GET',
    path: '/v1/openapi.json',
    summary: 'This document',
    responses: { 200: { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } } },
  },
  ...ARM_ROUTES,
];

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  400: 'Bad request: the message names the field (and so does `field`, with `Prefer: error-field`)',
  401: 'Missing or wrong bearer token',
  403: 'Sent by another web page (Origin, Sec-Fetch-Site) or to a Host name that is neither loopback nor allowed (--allow-host); the message says which',
  404: 'Unknown VM, host, tenant, event, subscription or route',
  405: 'The path does not take this method',
  409: 'Conflicts with the current state',
  413: `Body larger than ${BODY_LIMIT_TEXT}`,
  415: 'Body is not application/json',
  503: 'The change was made in memory but could not be saved to the state file (--state); the message names the file and the cause',
};

function toOpenApiPath(path: string): string {
  return path.replace(/:([A-Za-z_]\w*)/g, '{$1}');
}

function componentSchemas(): Record<string, Json> {
  const { schemas } = z.toJSONSchema(registry, {
    io: 'input',
    uri: (id) => `#/components/schemas/${id}`,
    // z.int() states the safe-integer range on every integer; say it once, not everywhere.
    override: ({ jsonSchema }) => {
      if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
      if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
    },
  }) as {
    schemas: Record<string, Json>;
  };
  // OpenAPI 3.1's default dialect is 2020-12 already; the per-schema $schema and $id only add noise.
  return Object.fromEntries(
    Object.entries(schemas).map(([id, s]) => {
      const { $schema: _schema, $id: _id, ...rest } = s;
      return [id, rest];
    }),
  );
}

function operation(route: RouteDoc, secured: boolean, durable: boolean): Json {
  const arm = route.errors === 'arm';
  const errorId = arm ? 'ArmError' : 'Error';
  const responses: Record<string, Json> = {};
  for (const [status, r] of Object.entries(route.responses)) {
    responses[status] = typeof r === 'string' ? json(r, STATUS_TEXT[Number(status)] ?? 'Response') : r;
  }
  if (route.body !== undefined) {
    responses['400'] ??= json(errorId, STATUS_TEXT[400]!);
    // A route may say more (POST /v1/scenarios: the fleet size limit too).
    responses['413'] ??= json(errorId, STATUS_TEXT[413]!);
    responses['415'] = json(errorId, STATUS_TEXT[415]!);
  }
  // With a state file a change is answered once saved; a failed save turns its success into 503.
  if (durable && (route.method === 'POST' || route.method === 'DELETE')) responses['503'] ??= json(errorId, STATUS_TEXT[503]!);
  // The ARM routes always take a token of their own (their 401 is in their responses), so the guard never answers them.
  if (arm) responses['401'] ??= json(errorId, STATUS_TEXT[401]!);
  else if (secured) responses['401'] = json('Error', STATUS_TEXT[401]!);
  // Without a token the request guard answers instead; with one, the token decides. A route's own 403 says both.
  else responses['403'] ??= json('Error', STATUS_TEXT[403]!);
  const params = [...route.path.matchAll(/:([A-Za-z_]\w*)/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: route.params?.[m[1]!] ?? { type: 'string' },
  }));
  const parameters = [...params, ...(route.query ?? [])];
  return {
    summary: route.summary,
    operationId:
      route.operationId ??
      `${route.method.toLowerCase()}${toOpenApiPath(route.path)
        .replace(/[{}]/g, '')
        .split(/[/.-]/)
        .filter((s) => s !== '' && s !== 'v1')
        .map((s) => s[0]!.toUpperCase() + s.slice(1))
        .join('')}`,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body !== undefined ? { requestBody: { required: true, content: { 'application/json': { schema: ref(route.body) } } } } : {}),
    responses,
    ...(arm ? { security: [{ bearer: [] }] } : {}),
  };
}

function packageVersion(): string {
  try {
    // Same relative path from src/ and dist/.
    const pkg = createRequire(import.meta.url)('../../../package.json') as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Builds the document; `secured` adds the bearer requirement when the server has a token, `durable` the 503 of a failed save. */
export function buildOpenApiDocument(options: { secured?: boolean; durable?: boolean } = {}): Json {
  const secured = options.secured ?? false;
  const durable = options.durable ?? false;
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of ROUTES) {
    const p = (paths[toOpenApiPath(route.path)] ??= {});
    p[route.method.toLowerCase()] = operation(route, secured, durable);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'forewarn emulator control API',
      version: packageVersion(),
      description:
        'Drives the local Scheduled Events emulator: fleet, maintenance operations, events, clock, faults. ' +
        'Every error is {"error": "..."}; a request sent with `Prefer: error-field` also gets "field" when one request field or query parameter ' +
        'is at fault (a path such as "notBefore", "vms[1]" or "scenario.steps[2].at"). An unknown route gets 404 and a known path with the wrong method 405. ' +
        "Without a token, a request sent by another web page (an Origin other than the API's own, or Sec-Fetch-Site cross-site or same-site) " +
        'or to a Host name that is neither loopback nor allowed with --allow-host gets 403; with a token, the token decides. ' +
        'The ARM routes under /subscriptions/ are the exception: they answer as Azure Resource Manager does, errors as ' +
        '{"error": {"code": "...", "message": "..."}}, and always need a bearer token.',
    },
    paths,
    components: {
      schemas: componentSchemas(),
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
    ...(secured ? { security: [{ bearer: [] }] } : {}),
  };
}
