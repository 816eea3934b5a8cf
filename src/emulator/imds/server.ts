// The IMDS HTTP surface: Scheduled Events, instance metadata and managed identity tokens.
import type { Socket } from 'node:net';
import {
  fastify,
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  type HookHandlerDoneFunction,
} from 'fastify';
import { MAX_BODY_BYTES } from '../../protocol/errors.js';
import { parseStartRequests } from '../../protocol/approval.js';
import { checkApiVersion, checkInstanceApiVersion, featuresOf, type ApiVersion } from '../../protocol/versions.js';
import type { ImdsContext } from '../context.js';
import { EngineError } from '../engine/errors.js';
import type { Fault } from './faults.js';
import { answerInstance, instanceMetadata } from './instance.js';
import { checkIdentityApiVersion, IDENTITY_ERROR_BODIES, TokenIssuer } from './managed-identity.js';
import { versionsBody } from '../../protocol/instance-metadata.js';
import { acknowledgeWhenDurable } from '../state/acknowledge.js';
import { ifNoneMatchHits } from '../../protocol/etag.js';
import { Callers, type Caller } from './callers.js';
import { eventsFastPath, placeBefore } from './fast-path.js';
import { Identifier, type ImdsPath } from './identity.js';
import { activationHoldMs, holdUntil, isMetadataTrue } from './request-rules.js';
import { ERROR_BODIES, FAULT_BODIES, JSON_CONTENT_TYPE, sendEngineError, sendError, sendErrorBody, sendJson } from './responses.js';
import { pinTickObjectShape } from './tick-shape.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The VM asking, set by the IMDS guard hook. */
    imdsVm: string;
    /** What IMDS keeps for that VM, set with it. */
    imdsCaller: Caller | null;
    /** The checked api-version, set by the IMDS guard hook. */
    imdsVersion: string;
  }
}

export interface ImdsServerOptions {
  logger?: boolean | object;
  /** GET /metadata/scheduledevents on the bare node:http fast path; true by default. Off, fastify's routes answer every request (tests compare the two). */
  fastPath?: boolean;
}

const EVENTS: ImdsPath = '/metadata/scheduledevents';
const INSTANCE: ImdsPath = '/metadata/instance';
const VERSIONS: ImdsPath = '/metadata/versions';
const IDENTITY_TOKEN: ImdsPath = '/metadata/identity/oauth2/token';
const TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';

/** What each known path takes, for 405 answers to the rest. */
const KNOWN_PATHS: readonly { pattern: RegExp; allow: string; methods: ReadonlySet<string> }[] = [
  { pattern: /^(?:\/vms\/[^/]+)?\/metadata\/scheduledevents$/, allow: 'GET, POST', methods: new Set(['GET', 'POST']) },
  {
    pattern: /^(?:\/vms\/[^/]+)?\/metadata\/(?:instance(?:\/.*)?|versions|identity\/oauth2\/token\/?)$/,
    allow: 'GET',
    methods: new Set(['GET']),
  },
];

/** Longer than common clients' idle timeouts (undici 4 s), so the server is not the side that races a reuse. */
const KEEP_ALIVE_MS = 65_000;

/** VM names are at most 80 characters; this only has to be above that so long names get a useful 404. */
const MAX_PARAM_LENGTH = 1024;

type Query = Record<string, unknown>;

