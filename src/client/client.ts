// The Scheduled Events client: typed reads, approval and a watch that survives IMDS's bad answers.
import { systemNow } from './clock.js';
import { LATEST_API_VERSION } from '../protocol/versions.js';
import { EventTracker } from './diff.js';
import { ImdsError, ImdsProtocolError, ImdsUnavailableError } from './errors.js';
import { parseCompute, parseEventsDocument } from './parse.js';
import { backoffMs, resolvePolicy, retryAfterMs, sleep as defaultSleep } from './retry.js';
import type { ClientOptions, ComputeInfo, EventsDocument, Health, RetryPolicy, WatchItem, WatchOptions } from './types.js';

export const DEFAULT_ENDPOINT = 'http://169.254.169.254';
export const DEFAULT_TIMEOUT_MS = 5_000;
/** [seed] The first call may be held up to 2 min while Scheduled Events is enabled; 10 s to spare. */
export const DEFAULT_FIRST_CALL_TIMEOUT_MS = 130_000;
export const DEFAULT_INTERVAL_MS = 1_000;
export const DEFAULT_JITTER = 0.1;
/** An api-version the compute endpoint has long accepted. */
export const DEFAULT_COMPUTE_API_VERSION = '2021-02-01';

const EVENTS_PATH = '/metadata/scheduledevents';
const COMPUTE_PATH = '/metadata/instance/compute';

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

interface RequestSpec {
  method: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  body?: string;
  /** A Scheduled Events request: counts towards activation, so gets the first-call timeout until answered. */
  events: boolean;
  signal: AbortSignal | undefined;
}

class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive number of milliseconds, got ${String(value)}`);
  }
  return value;
}

function normalizeEndpoint(raw: string): string {
  const endpoint = raw.trim().replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new TypeError(`endpoint must be a URL such as ${DEFAULT_ENDPOINT}, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`endpoint must be an http(s) URL, got ${JSON.stringify(raw)}`);
  }
  if (url.search !== '' || url.hash !== '') {
    throw new TypeError(`endpoint must be a base URL without ?query or #fragment, got ${JSON.stringify(raw)}`);
  }
  return endpoint;
}

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function imdsMessageOf(body: unknown, text: string): string {
  if (typeof body === 'object' && body !== null) {
    const error = (body as { error?: unknown; message?: unknown }).error ?? (body as { message?: unknown }).message;
    if (typeof error === 'string') return error;
  }
  return text.trim();
}

// A function, so TypeScript does not narrow `aborted` across awaits.
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * A client for one VM's Scheduled Events endpoint.
 *
 * Retries follow IMDS's statuses: 410 is retried until `retry.goneForMs` after the first attempt;
 * 429 (honouring Retry-After), 5xx, network errors and timeouts are retried with exponential
 * backoff and full jitter up to `retry.maxAttempts` attempts in all; any other 4xx is raised at
 * once as ImdsError. POST approvals are retried the same way: IMDS approval is idempotent.
 *
 * IMDS must never be reached through a proxy (it answers 400 to X-Forwarded-For). Node's fetch
 * ignores HTTP_PROXY/HTTPS_PROXY unless the process opts in (NODE_USE_ENV_PROXY on newer Node),
 * and redirects are not followed, so requests go straight to the endpoint.
 */
export class ScheduledEventsClient {
  readonly endpoint: string;
  readonly apiVersion: string;
  readonly computeApiVersion: string;
  readonly retry: Readonly<RetryPolicy>;
  readonly timeoutMs: number;
  readonly firstCallTimeoutMs: number;

  readonly #fetch: typeof fetch | undefined;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #random: () => number;
  readonly #now: () => number;

  /** Set once Scheduled Events has answered at all: activation is over, normal timeouts apply. */
  #answered = false;
  #lastSuccessAt: number | null = null;
  #consecutiveFailures = 0;
  #lastError: Error | null = null;
  /** getDocument's last document, answered again on 304. */
  #cached: EventsDocument | null = null;

