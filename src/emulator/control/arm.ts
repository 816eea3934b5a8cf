// ARM's scheduled-event acknowledge routes on the control address (SPEC §4, Event Grid and ARM), as
// `az maintenance scheduledevent acknowledge` and the SDKs call them: ARM's paths (matched without case),
// its bearer authentication, api-version rule and error body `{"error": {"code", "message"}}`.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ACKNOWLEDGED_VALUE,
  ARM_ACKNOWLEDGE_API_VERSIONS,
  ARM_API_VERSION_ERRORS,
  armError,
  armMethodNotAllowed,
  parseScheduledEventPath,
  type ArmErrorBody,
} from '../../protocol/arm.js';
import { acknowledge, ArmHttpError } from '../arm/acknowledge.js';
import { armAuthenticator } from '../arm/auth.js';
import type { ControlContext } from '../context.js';
import { EngineError } from '../engine/errors.js';
import { ENGINE_ERROR_STATUS } from '../http/error-map.js';
import { BODY_LIMIT_BYTES, BODY_LIMIT_TEXT } from '../http/limits.js';
import { acknowledgeWhenDurable } from '../state/acknowledge.js';

/** Every path under /subscriptions/ is ARM's: one route, so that ARM's paths match in any case. */
export const ARM_ROUTE = '/subscriptions/*';

/** Whether a request reached the ARM routes (by route, so a %-escaped path that routes here counts too). */
const ARM_PREFIX = /^\/subscriptions\//i;

/** The URL the router sees: ARM matches paths in any case, so a `/Subscriptions/` prefix is routed as `/subscriptions/`. */
export function routedUrl(url: string): string {
  return ARM_PREFIX.test(url) ? `/subscriptions/${url.slice('/subscriptions/'.length)}` : url;
}

export function isArmRequest(request: FastifyRequest): boolean {
  return request.routeOptions.url === ARM_ROUTE;
}

const fail = (status: number, code: string, message: string) => new ArmHttpError(status, armError(code, message));

/** [choice] What the emulator answers under /subscriptions/ besides the two routes: ARM's shape, its own words. */
const notServed = (path: string) =>
  fail(
    404,
    'NotFound',
    `The emulator serves no resource at '${path}': under /subscriptions/ it answers only POST …/providers/Microsoft.Compute/` +
      '{virtualMachines|virtualMachineScaleSets}/NAME/providers/Microsoft.Maintenance/scheduledevents[/ID/acknowledge].',
  );

/** [azure] The api-version must be one the Maintenance provider serves for these routes; [choice] compared without case. */
function checkApiVersion(query: unknown): void {
  const raw = (query as Record<string, unknown>)['api-version'];
  if (raw === undefined || raw === '') throw new ArmHttpError(400, ARM_API_VERSION_ERRORS.missing());
  const version = String(raw);
  if (!ARM_ACKNOWLEDGE_API_VERSIONS.includes(version.toLowerCase())) {
    throw new ArmHttpError(400, ARM_API_VERSION_ERRORS.unsupported(version));
  }
}

/** [azure] The list route's body, MaintenanceScheduledEventIdList: `{"value": ["<event id>", …]}`. */
function idsOfList(body: unknown): string[] {
  const value = typeof body === 'object' && body !== null ? (body as { value?: unknown }).value : undefined;
  if (!Array.isArray(value) || value.length === 0 || value.some((id) => typeof id !== 'string' || id === '')) {
    // [choice] ARM's code for a body it cannot read; the message names the field.
    throw fail(400, 'InvalidRequestContent', 'The request content was invalid: "value" must be a non-empty array of scheduled event ids.');
  }
  return value as string[];
}

/** The answer to an error on these routes, always in ARM's shape. */
function armAnswer(error: unknown): { status: number; body: ArmErrorBody } | null {
  if (error instanceof ArmHttpError) return { status: error.statusCode, body: error.body };
  if (error instanceof EngineError) {
    const status = ENGINE_ERROR_STATUS[error.code];
    return { status, body: armError(status === 400 ? 'BadRequest' : status === 404 ? 'NotFound' : 'Conflict', error.message) };
  }
  const e = error as FastifyError;
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        status: 413,
        body: armError('RequestEntityTooLarge', `The request content is larger than ${BODY_LIMIT_TEXT} (${BODY_LIMIT_BYTES} bytes).`),
      };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        status: 415,
        body: armError('UnsupportedMediaType', "The content media type is not supported. Only 'application/json' is supported."),
      };
  }
  // The control server's JSON parser refuses a body that is not JSON with a 400 of its own.
  if (e.statusCode === 400)
    return {
      status: 400,
      body: armError('InvalidRequestContent', `The request content was invalid and could not be deserialized: ${e.message}`),
    };
  return null;
}

/** Registers the single and the list acknowledge routes, and ARM's answer to anything else under /subscriptions/. */
export function registerArmRoutes(app: FastifyInstance, ctx: ControlContext): void {
  const { engine } = ctx;
  const authenticate = armAuthenticator({ tokens: ctx.tokens, controlToken: ctx.token });
  // [choice] As an IMDS approval: the 200 is sent once the approval is saved (--state); a failed save is ARM's 503.
  acknowledgeWhenDurable(
    app,
    ctx.durable,
    (request) => request.method === 'POST' && isArmRequest(request),
    (message) => armError('ServiceUnavailable', message),
  );

  app.all(
    ARM_ROUTE,
    {
      // [azure] ARM authenticates first, before the body is read: an unauthenticated caller learns nothing.
      onRequest: async (request: FastifyRequest, reply: FastifyReply) => {
        const refusal = authenticate(request.headers.authorization);
        if (refusal === undefined) return;
        return reply.code(refusal.status).header('www-authenticate', refusal.wwwAuthenticate).send(refusal.body);
      },
      errorHandler: (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
        const answer = armAnswer(error);
        if (answer) return reply.code(answer.status).send(answer.body);
        request.log.error({ err: error }, 'ARM route failed');
        return reply.code(500).send(armError('InternalServerError', 'Internal error in the emulator; see its log.'));
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const path = request.url.split('?')[0] ?? '';
      const target = parseScheduledEventPath(path, true);
      if (target === undefined) throw notServed(path);
      if (request.method !== 'POST') {
        reply.header('allow', 'POST');
        throw new ArmHttpError(405, armMethodNotAllowed(request.method, request.url));
      }
      checkApiVersion(request.query);
      const ids = target.eventId !== undefined ? [target.eventId] : idsOfList(request.body);
      acknowledge(engine, target, ids);
      return { value: ACKNOWLEDGED_VALUE };
    },
  );
}
