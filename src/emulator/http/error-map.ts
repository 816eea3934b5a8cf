// The one map from what went wrong to the HTTP answer: a status, and the body `{"error": …, "field"?: …}`.
// The control API answers every error through it; IMDS (imds/responses.ts) and scenario steps take its statuses, and IMDS keeps Azure's own body.
import { ERROR_FIELD_PREFERENCE, type ControlErrorBody } from '../../protocol/control.js';
import { EngineError, formatFieldPath, type EngineErrorCode, type FieldPath } from '../engine/errors.js';
import { BODY_LIMIT_BYTES, BODY_LIMIT_TEXT } from './limits.js';

/** Each engine error's HTTP status, on every surface. */
export const ENGINE_ERROR_STATUS: Readonly<Record<EngineErrorCode, number>> = { invalid: 400, 'not-found': 404, conflict: 409 };

/** An error a route throws on purpose: its status, message and field go to the client as they are. */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly statusCode: number,
    message: string,
    readonly field?: FieldPath,
  ) {
    super(message);
  }
}

/** What a failure the emulator did not foresee is told; the details go to its log. */
export const INTERNAL_ERROR_MESSAGE = 'internal error in the emulator; see its log';

/** The body of every control API error; `field` is written as messages write paths (`vms[0].name`). */
export function errorBody(message: string, field?: FieldPath): ControlErrorBody {
  return field === undefined ? { error: message } : { error: message, field: formatFieldPath(field) };
}

export interface ErrorAnswer {
  status: number;
  body: ControlErrorBody;
}

/** What the request says of itself that shapes its error answer. */
export interface ErrorRequest {
  contentType: string | undefined;
  /** The Prefer header(s): `error-field` adds `field` to the body. */
  prefer: string | string[] | undefined;
}

/** [choice] Whether a Prefer header (RFC 7240: comma-separated tokens, each maybe with `=value` and `;params`) asks for error fields. */
export function prefersErrorField(prefer: string | string[] | undefined): boolean {
  const headers = prefer === undefined ? [] : Array.isArray(prefer) ? prefer : [prefer];
  return headers.some((h) => h.split(',').some((p) => p.split(/[;=]/)[0]!.trim().toLowerCase() === ERROR_FIELD_PREFERENCE));
}

/**
 * The answer to an error thrown while handling a control request: ours (HttpError, EngineError) as it
 * says, fastify's body and media-type refusals reworded, any other 4xx as it comes. Null means a bug: 500.
 */
export function controlErrorAnswer(error: unknown, request: ErrorRequest): ErrorAnswer | null {
  const field = prefersErrorField(request.prefer) ? (error as { field?: FieldPath }).field : undefined;
  if (error instanceof HttpError) return { status: error.statusCode, body: errorBody(error.message, field) };
  if (error instanceof EngineError) return { status: ENGINE_ERROR_STATUS[error.code], body: errorBody(error.message, field) };
  const e = error as { code?: unknown; statusCode?: unknown; message?: unknown };
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: errorBody(`request body is larger than ${BODY_LIMIT_TEXT} (${BODY_LIMIT_BYTES} bytes)`) };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': {
      const { contentType } = request;
      const what = contentType === undefined || contentType.trim() === '' ? 'a body without a content-type' : `content-type ${contentType}`;
      return { status: 415, body: errorBody(`${what} is not accepted; send application/json`) };
    }
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { status: e.statusCode, body: errorBody(typeof e.message === 'string' ? e.message : 'bad request') };
  }
  return null;
}
