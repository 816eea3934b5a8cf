// One HTTP request to a subscriber's webhook, with Event Grid's 30 s wait and the emulator's close:
// the answer's status (and, when asked, a bounded start of its body), or why there was none.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { RESPONSE_TIMEOUT_MS, type TransportFailure } from './retry.js';

export type WebhookAnswer = { status: number; headers: Headers; text: string } | { failure: TransportFailure; detail: string };

/** [choice] The most of a webhook's answer read: a validation response is a few dozen bytes. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Connections are kept and reused between deliveries, as Event Grid's are: node:http rather than fetch, whose
 * per-request cost was most of the emulator's CPU per delivery (bench/eventgrid.ts).
 */
const AGENTS = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) } as const;

function failureOf(err: unknown, closed: boolean, timedOutAfterMs: number | null): { failure: TransportFailure; detail: string } {
  if (closed) return { failure: 'Canceled', detail: 'the emulator is closing' };
  if (timedOutAfterMs !== null) return { failure: 'TimedOut', detail: `no answer within ${timedOutAfterMs / 1000} s` };
  const e = err as { code?: string; message?: string };
  const detail = e.message ?? String(err);
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return { failure: 'ResolutionError', detail };
  return { failure: 'SocketError', detail };
}

function headersOf(res: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/**
 * Sends one request and waits at most `timeoutMs` (Event Grid's 30 s) of real time ([choice] not scaled by --timing,
 * nor moved by the manual clock: it is the webhook's own speed). `closed` aborts it at once. Redirects are
 * not followed: their status is the answer.
 */
export function callWebhook(
  endpoint: string,
  init: { method: 'POST' | 'OPTIONS'; headers: Record<string, string>; body?: string },
  closed: AbortSignal,
  readBody = false,
  timeoutMs = RESPONSE_TIMEOUT_MS,
): Promise<WebhookAnswer> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch (err) {
      resolve(failureOf(err, false, null));
      return;
    }
    const secure = url.protocol === 'https:';
    const body = init.body === undefined ? undefined : Buffer.from(init.body);
    let timedOut: number | null = null;
    let settled = false;
    const settle = (answer: WebhookAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      closed.removeEventListener('abort', onClose);
      resolve(answer);
    };
    const req = (secure ? httpsRequest : httpRequest)(url, {
      method: init.method,
      headers: { ...init.headers, ...(body === undefined ? {} : { 'content-length': String(body.length) }) },
      agent: AGENTS[secure ? 'https:' : 'http:'],
    });
    const timer = setTimeout(() => {
      timedOut = timeoutMs;
      req.destroy(new Error('timed out'));
    }, timeoutMs);
    timer.unref();
    const onClose = () => req.destroy(new Error('closed'));
    if (closed.aborted) onClose();
    else closed.addEventListener('abort', onClose, { once: true });
    req.on('error', (err) => settle(failureOf(err, closed.aborted, timedOut)));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (!readBody || size >= MAX_ANSWER_BYTES) return;
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on('error', (err) => settle(failureOf(err, closed.aborted, timedOut)));
      res.on('end', () =>
        settle({
          status: res.statusCode ?? 0,
          headers: headersOf(res),
          text: Buffer.concat(chunks).toString('utf8').slice(0, MAX_ANSWER_BYTES),
        }),
      );
    });
    req.end(body);
  });
}
