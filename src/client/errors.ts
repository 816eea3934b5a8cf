// The three ways a call can fail, so callers can branch on type rather than on message text.

/** IMDS answered with an error status: a 4xx that is never retried, or 410/429/5xx once retries ran out. */
export class ImdsError extends Error {
  override readonly name = 'ImdsError';
  readonly status: number;
  /** IMDS's own `error` text, or the body text, or '' when there was none. */
  readonly imdsMessage: string;
  /** The body parsed as JSON, or its text when it is not JSON, or undefined when empty. */
  readonly body: unknown;
  /** Requests made, retries included. */
  readonly attempts: number;

  constructor(status: number, imdsMessage: string, body: unknown, attempts = 1) {
    super(`IMDS answered ${status}${imdsMessage ? `: ${imdsMessage}` : ''}${attempts > 1 ? ` (after ${attempts} attempts)` : ''}`);
    this.status = status;
    this.imdsMessage = imdsMessage;
    this.body = body;
    this.attempts = attempts;
  }
}

/** No answer at all: connection errors or timeouts, after every retry. */
export class ImdsUnavailableError extends Error {
  override readonly name = 'ImdsUnavailableError';
  readonly attempts: number;
  override readonly cause: unknown;

  constructor(attempts: number, cause: unknown) {
    super(`no answer from IMDS after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${describe(cause)}`, { cause });
    this.attempts = attempts;
    this.cause = cause;
  }
}

/** An answer that is not a Scheduled Events document: bad JSON or a shape that cannot be read. */
export class ImdsProtocolError extends Error {
  override readonly name = 'ImdsProtocolError';
  /** The body as received, for logs. */
  readonly body: string;

  constructor(message: string, body: string) {
    super(message);
    this.body = body;
  }
}

function describe(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  // fetch hides the socket error behind "fetch failed"; its cause says what happened.
  const inner = cause.cause;
  const detail = inner instanceof Error ? inner.message : '';
  return detail && detail !== cause.message ? `${cause.message} (${detail})` : cause.message;
}
