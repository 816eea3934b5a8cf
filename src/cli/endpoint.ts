// What `events`, `approve` and `watch` share: where IMDS is, which api-version, and how the SDK's failures read.
import { DEFAULT_ENDPOINT, ImdsError, ImdsProtocolError, ImdsUnavailableError, ScheduledEventsClient } from '../client/index.js';
import { LATEST_API_VERSION } from '../protocol/versions.js';
import { CliError, UsageError, type Io } from './errors.js';

export { DEFAULT_ENDPOINT };

/**
 * [choice] How long `events` and `approve` wait in all. A VM's first call may be held for up to
 * 2 minutes while Scheduled Events is enabled; past that, retrying a silent endpoint helps no one.
 */
export const ONE_SHOT_DEADLINE_MS = 150_000;

/** For --help: the emulator serves a fleet on one port, so a VM is chosen by path prefix. */
export const ENDPOINT_HELP =
  `IMDS base URL (default ${DEFAULT_ENDPOINT}, env FOREWARN_ENDPOINT); ` +
  'for an emulator with several VMs add /vms/NAME, e.g. http://127.0.0.1:8169/vms/web-0';
export const API_VERSION_HELP = `api-version of the Scheduled Events endpoint (default ${LATEST_API_VERSION})`;

export interface EndpointFlags {
  endpoint?: string;
  apiVersion?: string;
}

export interface EndpointRequest {
  endpoint: string;
  apiVersion: string | undefined;
}

/**
 * The flag beats FOREWARN_ENDPOINT, which beats the default (SPEC §4). Only the form of
 * --api-version is checked here: IMDS's own 400 names the versions it knows better than we could.
 */
export function parseEndpointFlags(flags: EndpointFlags, env: Io['env'] = {}): EndpointRequest {
  const given = flags.endpoint ?? (env.FOREWARN_ENDPOINT || undefined) ?? DEFAULT_ENDPOINT;
  // The default is a valid URL, so a bad one came from the flag or the environment.
  const source = flags.endpoint !== undefined ? '--endpoint' : 'FOREWARN_ENDPOINT';
  const endpoint = given.trim().replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new UsageError(`${source} must be a URL such as ${DEFAULT_ENDPOINT} or http://127.0.0.1:8169/vms/vm0, got "${given}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${source} must be an http(s) URL, got "${given}"`);
  if (url.search !== '' || url.hash !== '')
    throw new UsageError(`${source} must be a base URL without ?query or #fragment, got "${given}"`);
  const apiVersion = flags.apiVersion?.trim();
  if (apiVersion !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(apiVersion)) {
    throw new UsageError(`--api-version must be a date such as 2020-07-01, got "${flags.apiVersion}"`);
  }
  return { endpoint, apiVersion };
}

/** A client for the request; anything the SDK refuses up front is the user's flags (exit 2). */
export function makeClient(request: EndpointRequest, fetchImpl?: typeof fetch): ScheduledEventsClient {
  try {
    return new ScheduledEventsClient({
      endpoint: request.endpoint,
      ...(request.apiVersion !== undefined ? { apiVersion: request.apiVersion } : {}),
      ...(fetchImpl !== undefined ? { fetch: fetchImpl } : {}),
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** One line naming the URL; never a stack. `doing` is what failed, e.g. "reading the events". */
export function clientFailure(err: unknown, endpoint: string, doing: string): CliError | UsageError {
  if (err instanceof CliError || err instanceof UsageError) return err;
  return new CliError(`${doing}: ${describeFailure(err, endpoint)}`);
}

/** What went wrong, naming the URL, in one line. */
export function describeFailure(err: unknown, endpoint: string): string {
  const e = err instanceof Error ? err : new Error(String(err));
  if (err instanceof ImdsError) {
    const versions = newestVersions(err.body);
    const hint = versions ? ` (newest api-versions: ${versions.join(', ')})` : '';
    const tries = err.attempts > 1 ? ` (after ${err.attempts} attempts)` : '';
    return `IMDS at ${endpoint} answered ${err.status}: ${err.imdsMessage || 'no message'}${hint}${tries}`;
  }
  if (err instanceof ImdsUnavailableError) {
    const tries = err.attempts > 1 ? ` after ${err.attempts} attempts` : '';
    return `cannot reach IMDS at ${endpoint}${tries}: ${networkProblem(err.cause)}`;
  }
  if (err instanceof ImdsProtocolError) return `${endpoint} did not answer like IMDS: ${e.message}`;
  return `${endpoint}: ${e.message}`;
}

/** fetch hides the socket's error behind "fetch failed"; its code says what happened. */
function networkProblem(cause: unknown): string {
  const e = cause as (Error & { cause?: { code?: string; message?: string } }) | undefined;
  if (!(e instanceof Error)) return String(cause);
  if (e.name === 'TimeoutError') return e.message;
  const code = e.cause?.code;
  const known: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'connection reset',
    ENOTFOUND: 'unknown host',
    EHOSTUNREACH: 'host unreachable',
    ENETUNREACH: 'network unreachable',
    ETIMEDOUT: 'connection timed out',
  };
  if (code !== undefined && known[code]) return known[code];
  return e.cause?.message ?? e.message;
}

function newestVersions(body: unknown): string[] | null {
  const list = (body as { 'newest-versions'?: unknown } | null | undefined)?.['newest-versions'];
  return Array.isArray(list) && list.every((v) => typeof v === 'string') ? (list as string[]) : null;
}
