// IMDS-style answers: always JSON `{"error": "..."}`, never fastify's default error shape.
import type { ServerResponse } from 'node:http';
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
import { ENGINE_ERROR_STATUS } from '../http/error-map.js';
import type { EngineError } from '../engine/errors.js';

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

/** An engine refusal at the status every surface gives it (emulator/http/error-map.ts), in IMDS's own body: no `field`, as Azure has none. */
export function sendEngineError(reply: FastifyReply, error: EngineError): void {
  sendError(reply, ENGINE_ERROR_STATUS[error.code], error.message);
}

export function sendErrorBody(reply: FastifyReply, status: number, body: ImdsErrorBody): void {
  sendJson(reply, status, JSON.stringify(body));
}

/** sendJson for a bare node:http response (the GET fast path), with the same headers. */
export function writeJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': JSON_CONTENT_TYPE, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** sendEngineError for a bare node:http response. */
export function writeEngineError(res: ServerResponse, error: EngineError): void {
  writeJson(res, ENGINE_ERROR_STATUS[error.code], serialized(error.message));
}
