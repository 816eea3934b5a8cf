// Errors the HTTP framework or Node answers by itself, before any route or error handler runs:
// a malformed URL, an over-long path segment, malformed HTTP, a request while closing. Each gets
// the control API's one error shape, `{"error": "…"}`, never fastify's {statusCode, code, error, message}.
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, INTERNAL_ERROR_MESSAGE } from '../http/error-map.js';

/** Fastify's `maxParamLength`: a VM name is at most 80 characters, so a longer segment names nothing. */
export const MAX_PARAM_LENGTH = 100;

/** For fastify's `frameworkErrors` option. */
export function onControlFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const path = (request.raw.url ?? '/').split('?')[0]!;
  if (error.code === 'FST_ERR_BAD_URL') {
    void reply.code(400).send(errorBody(`the URL ${JSON.stringify(path)} is not valid: it has a malformed %-escape`));
    return;
  }
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.code(414).send(errorBody(`a segment of the path is longer than ${MAX_PARAM_LENGTH} characters; no name is that long`));
    return;
  }
  request.log.error({ err: error }, 'control API request failed in the framework');
  void reply.code(500).send(errorBody(INTERNAL_ERROR_MESSAGE));
}

const CLIENT_ERRORS: Readonly<Record<string, [number, string, string]>> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'the request was not received in time'],
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'the request headers are too large'],
};

/** For fastify's `clientErrorHandler`: malformed HTTP never reaches fastify's routes, so answer it here. */
export function onControlClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'Bad Request', 'the request is not valid HTTP'];
  if (socket.writable) {
    const body = JSON.stringify(errorBody(message));
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
