// IMDS-style answers: always JSON `{"error": "..."}`, never fastify's default error shape.
import type { FastifyReply } from 'fastify';
import {
  GONE,
  INTERNAL_ERROR,
  METADATA_HEADER_MISSING,
  METHOD_NOT_ALLOWED,
  NOT_FOUND,
  PROXY_REJECTED,
  TOO_MANY_REQUESTS,
  BODY_TOO_LARGE,
  imdsError,
  type ImdsErrorBody,
} from '../../protocol/errors.js';

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

const serialized = (message: string) => JSON.stringify(imdsError(message));

/** Bodies of the fixed errors, serialized once. */
export const ERROR_BODIES = {
  proxy: serialized(PROXY_REJECTED),
  metadataHeader: serialized(METADATA_HEADER_MISSING),
  notFound: serialized(NOT_FOUND),
  methodNotAllowed: serialized(METHOD_NOT_ALLOWED),
  tooManyRequests: serialized(TOO_MANY_REQUESTS),
  bodyTooLarge: serialized(BODY_TOO_LARGE),
  gone: serialized(GONE),
  internal: serialized(INTERNAL_ERROR),
} as const;

/** The body an injected fault status answers with. */
export const FAULT_BODIES: Readonly<Record<number, string>> = {
  410: ERROR_BODIES.gone,
  429: ERROR_BODIES.tooManyRequests,
  500: ERROR_BODIES.internal,
};

export function sendJson(reply: FastifyReply, status: number, body: string | Buffer): void {
  reply.code(status).header('content-type', JSON_CONTENT_TYPE).send(body);
}

export function sendError(reply: FastifyReply, status: number, message: string): void {
  sendJson(reply, status, serialized(message));
}

export function sendErrorBody(reply: FastifyReply, status: number, body: ImdsErrorBody): void {
  sendJson(reply, status, JSON.stringify(body));
}
