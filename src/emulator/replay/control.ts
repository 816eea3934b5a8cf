// The replay's control routes (GET /v1/replay, GET /v1/clock, POST /v1/clock/advance) under the
// control API's own rules: the request guard against other web pages and rebinding names, an
// optional bearer token, the emulator's cap on a clock advance, and its `{"error": …}` shape.
import { fastify, type FastifyInstance } from 'fastify';
import { MAX_ADVANCE_SECONDS } from '../control/schemas.js';
import { MAX_PARAM_LENGTH, onControlClientError, onControlFrameworkError } from '../control/framework-errors.js';
import { registerRequestGuard } from '../control/request-guard.js';
import { controlErrorAnswer, errorBody, HttpError } from '../http/error-map.js';
import { BODY_LIMIT_BYTES } from '../http/limits.js';
import { LATEST_TIME_MS } from '../../protocol/recording.js';
import { bearerMatcher } from '../../shared/bearer.js';
import type { Replay } from './server.js';

export interface ReplayControlOptions {
  /** Bearer token every route then requires; none means open to this machine (the guard still applies). */
  token?: string | undefined;
  /** Host names besides loopback ones the routes answer without a token (see normalizeAllowedHost). */
  allowHosts?: readonly string[] | undefined;
}

export function buildReplayControl(replay: Replay, options: ReplayControlOptions = {}): FastifyInstance {
  const app = fastify({
    logger: false,
    bodyLimit: BODY_LIMIT_BYTES,
    forceCloseConnections: true,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: onControlFrameworkError,
    clientErrorHandler: onControlClientError,
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text) as unknown);
    } catch (e) {
      done(new HttpError(400, `body is not valid JSON: ${(e as Error).message}`), undefined);
    }
  });
  app.setErrorHandler(async (error: unknown, request, reply) => {
    const answer = controlErrorAnswer(error, { contentType: request.headers['content-type'], prefer: request.headers.prefer });
    if (answer) return reply.code(answer.status).send(answer.body);
    return reply.code(500).send(errorBody('internal error in the replay'));
  });
  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send(errorBody(`no route ${request.method} ${(request.url.split('?')[0] ?? '').slice(0, 200)}`)),
  );

  // As the emulator's: with a token, the token decides; without one, only this machine's clients, not other web pages.
  const token = options.token !== undefined && options.token !== '' ? bearerMatcher(options.token) : null;
  registerRequestGuard(app, { allowHosts: options.allowHosts ?? [], tokenDecides: token === null ? undefined : () => true });
  if (token !== null) {
    app.addHook('onRequest', async (request, reply) => {
      if (token(request.headers.authorization)) return;
      reply.header('www-authenticate', 'Bearer').code(401);
      return reply.send(errorBody('missing or wrong bearer token'));
    });
  }

  app.get('/v1/replay', async () => replay.status());
  app.get('/v1/clock', async () => ({ now: new Date(replay.clock.now()).toISOString(), mode: replay.clock.mode, factor: replay.factor }));
  app.post('/v1/clock/advance', async (request) => {
    const seconds = (request.body as { seconds?: unknown } | undefined)?.seconds;
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0 || seconds > MAX_ADVANCE_SECONDS) {
      throw new HttpError(400, `seconds: expected a number of seconds from 0 to ${MAX_ADVANCE_SECONDS} (10 years)`, 'seconds');
    }
    if (replay.clock.mode !== 'manual') {
      throw new HttpError(409, 'the replay runs on the system clock; start it with --clock manual to step it');
    }
    if (replay.clock.now() + seconds * 1000 > LATEST_TIME_MS) {
      throw new HttpError(
        400,
        `seconds: would take the clock past ${new Date(LATEST_TIME_MS).toISOString()}, the last time a replay shows`,
        'seconds',
      );
    }
    replay.advance(seconds * 1000);
    return replay.status();
  });
  return app;
}