  constructor(options: ClientOptions = {}) {
    const fromEnv = process.env.FOREWARN_ENDPOINT;
    this.endpoint = normalizeEndpoint(options.endpoint ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : DEFAULT_ENDPOINT));
    this.apiVersion = options.apiVersion ?? LATEST_API_VERSION;
    this.computeApiVersion = options.computeApiVersion ?? DEFAULT_COMPUTE_API_VERSION;
    this.timeoutMs = positive('timeoutMs', options.timeoutMs, DEFAULT_TIMEOUT_MS);
    this.firstCallTimeoutMs = positive('firstCallTimeoutMs', options.firstCallTimeoutMs, DEFAULT_FIRST_CALL_TIMEOUT_MS);
    this.retry = Object.freeze(resolvePolicy(options.retry));
    this.#fetch = options.fetch;
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
    this.#now = options.now ?? systemNow;
  }

  get health(): Health {
    const last = this.#lastSuccessAt;
    return {
      lastSuccessAt: last === null ? null : new Date(last),
      msSinceSuccess: last === null ? null : Math.max(0, this.#now() - last),
      consecutiveFailures: this.#consecutiveFailures,
      lastError: this.#lastError,
    };
  }

  /**
   * The current document. After the first, the request carries If-None-Match and a 304 is
   * answered from the copy kept here.
   */
  async getDocument(options: { signal?: AbortSignal } = {}): Promise<EventsDocument> {
    const cached = this.#cached;
    const read = await this.#readEvents(cached?.etag ?? null, options.signal);
    if (read === null) return structuredClone(cached!);
    this.#cached = read;
    return structuredClone(read);
  }

  /** Approves events by EventId, sent exactly as given; several go in one request. An empty list sends nothing. */
  async approve(eventIds: string | readonly string[], options: { signal?: AbortSignal } = {}): Promise<void> {
    const ids = typeof eventIds === 'string' ? [eventIds] : [...eventIds];
    for (const id of ids) {
      if (typeof id !== 'string' || id.trim() === '')
        throw new TypeError(`an EventId must be a non-empty string, got ${JSON.stringify(id)}`);
    }
    if (ids.length === 0) return;
    await this.#request({
      method: 'POST',
      url: this.#url(EVENTS_PATH, this.apiVersion),
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ StartRequests: ids.map((EventId) => ({ EventId })) }),
      events: true,
      signal: options.signal,
    });
  }

  /** This VM's compute metadata, e.g. its own name to check against an event's Resources. */
  async getCompute(options: { signal?: AbortSignal } = {}): Promise<ComputeInfo> {
    const answer = await this.#request({
      method: 'GET',
      url: this.#url(COMPUTE_PATH, this.computeApiVersion),
      events: false,
      signal: options.signal,
    });
    return parseCompute(this.#json(answer));
  }

  /**
   * Polls and yields changes (see `diffDocuments` for their order). A `changes` item comes only
   * when something changed; the first document's events are all new. Errors, once a read's own
   * retries are spent, become `error` items and `onError` calls, and polling goes on with backoff;
   * nothing but the signal (or the caller's `return`) ends the iterator. An event that leaves and
   * comes back is not announced as `scheduled` twice (see `EventTracker`).
   */
  async *watch(options: WatchOptions = {}): AsyncGenerator<WatchItem, void, undefined> {
    const { signal, onError } = options;
    const intervalMs = positive('intervalMs', options.intervalMs, DEFAULT_INTERVAL_MS);
    const jitter = Math.min(1, Math.max(0, options.jitter ?? DEFAULT_JITTER));
    const emitErrors = options.emitErrors ?? true;
    const tracker = new EventTracker();
    let etag: string | null = null;
    let failures = 0;
    while (!isAborted(signal)) {
      let item: WatchItem | null = null;
      try {
        const doc = await this.#readEvents(etag, signal);
        failures = 0;
        if (doc !== null) {
          etag = doc.etag;
          const changes = tracker.apply(doc);
          if (changes.length > 0) item = { type: 'changes', incarnation: doc.incarnation, document: doc, changes };
        }
      } catch (err) {
        if (isAborted(signal)) return;
        failures += 1;
        const error = asError(err);
        try {
          onError?.(error, this.health);
        } catch {
          // A failing callback must not stop the watch it reports on.
        }
        if (emitErrors) item = { type: 'error', error, health: this.health };
      }
      if (item !== null) yield item;
      if (isAborted(signal)) return;
      // After failures the interval doubles each time, up to the larger of it and maxDelayMs.
      const base = failures === 0 ? intervalMs : Math.min(Math.max(intervalMs, this.retry.maxDelayMs), intervalMs * 2 ** (failures - 1));
      const delay = base * (1 + jitter * (2 * this.#random() - 1));
      try {
        await this.#sleep(delay, signal);
      } catch (err) {
        if (isAborted(signal)) return;
        throw err;
      }
    }
  }

  /** The URL getCompute() reads, for messages that must say where the client looked. */
  get computeUrl(): string {
    return this.#url(COMPUTE_PATH, this.computeApiVersion);
  }

  #url(path: string, apiVersion: string): string {
    return `${this.endpoint}${path}?api-version=${encodeURIComponent(apiVersion)}`;
  }

  /** One read of the document; null means 304 (unchanged since `etag`). Keeps health up to date. */
  async #readEvents(etag: string | null, signal: AbortSignal | undefined): Promise<EventsDocument | null> {
    try {
      const answer = await this.#request({
        method: 'GET',
        url: this.#url(EVENTS_PATH, this.apiVersion),
        headers: etag === null ? {} : { 'If-None-Match': etag },
        events: true,
        signal,
      });
      let doc: EventsDocument | null;
      if (answer.status === 304) {
        if (etag === null) throw new ImdsProtocolError('IMDS answered 304 Not Modified to a request without If-None-Match', answer.text);
        doc = null;
      } else {
        doc = parseEventsDocument(this.#json(answer), answer.headers.get('etag'));
      }
      this.#lastSuccessAt = this.#now();
      this.#consecutiveFailures = 0;
      this.#lastError = null;
      return doc;
    } catch (err) {
      if (signal?.aborted !== true) {
        this.#consecutiveFailures += 1;
        this.#lastError = asError(err);
      }
      throw err;
    }
  }

  #json(answer: Answer): unknown {
    if (answer.text.trim() === '') throw new ImdsProtocolError(`IMDS answered ${answer.status} with an empty body`, answer.text);
    try {
      return JSON.parse(answer.text) as unknown;
    } catch (err) {
      throw new ImdsProtocolError(`IMDS answered ${answer.status} with a body that is not JSON: ${(err as Error).message}`, answer.text);
    }
  }

  /** One call with its retries. Resolves with a 2xx or 304 answer; rejects with the typed errors. */
  async #request(spec: RequestSpec): Promise<Answer> {
    const { signal } = spec;
    const policy = this.retry;
    const firstAt = this.#now();
    let attempts = 0;
    let failures = 0; // 429, 5xx, network and timeouts share one budget
    let gone = 0;
    for (;;) {
      signal?.throwIfAborted();
      attempts += 1;
      let answer: Answer;
      try {
        answer = await this.#attempt(spec);
      } catch (err) {
        if (signal?.aborted === true) throw signal.reason;
        failures += 1;
        if (failures >= policy.maxAttempts) throw new ImdsUnavailableError(attempts, err);
        await this.#sleep(backoffMs(policy, failures, this.#random), signal);
        continue;
      }
      const { status } = answer;
      if ((status >= 200 && status < 300) || status === 304) return answer;
      const body = parseBody(answer.text);
      const fail = (): ImdsError => new ImdsError(status, imdsMessageOf(body, answer.text), body, attempts);
      let delay: number;
      if (status === 410) {
        // [imds] 410 means "retry", for up to 70 s in all from the first attempt.
        const left = firstAt + policy.goneForMs - this.#now();
        if (left <= 0) throw fail();
        gone += 1;
        delay = Math.min(backoffMs(policy, gone, this.#random), left);
      } else if (status === 429 || status >= 500) {
        failures += 1;
        if (failures >= policy.maxAttempts) throw fail();
        const hinted = status === 429 ? retryAfterMs(answer.headers.get('retry-after'), this.#now()) : undefined;
        delay = hinted ?? backoffMs(policy, failures, this.#random);
      } else {
        // 400/404/405, other 4xx and unfollowed redirects: asking again cannot help.
        throw fail();
      }
      await this.#sleep(delay, signal);
    }
  }

  /** One HTTP exchange, body included, under the per-attempt timeout. */
  async #attempt(spec: RequestSpec): Promise<Answer> {
    const timeoutMs = spec.events && !this.#answered ? this.firstCallTimeoutMs : this.timeoutMs;
    const controller = new AbortController();
    const outer = spec.signal;
    const onAbort = (): void => controller.abort(outer?.reason);
    outer?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => controller.abort(new TimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const fetchFn = this.#fetch ?? globalThis.fetch;
    try {
      const response = await fetchFn(spec.url, {
        method: spec.method,
        // [seed] Required from 2017-08-01 on; never X-Forwarded-For or any proxy header.
        headers: { Metadata: 'true', ...spec.headers },
        ...(spec.body !== undefined ? { body: spec.body } : {}),
        redirect: 'manual',
        signal: controller.signal,
      });
      const text = await response.text();
      if (spec.events) this.#answered = true;
      return { status: response.status, headers: response.headers, text };
    } catch (err) {
      if (controller.signal.aborted && outer?.aborted !== true) throw controller.signal.reason;
      throw err;
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    }
  }
}
