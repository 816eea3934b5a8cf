// Reads server-sent events from /v1/stream, and counts the engine subscriptions behind them, for the
// control API's stream tests.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChangeListener, Engine } from '../../src/emulator/engine/engine.js';

export interface SseMessage {
  event: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any;
}

/** Reads an SSE body frame by frame; comments come back as event ':'. */
export class SseReader {
  #buffer = '';
  readonly #decoder = new TextDecoder();
  /** A read still under way when a wait ran out: the next wait takes it over, so no chunk is lost. */
  #pending: ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']> | undefined;

  constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  /** The next frame, comments included; throws when none arrives within `timeoutMs`. */
  async next(timeoutMs = 2000): Promise<SseMessage> {
    const m = await this.#next(Date.now() + timeoutMs);
    if (m === undefined) throw new Error(`no SSE frame within ${timeoutMs} ms; buffer: ${JSON.stringify(this.#buffer)}`);
    return m;
  }

  /** The next frame that is not a comment (skips keep-alives). */
  async nextEvent(timeoutMs = 2000): Promise<SseMessage> {
    for (;;) {
      const m = await this.next(timeoutMs);
      if (m.event !== ':') return m;
    }
  }

  /** The next frame of this event type, skipping any others. */
  async nextOf(event: string, timeoutMs = 2000): Promise<SseMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = await this.#next(deadline);
      if (m === undefined) throw new Error(`no '${event}' frame within ${timeoutMs} ms`);
      if (m.event === event) return m;
    }
  }

  /** Every frame that arrives within `ms` (comments left out). */
  async collect(ms: number): Promise<SseMessage[]> {
    const deadline = Date.now() + ms;
    const got: SseMessage[] = [];
    for (;;) {
      const m = await this.#next(deadline);
      if (m === undefined) return got;
      if (m.event !== ':') got.push(m);
    }
  }

  /** Every frame until none has come for `quietMs` (comments left out). */
  async settle(quietMs: number): Promise<SseMessage[]> {
    const got: SseMessage[] = [];
    for (;;) {
      const m = await this.#next(Date.now() + quietMs);
      if (m === undefined) return got;
      if (m.event !== ':') got.push(m);
    }
  }

  /** The next frame, or undefined once `deadline` (epoch ms) has passed. */
  async #next(deadline: number): Promise<SseMessage | undefined> {
    for (;;) {
      const end = this.#buffer.indexOf('\n\n');
      if (end >= 0) {
        const raw = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 2);
        return parseFrame(raw);
      }
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      this.#pending ??= this.reader.read();
      const chunk = await Promise.race([this.#pending, sleep(left, null, { ref: false })]);
      if (chunk === null) continue;
      this.#pending = undefined;
      if (chunk.done) throw new Error('stream ended');
      this.#buffer += this.#decoder.decode(chunk.value, { stream: true });
    }
  }
}

function parseFrame(raw: string): SseMessage {
  if (raw.startsWith(':')) return { event: ':', data: raw.slice(1).trim() };
  const fields = Object.fromEntries(
    raw.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]),
  );
  return { event: fields.event ?? 'message', data: JSON.parse(fields.data ?? 'null') };
}

export interface OpenStream {
  res: Response;
  sse: SseReader;
  abort: () => void;
}

/** Opens an event stream and checks it is one. */
export async function openSse(url: string, headers: Record<string, string> = {}): Promise<OpenStream> {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  assert.equal(res.status, 200, `GET ${url}: ${res.status}`);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  return { res, sse: new SseReader(res.body!.getReader()), abort: () => controller.abort() };
}

/** Counts the engine's live change subscriptions, so a test can see a stream take hold of the engine and let go. */
export function countChangeListeners(engine: Engine): () => number {
  let listeners = 0;
  const onChange = engine.onChange.bind(engine);
  engine.onChange = (listener: ChangeListener) => {
    listeners += 1;
    const off = onChange(listener);
    return () => {
      listeners -= 1;
      return off();
    };
  };
  return () => listeners;
}
