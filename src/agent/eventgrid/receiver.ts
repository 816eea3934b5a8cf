// The controller's Event Grid webhook: the subscription handshakes (Event Grid's validation event, and
// CloudEvents' OPTIONS abuse protection), an optional shared secret, and deliveries handed to the monitor,
// answered 200 only once what they carried is on disk.
import { timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import {
  DeliveryFormatError,
  EVENT_GRID_ORIGIN,
  WEBHOOK_ALLOWED_ORIGIN,
  WEBHOOK_REQUEST_ORIGIN,
  parseDelivery,
  type EventGridSchemaName,
  type ScheduledEventNotification,
  type SubscriptionValidationResponse,
} from '../../protocol/eventgrid.js';
import { formatHostPort, parseHostPort } from '../../shared/host-port.js';
import type { Logger } from '../logger.js';
import type { AgentMetrics } from '../metrics.js';
import type { Acceptance } from './monitor.js';

/** [choice] A delivery larger than this is refused with 413, which Event Grid does not retry [azure]. */
export const RECEIVER_BODY_LIMIT_BYTES = 1024 * 1024;

export interface ReceiverOptions {
  /** HOST:PORT; port 0 picks a free one. */
  listen: string;
  /** The webhook's path, e.g. `/eventgrid`. */
  path: string;
  schema: EventGridSchemaName;
  /** Required in the query string when set: `?{secretParameter}={secret}`. */
  secret: string | null;
  secretParameter: string;
  /** Takes a delivery's notifications (EventGridMonitor.accept). */
  accept: (notifications: ScheduledEventNotification[]) => Promise<Acceptance>;
  log: Logger;
  metrics: AgentMetrics;
}

export interface Receiver {
  /** The webhook's URL, the secret left out. */
  url: string;
  close(): Promise<void>;
}

function errorBody(message: string): { error: string } {
  return { error: message };
}

export async function startReceiver(options: ReceiverOptions): Promise<Receiver> {
  const app = buildReceiver(options);
  const { host, port } = parseHostPort(options.listen, 'eventGrid.listen', '0.0.0.0:8080');
  await app.listen({ host, port });
  const address = app.server.address() as AddressInfo;
  return {
    url: `http://${formatHostPort(address.address, address.port)}${options.path}`,
    close: () => app.close(),
  };
}

export function buildReceiver(options: ReceiverOptions): FastifyInstance {
  const { log, metrics, schema } = options;
  const app = Fastify({ logger: false, bodyLimit: RECEIVER_BODY_LIMIT_BYTES, forceCloseConnections: true });
  // [azure] Event Grid posts `application/json`; CloudEvents `application/cloudevents+json` or, batched, `…-batch+json`.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(/^application\/(cloudevents(-batch)?\+)?json/, { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, JSON.parse(typeof body === 'string' ? body : body.toString('utf8')) as unknown);
    } catch (err) {
      done(Object.assign(new Error(`the body is not valid JSON: ${(err as Error).message}`), { statusCode: 400 }), undefined);
    }
  });
  app.setErrorHandler((err: Error & { statusCode?: number }, _request, reply) => {
    const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) log.error({ err }, 'the Event Grid receiver failed');
    void reply.code(status).send(errorBody(status === 500 ? 'internal error' : err.message));
  });
  app.setNotFoundHandler((_request, reply) => void reply.code(404).send(errorBody(`not found; Event Grid delivers to ${options.path}`)));

  const secretOk = secretCheck(options);
  const guard = (request: FastifyRequest, reply: FastifyReply): boolean => {
    if (secretOk(request)) return true;
    // [azure] Event Grid does not retry a webhook's 401: a wrong secret is a configuration to fix, not a moment to wait out.
    log.warn({ from: request.ip }, 'an Event Grid request without the right secret: refused');
    void reply.code(401).send(errorBody(`the query parameter ${options.secretParameter} is missing or wrong`));
    return false;
  };

  // [azure] CloudEvents' abuse protection: the sender names itself in WebHook-Request-Origin; the receiver allows it.
  app.options(options.path, async (request, reply) => {
    if (!guard(request, reply)) return reply;
    const origin = request.headers[WEBHOOK_REQUEST_ORIGIN];
    if (typeof origin !== 'string' || origin === '') {
      return reply.code(400).send(errorBody(`expected the ${WEBHOOK_REQUEST_ORIGIN} header (the CloudEvents validation handshake)`));
    }
    if (origin.toLowerCase() !== EVENT_GRID_ORIGIN)
      log.info({ origin }, 'a webhook validation from an origin other than Event Grid: allowing it');
    log.info({ origin }, 'Event Grid validated the webhook (CloudEvents handshake)');
    return reply.code(200).header(WEBHOOK_ALLOWED_ORIGIN, origin).header('allow', 'POST, OPTIONS').send();
  });

  app.post(options.path, async (request, reply) => {
    if (!guard(request, reply)) return reply;
    let items;
    try {
      items = parseDelivery(request.body, schema);
    } catch (err) {
      if (!(err instanceof DeliveryFormatError)) throw err;
      // [azure] Event Grid does not retry a 400: it dead-letters (or drops) the delivery at once.
      metrics.notifications.inc({ outcome: 'malformed' });
      log.error({ problem: err.message }, `a malformed Event Grid delivery (${schema}): refused with 400`);
      return reply.code(400).send(errorBody(`not an Event Grid delivery in ${schema}: ${err.message}`));
    }
    const validation = items.find((i) => i.kind === 'validation');
    if (validation !== undefined) {
      log.info('Event Grid validated the webhook (subscription validation event)');
      const answer: SubscriptionValidationResponse = { validationResponse: validation.data.validationCode };
      return reply.code(200).send(answer);
    }
    const notifications: ScheduledEventNotification[] = [];
    for (const item of items) {
      if (item.kind === 'scheduled-event') notifications.push(item.notification);
      else if (item.kind === 'other') {
        metrics.notifications.inc({ outcome: 'ignored' });
        log.info({ type: item.type, id: item.id }, 'an Event Grid event that is not a scheduled event: ignored');
      }
    }
    if (notifications.length === 0) return reply.code(200).send();
    const taken = await options.accept(notifications);
    if (taken === 'recorded') return reply.code(200).send();
    // Event Grid retries a 503; the retry finds it on disk, or the restarted controller takes it afresh.
    const why = taken === 'not-ready' ? 'the controller is starting or stopping' : 'the journal cannot be written yet';
    log.warn({ notifications: notifications.length }, `answering an Event Grid delivery 503: ${why}; Event Grid will retry`);
    return reply.code(503).header('retry-after', '10').send(errorBody(why));
  });
  return app;
}

/** Whether a request carries the secret; always true without one. Compared in constant time. */
function secretCheck(options: Pick<ReceiverOptions, 'secret' | 'secretParameter'>): (request: FastifyRequest) => boolean {
  if (options.secret === null) return () => true;
  const want = Buffer.from(options.secret);
  return (request) => {
    const value = (request.query as Record<string, unknown> | undefined)?.[options.secretParameter];
    if (typeof value !== 'string') return false;
    const got = Buffer.from(value);
    return got.length === want.length && timingSafeEqual(got, want);
  };
}
