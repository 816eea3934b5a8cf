// How CLI commands talk to a running emulator's control API: one place for timeouts,
// connection problems and the API's {"error"} answers.
import { CliError, UsageError } from './errors.js';

export interface ControlCall {
  method: 'GET' | 'POST';
  /** Absolute URL of the route. */
  url: string;
  /** The control API's base URL, for messages. */
  controlUrl: string;
  body?: unknown;
  token?: string | undefined;
  timeoutMs: number;
  /** Answers the caller treats as its user's mistake (exit 2) rather than a failure (exit 1). */
  usageStatuses?: readonly number[];
}

/** Calls the route and returns its JSON; every failure is a CliError or UsageError with a clear message. */
export async function callControl(call: ControlCall, fetchImpl: typeof fetch = fetch): Promise<{ data: unknown; text: string }> {
  let response: Response;
  try {
    response = await fetchImpl(call.url, {
      method: call.method,
      headers: {
        ...(call.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(call.token !== undefined ? { authorization: `Bearer ${call.token}` } : {}),
      },
      ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
      signal: AbortSignal.timeout(call.timeoutMs),
    });
  } catch (err) {
    throw new CliError(connectionProblem(err, call.controlUrl, call.timeoutMs));
  }
  const text = await response.text();
  let data: unknown;
  try {
    data = text === '' ? undefined : JSON.parse(text);
  } catch {
    data = undefined;
  }
  if (!response.ok) {
    const message = (data as { error?: unknown } | undefined)?.error;
    const why = `the control API refused: ${response.status} ${typeof message === 'string' ? message : response.statusText || text}`;
    throw call.usageStatuses?.includes(response.status) ? new UsageError(why) : new CliError(why);
  }
  return { data, text };
}

function connectionProblem(err: unknown, controlUrl: string, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') {
    return `no answer from the control API at ${controlUrl} within ${timeoutMs / 1000} s`;
  }
  const code = e.cause?.code;
  if (code === 'ECONNREFUSED') return `cannot reach the control API at ${controlUrl}: connection refused (is \`forewarn emulator\` running?)`;
  if (code === 'ENOTFOUND') return `cannot reach the control API at ${controlUrl}: unknown host`;
  return `cannot reach the control API at ${controlUrl}: ${e.cause?.message ?? e.message}`;
}
