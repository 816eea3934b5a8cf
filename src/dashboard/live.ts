// The page's one connection to the emulator: GET /v1/stream?include=changes, read with fetch.
// [choice] fetch rather than EventSource, because EventSource cannot send the bearer token
// and a token in the URL would end up in logs.
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { StreamTopic } from '../emulator/control/schemas.js';
import { STREAM_RETRY_AFTER_SECONDS } from '../protocol/control.js';
import type { ControlApi, ImpactEntry } from './api.js';

export type LinkState = 'connecting' | 'live' | 'reconnecting' | 'unauthorized';

export interface LiveHandlers {
  /** Connected (or reconnected): everything may have changed, so load it all. */
  onHello(now: string): void;
  onChanged(topics: readonly StreamTopic[], now: string): void;
  /** A VM's document changed; `incarnation` is absent when the VM was removed. */
  onDocument(vm: string, incarnation: number | undefined): void;
  /** Real impact did something to a VM's bound process (an `impact` frame). */
  onImpact(entry: ImpactEntry): void;
  onState(state: LinkState): void;
}

/** Waits after a failed connection: quick at first, then as long as a refused stream is told to (5 s). */
export const RETRY_DELAYS_MS = [250, 500, 1000, 2000, STREAM_RETRY_AFTER_SECONDS * 1000] as const;

/**
 * Keeps the stream open until `signal` aborts, reconnecting after every failure: an emulator
 * that restarts is picked up again by itself. A 401 stops it until the caller has a token.
 */
export async function keepLive(api: ControlApi, handlers: LiveHandlers, signal: AbortSignal): Promise<void> {
  let failures = 0;
  while (!signal.aborted) {
    handlers.onState(failures === 0 ? 'connecting' : 'reconnecting');
    try {
      const res = await fetch('/v1/stream?include=changes', {
        headers: api.headers({ accept: 'text/event-stream' }),
        cache: 'no-store',
        signal,
      });
      if (res.status === 401) {
        handlers.onState('unauthorized');
        return;
      }
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      const events = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
      for await (const message of iterate(events)) {
        const data = JSON.parse(message.data) as Record<string, unknown>;
        if (message.event === 'hello') {
          failures = 0;
          handlers.onState('live');
          handlers.onHello(String(data.now));
        } else if (message.event === 'changed') {
          handlers.onChanged(data.topics as StreamTopic[], String(data.now));
        } else if (message.event === 'document') {
          handlers.onDocument(String(data.vm), typeof data.incarnation === 'number' ? data.incarnation : undefined);
        } else if (message.event === 'impact') {
          handlers.onImpact(data as unknown as ImpactEntry);
        }
      }
      // The emulator closed the stream (it stopped): go round again.
    } catch {
      // Unreachable, or the stream broke off: the same as a close.
      if (signal.aborted) return;
    }
    handlers.onState('reconnecting');
    const delay = RETRY_DELAYS_MS[Math.min(failures, RETRY_DELAYS_MS.length - 1)]!;
    failures += 1;
    await sleep(delay, signal);
  }
}

async function* iterate<T>(stream: ReadableStream<T>): AsyncGenerator<T> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
