// One HTTP request to a subscriber's webhook, with Event Grid's 30 s wait and the emulator's close:
// the answer's status (and, when asked, a bounded start of its body), or why there was none.
import { RESPONSE_TIMEOUT_MS, type TransportFailure } from './retry.js';

export type WebhookAnswer = { status: number; headers: Headers; text: string } | { failure: TransportFailure; detail: string };

/** [choice] The most of a webhook's answer read: a validation response is a few dozen bytes. */
const MAX_ANSWER_BYTES = 64 * 1024;

async function readCapped(res: Response): Promise<string> {
  if (res.body === null) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size >= MAX_ANSWER_BYTES) {
      await reader.cancel();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, MAX_ANSWER_BYTES);
}

function failureOf(err: unknown, closed: boolean): { failure: TransportFailure; detail: string } {
  if (closed) return { failure: 'Canceled', detail: 'the emulator is closing' };
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError') return { failure: 'TimedOut', detail: `no answer within ${RESPONSE_TIMEOUT_MS / 1000} s` };
  const code = e.cause?.code ?? '';
  const detail = e.cause?.message ?? e.message ?? String(err);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { failure: 'ResolutionError', detail };
  return { failure: 'SocketError', detail };
}

/**
 * Sends one request and waits at most RESPONSE_TIMEOUT_MS of real time ([choice] not scaled by --timing,
 * nor moved by the manual clock: it is the webhook's own speed). `closed` aborts it at once.
 */
export async function callWebhook(
  endpoint: string,
  init: { method: 'POST' | 'OPTIONS'; headers: Record<string, string>; body?: string },
  closed: AbortSignal,
  readBody = false,
): Promise<WebhookAnswer> {
  const signal = AbortSignal.any([closed, AbortSignal.timeout(RESPONSE_TIMEOUT_MS)]);
  try {
    const res = await fetch(endpoint, { ...init, signal, redirect: 'manual' });
    const text = readBody ? await readCapped(res) : '';
    if (!readBody) await res.body?.cancel();
    return { status: res.status, headers: res.headers, text };
  } catch (err) {
    return failureOf(err, closed.aborted);
  }
}
