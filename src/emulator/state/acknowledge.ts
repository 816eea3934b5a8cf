// An acknowledgement means saved: with --state, a response to a change waits until the change is on disk.
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** Resolves once every change made so far is on disk; rejects if that save failed. */
export type Durable = () => Promise<void>;

/**
 * Holds each response to a request that `changes` until `durable()` settles; all responses of
 * one event-loop turn share one fsync. If the save failed, a success becomes 503 naming the
 * file and the cause; an error response stays as it was. Without a state file nothing waits.
 */
export function acknowledgeWhenDurable(
  app: FastifyInstance,
  durable: Durable | undefined,
  changes: (request: FastifyRequest) => boolean,
  /** The 503's body in the surface's own error shape; `{"error": message}` by default. */
  failureBody: (message: string) => unknown = (message) => ({ error: message }),
): void {
  if (!durable) return;
  app.addHook('onSend', async (request, reply, payload) => {
    if (!changes(request)) return payload;
    try {
      await durable();
      return payload;
    } catch (err) {
      if (reply.statusCode >= 400) return payload;
      const body = JSON.stringify(failureBody((err as Error).message));
      reply.removeHeader('location');
      reply.code(503).header('content-type', 'application/json; charset=utf-8').header('content-length', Buffer.byteLength(body));
      return body;
    }
  });
}
