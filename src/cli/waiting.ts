// How `events` and `approve` wait for IMDS: --timeout, and a word on stderr when the endpoint stays silent.
import type { ScheduledEventsClient } from '../client/index.js';
import { ONE_SHOT_DEADLINE_MS, clientFailure, makeClient, type EndpointRequest } from './endpoint.js';
import { CliError, UsageError, type Io } from './errors.js';

/** [choice] Say what we wait for once a request has gone this long unanswered: a live endpoint answers in milliseconds. */
export const WAITING_NOTICE_AFTER_MS = 1500;
/** [choice] The longest --timeout: a day; anything longer is a typo. */
export const MAX_TIMEOUT_SECONDS = 86_400;

export const TIMEOUT_HELP = `seconds to wait for IMDS in all, retries included (default ${ONE_SHOT_DEADLINE_MS / 1000}; the first call may be held up to 2 minutes)`;

/** --timeout SECONDS: a number above 0, up to a day; fractions allowed. */
export function parseTimeoutFlag(text: string | undefined): number {
  if (text === undefined) return ONE_SHOT_DEADLINE_MS;
  const seconds = Number(text);
  if (text.trim() === '' || !Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_TIMEOUT_SECONDS) {
    throw new UsageError(`--timeout must be a number of seconds above 0 and up to ${MAX_TIMEOUT_SECONDS}, got "${text}"`);
  }
  return Math.round(seconds * 1000);
}

export interface WaitOptions {
  endpoint: string;
  /** What is being done, for messages: "reading the events". */
  doing: string;
  timeoutMs: number;
  io: Io;
  noticeAfterMs?: number | undefined;
}

/**
 * A client whose requests are watched: the first one left unanswered for noticeAfterMs says once on
 * stderr what it waits for. An endpoint that refuses or errs answers at once and gets its own message.
 */
export function watchedClient(request: EndpointRequest, options: WaitOptions): { client: ScheduledEventsClient; stop: () => void } {
  let told = false;
  const timers = new Set<NodeJS.Timeout>();
  const tell = () => {
    if (told) return;
    told = true;
    options.io.stderr(
      `forewarn: waiting for IMDS at ${options.endpoint} (${options.doing}; up to ${formatSeconds(options.timeoutMs)}, --timeout to change); Ctrl-C to stop\n`,
    );
  };
  const watched: typeof fetch = async (input, init) => {
    const timer = setTimeout(tell, options.noticeAfterMs ?? WAITING_NOTICE_AFTER_MS);
    timers.add(timer);
    try {
      return await fetch(input, init);
    } finally {
      clearTimeout(timer);
      timers.delete(timer);
    }
  };
  return { client: makeClient(request, watched), stop: () => timers.forEach((timer) => clearTimeout(timer)) };
}

/** Runs one call under the timeout; failures become one line naming the URL. */
export async function waitForImds<T>(options: WaitOptions, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const { endpoint, doing, timeoutMs } = options;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    return await call(signal);
  } catch (err) {
    if (signal.aborted) throw new CliError(`${doing}: no answer from IMDS at ${endpoint} within ${formatSeconds(timeoutMs)}`);
    throw clientFailure(err, endpoint, doing);
  }
}

function formatSeconds(ms: number): string {
  return `${Math.round(ms) / 1000} s`;
}
