// GET /v1/stream: server-sent events carrying every document change, and on request every change of state.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { clearImmediate, clearInterval, setImmediate, setInterval } from 'node:timers';
import { formatIso } from '../../protocol/time.js';
import { renderDocument } from '../../protocol/render.js';
import { LATEST_API_VERSION } from '../../protocol/versions.js';
import { STREAM_RETRY_AFTER_SECONDS } from '../../protocol/control.js';
import type { Engine } from '../engine/engine.js';
import type { StreamTopic } from './schemas.js';
import type { ImpactEntry } from '../impact/log.js';

/** [choice] Proxies and idle timeouts drop a silent stream; a comment every 15 s keeps it open. */
export const KEEP_ALIVE_MS = 15_000;

/** [choice] Streams open at once; past it GET /v1/stream answers 503 (`--max-streams`). */
export const DEFAULT_MAX_STREAMS = 64;
export const MAX_STREAMS_RANGE = { min: 1, max: 10_000 } as const;

/**
 * [choice] Bytes a stream may have waiting in the emulator, beyond what the kernel holds, before
 * it is dropped (`--stream-buffer-kib`). A reader that keeps up never comes near it; one that
 * stopped reading would otherwise keep every frame in memory.
 */
export const DEFAULT_STREAM_BUFFER_KIB = 1024;
export const STREAM_BUFFER_KIB_RANGE = { min: 16, max: 1024 * 1024 } as const;

// What a refused stream is told to wait is the control contract's (the dashboard waits as long).
export { STREAM_RETRY_AFTER_SECONDS };

export interface StreamOptions {
  keepAliveMs?: number | undefined;
  maxStreams?: number | undefined;
  bufferLimitBytes?: number | undefined;
  /** Told of each stream dropped for falling behind, e.g. to log it. */
  onDrop?: ((drop: StreamDrop) => void) | undefined;
}

export interface StreamDrop {
  /** `host:port` of the client, as it was when the stream opened. */
  peer: string;
  bufferedBytes: number;
  limitBytes: number;
  /** A line for the log. */
  message: string;
}

