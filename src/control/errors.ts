// What a control API call can fail with: the API said no, or it could not be reached.

/** The control API answered with an error status; `error` is its `{"error"}` message, `field` the request field it blames (`notBefore`, `vms[1]`), if one. */
export class ControlApiError extends Error {
  override name = 'ControlApiError';
  constructor(
    readonly status: number,
    readonly error: string,
    readonly method: string,
    readonly path: string,
    readonly field?: string,
  ) {
    super(`${method} ${path}: ${status} ${error}`);
  }
}

/** No answer: refused, unknown host, or no reply within the client's timeout. */
export class ControlConnectionError extends Error {
  override name = 'ControlConnectionError';
  constructor(
    message: string,
    readonly url: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
