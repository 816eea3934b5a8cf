// IMDS error bodies and the exact messages the emulator sends with them.

export interface ImdsErrorBody {
  error: string;
  'newest-versions'?: string[];
}

export function imdsError(message: string): ImdsErrorBody {
  return { error: message };
}

export const METADATA_HEADER_MISSING = 'Bad request. Required metadata header not specified';
export const PROXY_REJECTED = 'Bad request. Requests through a proxy (X-Forwarded-For) are not allowed';
export const NOT_FOUND = 'Not found';
export const METHOD_NOT_ALLOWED = 'Method not allowed';
export const TOO_MANY_REQUESTS = 'Too many requests';
/** SPEC §1: an approval body may hold 64 KiB; a larger one gets 413. */
export const MAX_BODY_BYTES = 64 * 1024;
export const BODY_TOO_LARGE = `Request body is larger than ${MAX_BODY_BYTES} bytes`;
export const GONE = 'Gone: retry';
export const INTERNAL_ERROR = 'Internal server error: retry later';