export function buildImdsServer(ctx: ImdsContext, options: ImdsServerOptions = {}): FastifyInstance {
  const { engine, faults, rateLimiter } = ctx;
  // Before any request: keeps every request's nextTick objects off V8's slow path (see tick-shape.ts).
  pinTickObjectShape();
  const identifier = new Identifier(engine.fleet);
  const callers = new Callers(engine, identifier, rateLimiter);
  const tokens = ctx.tokens ?? new TokenIssuer();

  const app = fastify({
    logger: (options.logger ?? false) as FastifyServerOptions['logger'],
    // No per-request log lines: this is the hot path.
    logController: new LogController({ disableRequestLogging: true }),
    keepAliveTimeout: KEEP_ALIVE_MS,
    return503OnClosing: false,
    forceCloseConnections: true,
    // HEAD is not a Scheduled Events method: it gets 405 like any other.
    exposeHeadRoutes: false,
    bodyLimit: MAX_BODY_BYTES,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: onFrameworkError,
    clientErrorHandler: onClientError,
  });

  // GET /metadata/scheduledevents in its plain form skips fastify; the routes below answer the rest.
  if (options.fastPath !== false) {
    const logError = (err: unknown) => app.log.error({ err }, 'IMDS request failed');
    placeBefore(app.server, eventsFastPath(ctx, { callers, logError }));
  }
  app.addHook('onClose', (_instance, done) => {
    callers.close();
    done();
  });

  app.decorateRequest('imdsVm', '');
  app.decorateRequest('imdsCaller', null);
  app.decorateRequest('imdsVersion', '');

  // Approvals arrive with any content type (curl -d sends a form type): keep the raw bytes.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) => {
    done(null, body);
  });

  // Unknown paths and methods are answered before any body is read.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.is404) {
      notFoundOrNotAllowed(request, reply);
      return;
    }
    done();
  });
  app.setNotFoundHandler(notFoundOrNotAllowed);
  app.setErrorHandler(onError);
  // An approval is answered once it is saved; GETs never wait.
  acknowledgeWhenDurable(app, ctx.durable, (request) => request.method === 'POST');

  // Identity, rate limit and faults, shared by both endpoints once the request itself is valid.
  function admit(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction, path: ImdsPath, version: string): void {
    const prefixName = (request.params as { name?: string }).name;
    const caller = callers.of(request.raw.socket.remoteAddress, prefixName);
    if (caller === undefined) return sendError(reply, 404, identifier.refusal(prefixName, path));
    const vm = caller.vm.name;
    if (!rateLimiter.take(caller.bucket)) return sendJson(reply, 429, ERROR_BODIES.tooManyRequests);
    request.imdsVm = vm;
    request.imdsCaller = caller;
    request.imdsVersion = version;
    const fault = faults.take(vm);
    if (fault === undefined) return done();
    if (fault.latencyMs > 0) {
      setTimeout(applyFault, fault.latencyMs, fault, request, reply, done).unref();
      return;
    }
    applyFault(fault, request, reply, done);
  }

  function eventsGuard(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const headers = request.headers;
    if (headers['x-forwarded-for'] !== undefined) return sendJson(reply, 400, ERROR_BODIES.proxy);
    const check = checkApiVersion((request.query as Query)['api-version']);
    if (!check.ok) return sendErrorBody(reply, 400, check.body);
    if (featuresOf(check.version).metadataHeaderRequired && !isMetadataTrue(headers.metadata)) {
      return sendJson(reply, 400, ERROR_BODIES.metadataHeader);
    }
    admit(request, reply, engine.activationMode === 'off' ? done : () => activate(request, done), EVENTS, check.version);
  }

  function activate(request: FastifyRequest, done: HookHandlerDoneFunction): void {
    let holdMs: number;
    try {
      holdMs = activationHoldMs(engine, request.imdsVm);
    } catch (err) {
      // After injected latency the VM may have gone meanwhile; answer 404 rather than crash the timer.
      return done(err as FastifyError);
    }
    if (holdMs <= 0) return done();
    holdUntil(engine, engine.now() + holdMs, done);
  }

  function postGuard(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    // Without a content type every body reaches the catch-all parser; an unparseable type would get 415.
    delete request.raw.headers['content-type'];
    eventsGuard(request, reply, done);
  }

  function instanceGuard(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const headers = request.headers;
    if (headers['x-forwarded-for'] !== undefined) return sendJson(reply, 400, ERROR_BODIES.proxy);
    const check = checkInstanceApiVersion((request.query as Query)['api-version']);
    if (!check.ok) return sendErrorBody(reply, 400, check.body);
    if (!isMetadataTrue(headers.metadata)) return sendJson(reply, 400, ERROR_BODIES.metadataHeader);
    const rest = (request.params as { '*'?: string })['*'];
    const at: ImdsPath = rest ? `/metadata/instance/${rest}` : INSTANCE;
    admit(request, reply, done, at, check.version);
  }

  /** [imds] /metadata/versions takes no api-version; the other rules hold as for every IMDS path. */
  function versionsGuard(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const headers = request.headers;
    if (headers['x-forwarded-for'] !== undefined) return sendJson(reply, 400, ERROR_BODIES.proxy);
    if (!isMetadataTrue(headers.metadata)) return sendJson(reply, 400, ERROR_BODIES.metadataHeader);
    admit(request, reply, done, VERSIONS, '');
  }

  function getEvents(request: FastifyRequest, reply: FastifyReply): void {
    const doc = callers.answer(request.imdsCaller!, request.imdsVersion as ApiVersion);
    reply.header('etag', doc.etag);
    const ifNoneMatch = request.headers['if-none-match'];
    if (ifNoneMatch !== undefined && ifNoneMatchHits(ifNoneMatch, doc.incarnation)) {
      reply.code(304).send();
      return;
    }
    sendJson(reply, 200, doc.body);
  }

  function postEvents(request: FastifyRequest, reply: FastifyReply): void {
    const parsed = parseStartRequests((request.body as Buffer | undefined) ?? '');
    if (!parsed.ok) return sendError(reply, 400, parsed.error);
    engine.approve(request.imdsVm, parsed.eventIds);
    reply.code(200).header('content-type', JSON_CONTENT_TYPE).send();
  }

  function getInstance(request: FastifyRequest, reply: FastifyReply): void {
    const vm = engine.fleet.get(request.imdsVm);
    const tree = instanceMetadata(vm, request.imdsVersion);
    const rest = (request.params as { '*'?: string })['*'] ?? '';
    const answer = answerInstance(tree, rest, (request.query as Query).format);
    if (answer.status !== 200) {
      return answer.error === null ? sendJson(reply, answer.status, ERROR_BODIES.notFound) : sendError(reply, answer.status, answer.error);
    }
    if (answer.contentType === 'json') return sendJson(reply, 200, answer.body);
    reply.code(200).header('content-type', TEXT_CONTENT_TYPE).send(answer.body);
  }

  /**
   * [imds] A request without `Metadata: true` gets the identity endpoint's own 400, as @azure/identity's
   * probe (no header, no query) does from Azure; [choice] so the header is checked before the api-version.
   * Token requests do not count towards enabling Scheduled Events.
   */
  function identityGuard(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const headers = request.headers;
    if (headers['x-forwarded-for'] !== undefined) return sendJson(reply, 400, ERROR_BODIES.proxy);
    if (!isMetadataTrue(headers.metadata)) return sendJson(reply, 400, IDENTITY_ERROR_BODIES.metadataHeader);
    const check = checkIdentityApiVersion((request.query as Query)['api-version']);
    if (!check.ok) return sendErrorBody(reply, 400, check.body);
    admit(request, reply, done, IDENTITY_TOKEN, check.version);
  }

  function getToken(request: FastifyRequest, reply: FastifyReply): void {
    const answer = tokens.answer(engine.fleet.get(request.imdsVm), request.query as Query);
    sendJson(reply, answer.status, answer.body);
  }

  const versions = JSON.stringify(versionsBody());
  function getVersions(_request: FastifyRequest, reply: FastifyReply): void {
    sendJson(reply, 200, versions);
  }

  for (const prefix of ['', '/vms/:name']) {
    app.get(prefix + EVENTS, { onRequest: eventsGuard }, getEvents);
    app.post(prefix + EVENTS, { onRequest: postGuard }, postEvents);
    app.get(prefix + INSTANCE, { onRequest: instanceGuard }, getInstance);
    app.get(`${prefix}${INSTANCE}/*`, { onRequest: instanceGuard }, getInstance);
    app.get(prefix + VERSIONS, { onRequest: versionsGuard }, getVersions);
    // [choice] One trailing slash is ignored, as on instance paths: msal-node adds one to the URL it builds
    // from AZURE_POD_IDENTITY_AUTHORITY_HOST (and lower-cases it: the /vms/NAME prefix needs a lower-case name).
    app.get(prefix + IDENTITY_TOKEN, { onRequest: identityGuard }, getToken);
    app.get(`${prefix}${IDENTITY_TOKEN}/`, { onRequest: identityGuard }, getToken);
  }

  return app;
}

