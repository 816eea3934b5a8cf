// The control API: JSON over HTTP that drives the emulator (SPEC §4).
import { bearerMatcher } from '../../shared/bearer.js';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { etagOf, ifNoneMatchHits } from '../../protocol/etag.js';
import { documentBody } from '../imds/answers.js';
import { parseEventTime } from '../../protocol/time.js';
import { checkApiVersion, LATEST_API_VERSION } from '../../protocol/versions.js';
import { isOneOf } from '../../protocol/control.js';
import type { ControlContext } from '../context.js';
import { DASHBOARD_PATHS, registerDashboard } from './dashboard.js';
import { buildOpenApiDocument, ROUTES } from './openapi.js';
import { pageQuery, statusQuery } from './page-query.js';
import { registerRequestGuard } from './request-guard.js';
import { controlErrorAnswer, errorBody, HttpError, INTERNAL_ERROR_MESSAGE } from '../http/error-map.js';
import { BODY_LIMIT_BYTES } from '../http/limits.js';
import { MAX_PARAM_LENGTH, onControlClientError, onControlFrameworkError } from './framework-errors.js';
import {
  AdvanceBody,
  ApproveBody,
  describeIssues,
  FaultBody,
  issuesField,
  OperationBody,
  VmBody,
  type OperationCreated,
  STREAM_INCLUDES,
} from './schemas.js';
import { registerScenarioRoutes } from './scenarios.js';
import { isArmRequest, registerArmRoutes, routedUrl } from './arm.js';
import { clockJson, endedJson, eventJson, fleetJson, operationJson, stepsJson, vmJson } from './presenters.js';
import { StreamHub } from './stream.js';
import { acknowledgeWhenDurable } from '../state/acknowledge.js';
import { ImpactController } from '../impact/controller.js';
import { registerImpactRoutes } from '../impact/routes.js';
import { EventGrid } from '../eventgrid/event-grid.js';
import { registerEventGridRoutes } from './eventgrid.js';

export interface ControlServerOptions {
  logger?: boolean | object;
  /** Addition: the stream's keep-alive period, so tests need not wait 15 s. */
  streamKeepAliveMs?: number;
  /** Addition: streams open at once before GET /v1/stream answers 503; DEFAULT_MAX_STREAMS by default. */
  maxStreams?: number;
  /** Addition: a stream's unsent backlog past which it is dropped; DEFAULT_STREAM_BUFFER_KIB by default. */
  streamBufferBytes?: number;
  /** Where the dashboard's built files are; dist/dashboard by default. */
  dashboardDir?: string;
  /** The most VMs one request may build (`--max-request-vms`); MAX_FLEET_VMS by default. */
  maxRequestVms?: number | undefined;
  /** Real impact on bound processes; the server makes (and closes) its own when none is given. */
  impact?: ImpactController | undefined;
  /** Event Grid delivery; the server makes (and closes) its own when none is given. */
  eventGrid?: EventGrid | undefined;
}

function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body);
  if (!result.success) throw new HttpError(400, describeIssues(result.error.issues, body), issuesField(result.error.issues));
  return result.data;
}

/**
 * Whether a request is for the dashboard's page rather than the API. A request that found a
 * route is judged by that route: the router decodes %-escapes, so /%761/fleet reaches
 * /v1/fleet and must not pass for a page. An unknown path is judged by its decoded form.
 */
function isDashboardRequest(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  if (!request.is404 && route !== undefined) return !route.startsWith('/v1/');
  const path = request.url.split('?')[0] ?? '';
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return false;
  }
  return DASHBOARD_PATHS.test(path) && DASHBOARD_PATHS.test(decoded);
}