const sizeText = (bytes: number) => (bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`);

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function peerOf(socket: Socket | null): string {
  const host = socket?.remoteAddress ?? 'unknown';
  return `${host.includes(':') ? `[${host}]` : host}:${socket?.remotePort ?? '?'}`;
}

export interface OpenOptions {
  /** Adds `changed` frames: one per burst of changes, naming what changed, so a view knows what to fetch again. */
  changes?: boolean;
}

/** Owns the open streams so that closing the server can end them. */
export class StreamHub {
  readonly #closers = new Set<() => void>();
  readonly #changeListeners = new Set<(topic: StreamTopic) => void>();
  readonly #impactSenders = new Set<(text: string) => void>();
  /** The last document frame of each VM: rendered once, whichever streams send it. */
  readonly #frames = new Map<string, { incarnation: number; text: string }>();
  readonly #maxStreams: number;
  readonly #bufferLimit: number;
  #dropped = 0;

  constructor(
    private readonly engine: Engine,
    private readonly options: StreamOptions = {},
  ) {
    this.#maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
    this.#bufferLimit = options.bufferLimitBytes ?? DEFAULT_STREAM_BUFFER_KIB * 1024;
  }

  get size(): number {
    return this.#closers.size;
  }

  /** Streams dropped so far for letting their backlog pass the limit. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Why a new stream cannot open now (every place is taken), or undefined when it can. */
  refusal(): { error: string; retryAfterSeconds: number } | undefined {
    if (this.size < this.#maxStreams) return undefined;
    return {
      error: `${this.#maxStreams} streams are open, the most allowed (--max-streams); retry after ${STREAM_RETRY_AFTER_SECONDS} s`,
      retryAfterSeconds: STREAM_RETRY_AFTER_SECONDS,
    };
  }

  /** Tells `changes` streams about a change outside the engine (the clock, faults, scenario runs). */
  notify(topic: StreamTopic): void {
    for (const listener of this.#changeListeners) listener(topic);
  }

  /** Tells every stream what real impact did to a bound process: an `impact` frame. */
  impact(entry: ImpactEntry): void {
    if (this.#impactSenders.size === 0) return;
    const text = frame('impact', entry);
    for (const send of this.#impactSenders) send(text);
  }

  /** The frame for a VM's document at `incarnation`, its current one. */
  #documentFrame(name: string, incarnation: number): { incarnation: number; text: string } {
    const cached = this.#frames.get(name);
    if (cached?.incarnation === incarnation) return cached;
    const doc = this.engine.documentFor(name);
    const document = renderDocument(doc.incarnation, doc.events, LATEST_API_VERSION);
    const rendered = { incarnation: doc.incarnation, text: frame('document', { vm: name, incarnation: doc.incarnation, document }) };
    this.#frames.set(name, rendered);
    return rendered;
  }

  /** Takes over a hijacked response until the client goes away, falls too far behind, or closeAll() runs. */
  open(res: ServerResponse, options: OpenOptions = {}): void {
    const engine = this.engine;
    const limit = this.#bufferLimit;
    const peer = peerOf(res.socket);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });

    const sent = new Map<string, number>();
    const removed = new Set<string>();
    let closed = false;

    // writableLength is what the kernel has not taken yet: it grows only while the client does not read.
    const send = (text: string) => {
      if (closed) return;
      res.write(text);
      if (res.writableLength > limit) drop();
    };
    /**
     * [choice] No final `gap` frame: it would queue behind the backlog the client is not reading.
     * The reset itself is the signal; a client reconnects, and its `hello` means "fetch afresh".
     */
    const drop = () => {
      const bufferedBytes = res.writableLength;
      close(false);
      this.#dropped += 1;
      // A reset frees the kernel's buffers too, rather than waiting for a reader that is gone.
      if (res.socket && typeof res.socket.resetAndDestroy === 'function') res.socket.resetAndDestroy();
      else res.destroy();
      this.options.onDrop?.({
        peer,
        bufferedBytes,
        limitBytes: limit,
        message: `stream to ${peer} dropped: it stopped reading and its backlog passed ${sizeText(limit)} (--stream-buffer-kib)`,
      });
    };

    // Read synchronously: mid-tick the engine does not tick again, so each transition shows in turn.
    const unsubscribe = engine.onChange((vms) => {
      for (const name of vms) {
        if (closed) return;
        if (!engine.fleet.vms.has(name)) {
          if (removed.has(name)) continue;
          removed.add(name);
          sent.delete(name);
          this.#frames.delete(name);
          send(frame('document', { vm: name, removed: true }));
          continue;
        }
        removed.delete(name);
        // Outside a tick, incarnationOf may tick and notify (nested) first; never send an older document after a newer one.
        const incarnation = engine.incarnationOf(name);
        if (closed) return;
        if (incarnation <= (sent.get(name) ?? -Infinity)) continue;
        const next = this.#documentFrame(name, incarnation);
        sent.set(name, next.incarnation);
        send(next.text);
      }
    });
    // A scenario on the manual clock makes hundreds of changes in one go: they leave as one frame.
    const pending = new Set<StreamTopic>();
    let flush: NodeJS.Immediate | undefined;
    const onTopic = (topic: StreamTopic) => {
      pending.add(topic);
      flush ??= setImmediate(() => {
        flush = undefined;
        if (closed) return;
        send(frame('changed', { now: formatIso(engine.now()), topics: [...pending].sort() }));
        pending.clear();
      });
    };
    const onMutation = () => onTopic('engine');
    const unsubscribeMutations = options.changes ? engine.onMutation(onMutation) : () => false;
    if (options.changes) this.#changeListeners.add(onTopic);
    this.#impactSenders.add(send);

    const keepAlive = setInterval(() => send(': keep-alive\n\n'), this.options.keepAliveMs ?? KEEP_ALIVE_MS);
    keepAlive.unref();

    /** `end`: finish the response politely; a dropped stream is destroyed by its caller instead. */
    const close = (end = true) => {
      if (closed) return;
      closed = true;
      unsubscribe();
      unsubscribeMutations();
      this.#changeListeners.delete(onTopic);
      this.#impactSenders.delete(send);
      if (flush) clearImmediate(flush);
      clearInterval(keepAlive);
      this.#closers.delete(close);
      if (this.#closers.size === 0) this.#frames.clear();
      if (end && !res.writableEnded && !res.destroyed) res.end();
    };
    this.#closers.add(close);
    res.on('close', () => close());
    res.on('error', () => close());
    // Last, so that a drop of the very first frame finds everything in place to undo.
    send(frame('hello', { now: formatIso(engine.now()) }));
  }

  closeAll(): void {
    for (const close of [...this.#closers]) close();
  }
}