function applyFault(fault: Fault, request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  if (fault.drop) {
    reply.hijack();
    request.raw.socket.destroy();
    return;
  }
  if (fault.status !== null) return sendJson(reply, fault.status, FAULT_BODIES[fault.status] ?? ERROR_BODIES.internal);
  done();
}

function notFoundOrNotAllowed(request: FastifyRequest, reply: FastifyReply): void {
  const url = request.raw.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  for (const known of KNOWN_PATHS) {
    if (!known.pattern.test(path)) continue;
    // An allowed method lands here only when the router could not take the VM name.
    if (known.methods.has(request.raw.method ?? '')) break;
    reply.header('allow', known.allow);
    return sendJson(reply, 405, ERROR_BODIES.methodNotAllowed);
  }
  sendJson(reply, 404, ERROR_BODIES.notFound);
}

function onError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): void {
  if (error instanceof EngineError) return sendEngineError(reply, error);
  const { code, statusCode } = error as Partial<FastifyError>;
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendJson(reply, 413, ERROR_BODIES.bodyTooLarge);
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return sendError(reply, statusCode, error.message);
  }
  request.log.error({ err: error }, 'IMDS request failed');
  sendJson(reply, 500, ERROR_BODIES.internal);
}

function onFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_BAD_URL') return sendError(reply, 400, 'Bad request. The URL is not valid');
  // A path segment far longer than any VM name: nothing can be there.
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') return sendJson(reply, 404, ERROR_BODIES.notFound);
  sendJson(reply, 500, ERROR_BODIES.internal);
}

const CLIENT_ERRORS: Readonly<Record<string, [number, string, string]>> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'Request timed out'],
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'Request headers are too large'],
};

/** Malformed HTTP never reaches fastify; answer it in the IMDS shape too. */
function onClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'Bad Request', 'Bad request'];
  if (socket.writable) {
    const body = JSON.stringify({ error: message });
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${JSON_CONTENT_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