function matcher(path: string): RegExp {
  const source = path
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

function apiVersionOf(query: unknown): unknown {
  return typeof query === 'object' && query !== null ? (query as Record<string, unknown>)['api-version'] : undefined;
}

export function buildControlServer(ctx: ControlContext, options: ControlServerOptions = {}): FastifyInstance {
  const { engine, faults, rateLimiter } = ctx;
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    // Stopping the emulator should not wait for clients' idle or half-open sockets; streams end in preClose.
    forceCloseConnections: true,
    // What fastify and Node answer by themselves gets the API's own error shape too.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    rewriteUrl: (request) => routedUrl(request.url ?? '/'),
    frameworkErrors: onControlFrameworkError,
    clientErrorHandler: onControlClientError,
    // fastify's own 503 while closing has its shape; the hook below answers instead.
    return503OnClosing: false,
  });
  let closing = false;
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    return reply.code(503).header('connection', 'close').send(errorBody('the emulator is shutting down'));
  });
  const hub = new StreamHub(engine, {
    keepAliveMs: options.streamKeepAliveMs,
    maxStreams: options.maxStreams,
    bufferLimitBytes: options.streamBufferBytes,
    // [choice] One warning per drop, with the client's address, so a stuck reader can be found.
    onDrop: (drop) => app.log.warn(drop.message),
  });
  const tokenMatches = ctx.token !== undefined && ctx.token !== '' ? bearerMatcher(ctx.token) : null;
  // [choice] Every POST and DELETE under /v1/ is answered once what changed is saved (scenario runs too, for what they changed before the answer).
  acknowledgeWhenDurable(
    app,
    ctx.durable,
    (request) => (request.method === 'POST' || request.method === 'DELETE') && request.url.startsWith('/v1/'),
  );
  const openapi = buildOpenApiDocument({ secured: tokenMatches !== null, durable: ctx.durable !== undefined });

  // Known paths, for telling 405 from 404.
  const known: { re: RegExp; methods: Set<string> }[] = [];
  // A route without a description would be silently missing from the OpenAPI document.
  const described = new Set(ROUTES.map((r) => `${r.method} ${r.path}`));
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    // The dashboard's page and assets are not part of the API.
    if (!route.url.startsWith('/v1/')) return;
    for (const m of methods) {
      if (m !== 'HEAD' && !described.has(`${m} ${route.url}`)) throw new Error(`route ${m} ${route.url} is not in openapi.ts`);
    }
    const re = matcher(route.url ?? route.path);
    const entry = known.find((k) => k.re.source === re.source);
    if (entry) for (const m of methods) entry.methods.add(m);
    else known.push({ re, methods: new Set(methods) });
  });

  // Only JSON bodies; other content types get fastify's 415, reworded below.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    // An empty body is "no body", so bodiless POSTs may still send the JSON content type.
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text) as unknown);
    } catch (e) {
      done(new HttpError(400, `body is not valid JSON: ${e instanceof Error ? e.message : String(e)}`), undefined);
    }
  });

  // Other web pages and rebinding names are refused. [choice] With a token, the token decides for the API; the page stays guarded.
  registerRequestGuard(app, {
    allowHosts: ctx.allowHosts ?? [],
    tokenDecides: tokenMatches === null ? undefined : (r) => !isDashboardRequest(r),
    ownToken: isArmRequest,
  });

  if (tokenMatches !== null) {
    app.addHook('onRequest', async (request, reply) => {
      // [choice] The dashboard's page holds no data, so it loads without the token and asks for it.
      if (isDashboardRequest(request)) return;
      if (tokenMatches(request.headers.authorization)) return;
      reply.header('www-authenticate', 'Bearer').code(401);
      return reply.send(errorBody('missing or wrong bearer token'));
    });
  }

  // The registry and the clock report their own changes, whoever made them: IMDS using a fault up, a scenario moving time.
  const offFaults = faults.onChange(() => hub.notify('faults'));
  const offClock = ctx.clock.onAdvance?.(() => hub.notify('clock'));
  const impact = options.impact ?? new ImpactController(engine);
  const offImpact = impact.onImpact((entry) => hub.impact(entry));
  app.addHook('preClose', async () => {
    closing = true;
    offFaults();
    offClock?.();
    offImpact();
    hub.closeAll();
  });
  // The emulator closes the controller it gave; one made here goes with the server.
  if (!options.impact) app.addHook('onClose', async () => impact.close());
  const eventGrid = options.eventGrid ?? new EventGrid({ engine, faults });
  if (!options.eventGrid) app.addHook('preClose', async () => eventGrid.close());

  app.setNotFoundHandler(async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '';
    const entry = known.find((k) => k.re.test(path));
    if (entry) {
      const allow = [...entry.methods].sort().join(', ');
      return reply
        .code(405)
        .header('allow', allow)
        .send(errorBody(`${request.method} is not allowed on ${path}; use ${allow}`));
    }
    return reply.code(404).send(errorBody(`no route ${request.method} ${path}`));
  });

  app.setErrorHandler(async (error: unknown, request, reply) => {
    const answer = controlErrorAnswer(error, { contentType: request.headers['content-type'], prefer: request.headers.prefer });
    if (answer) return reply.code(answer.status).send(answer.body);
    request.log.error({ err: error }, 'control API handler failed');
    return reply.code(500).send(errorBody(INTERNAL_ERROR_MESSAGE));
  });

  // ---- fleet ---------------------------------------------------------------------

  app.get('/v1/fleet', async () => fleetJson(ctx));

  app.post('/v1/vms', async (request, reply) => {
    const body = parseBody(VmBody, request.body);
    const vm = engine.addVm(body);
    return reply.code(201).send(vmJson(ctx, vm));
  });

  app.get<{ Params: { name: string } }>('/v1/vms/:name', async (request) => vmJson(ctx, engine.fleet.get(request.params.name), true));

  app.delete<{ Params: { name: string } }>('/v1/vms/:name', async (request) => {
    const spec = vmJson(ctx, engine.fleet.get(request.params.name));
    engine.removeVm(request.params.name);
    return spec;
  });

  registerImpactRoutes(app, impact);

  app.post<{ Params: { name: string } }>('/v1/vms/:name/start', async (request) => vmJson(ctx, engine.startVm(request.params.name)));

  app.get<{ Params: { name: string } }>('/v1/vms/:name/document', async (request, reply) => {
    const raw = apiVersionOf(request.query);
    const check = checkApiVersion(raw === undefined ? LATEST_API_VERSION : raw);
    if (!check.ok) return reply.code(400).send(check.body);
    const doc = engine.documentFor(request.params.name);
    reply.header('etag', etagOf(doc.incarnation));
    // As on the IMDS side: the current tag gets 304.
    const ifNoneMatch = request.headers['if-none-match'];
    if (ifNoneMatch !== undefined && ifNoneMatchHits(ifNoneMatch, doc.incarnation)) return reply.code(304).send();
    // The same bytes IMDS would send that VM, 2017-03-01's underscore rule included.
    const body = documentBody(engine, doc, check.version);
    return reply.type('application/json; charset=utf-8').send(body);
  });

  // ---- operations and events -------------------------------------------------------

  app.post('/v1/operations', async (request, reply) => {
    const body = parseBody(OperationBody, request.body);
    let notBefore: number | undefined;
    if (body.notBefore !== undefined) {
      try {
        notBefore = parseEventTime(body.notBefore) ?? undefined;
      } catch (e) {
        throw new HttpError(400, `notBefore: ${(e instanceof Error ? e.message : String(e)).replace(/^NotBefore /, '')}`, 'notBefore');
      }
      if (notBefore === undefined) throw new HttpError(400, 'notBefore: must be a time, not empty', 'notBefore');
    }
    const op = engine.createOperation({ ...body, notBefore });
    const created: OperationCreated = {
      operation: op.id,
      events: op.events,
      removedVms: op.removedVms,
      reimagedVms: op.reimagedVms,
      status: op.status,
      steps: stepsJson(op),
    };
    return reply.code(201).send(created);
  });

  app.get('/v1/operations', async (request) => {
    const page = engine.operations({ ...pageQuery(request.query), status: statusQuery(request.query) });
    return { operations: page.items.map(operationJson), next: page.next };
  });

  app.get<{ Params: { id: string } }>('/v1/operations/:id', async (request) => ({
    operation: operationJson(engine.operation(request.params.id)),
  }));

  app.get('/v1/events', async () => ({ events: engine.events().map((e) => eventJson(engine, e)) }));

  app.get('/v1/history', async (request) => {
    const page = engine.history(pageQuery(request.query));
    return { events: page.items.map(endedJson), next: page.next };
  });

  app.get<{ Params: { id: string } }>('/v1/events/:id', async (request) => ({
    event: eventJson(engine, engine.event(request.params.id)),
  }));

  // [choice] The dashboard approves through the control address, which it can reach; IMDS it cannot.
  app.post<{ Params: { id: string } }>('/v1/events/:id/approve', async (request) => {
    const { vm } = parseBody(ApproveBody, request.body);
    const { id } = request.params;
    engine.tick();
    if (engine.hasEnded(id)) throw new HttpError(409, `event ${id} has already ended`);
    // The VM's own rules: it must exist (404) and see the event (400), as on IMDS.
    engine.approve(vm, [id]);
    return { event: eventJson(engine, engine.event(id)) };
  });

  // Both end events: take the job's membership before it goes.
  app.post<{ Params: { id: string } }>('/v1/events/:id/cancel', async (request) => {
    engine.tick();
    const members = engine.jobMembers(request.params.id);
    return { event: eventJson(engine, engine.cancel(request.params.id), members) };
  });

  app.post<{ Params: { id: string } }>('/v1/events/:id/complete', async (request) => {
    engine.tick();
    const members = engine.jobMembers(request.params.id);
    return { event: eventJson(engine, engine.complete(request.params.id), members) };
  });

  // ---- clock, faults, reset ----------------------------------------------------------

  app.get('/v1/clock', async () => clockJson(ctx));

  app.post('/v1/clock/advance', async (request) => {
    const { seconds } = parseBody(AdvanceBody, request.body);
    const clock = ctx.clock as { mode: string; advance?: (ms: number) => number };
    if (clock.mode !== 'manual' || typeof clock.advance !== 'function') {
      throw new HttpError(409, 'the clock is system time; start the emulator with --clock manual to advance it');
    }
    clock.advance(seconds * 1000);
    engine.tick();
    return clockJson(ctx);
  });

  app.post('/v1/faults', async (request, reply) => {
    const body = parseBody(FaultBody, request.body);
    if (body.vm !== undefined) engine.fleet.get(body.vm);
    return reply.code(201).send({ fault: faults.add(body) });
  });

  app.get('/v1/faults', async () => ({ faults: faults.list() }));

  app.delete('/v1/faults', async () => {
    const cleared = faults.size;
    faults.clear();
    return { ok: true, cleared };
  });

  app.post('/v1/reset', async () => {
    // A run still going would act on the fresh fleet: stop it first.
    await scenarioRuns.stopAll();
    engine.reset();
    faults.clear();
    rateLimiter.reset();
    return { ok: true };
  });

  registerEventGridRoutes(app, eventGrid);

  const scenarioRuns = registerScenarioRoutes(app, ctx, (topic) => hub.notify(topic), { maxRequestVms: options.maxRequestVms });

  // ---- stream and description ----------------------------------------------------------

  app.get('/v1/stream', (request, reply) => {
    const include = (request.query as Record<string, unknown>).include;
    if (include !== undefined && !isOneOf(STREAM_INCLUDES, include)) {
      throw new HttpError(
        400,
        `include=${JSON.stringify(include)} is not known; the only value is "${STREAM_INCLUDES.join('", "')}"`,
        'include',
      );
    }
    const refused = hub.refusal();
    if (refused) return reply.code(503).header('retry-after', String(refused.retryAfterSeconds)).send(errorBody(refused.error));
    reply.hijack();
    hub.open(reply.raw, { changes: include === 'changes' });
  });

  app.get('/v1/openapi.json', async () => openapi);

  registerArmRoutes(app, ctx);

  registerDashboard(app, options.dashboardDir);

  return app;
}
