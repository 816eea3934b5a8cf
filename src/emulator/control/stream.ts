// GET /v1/stream: server-sent events carrying every document change, and on request every change of state.
import type { ServerResponse } from 'node:http';
import { clearImmediate, clearInterval, setImmediate, setInterval } from 'node:timers';
import { formatIso } from '../../protocol/time.js';
import { renderDocument } from '../../protocol/render.js';
import { LATEST_API_VERSION } from '../../protocol/versions.js';
import type { Engine } from '../engine/engine.js';
import type { StreamTopic } from './schemas.js';

/** [choice] Proxies and idle timeouts drop a silent stream; a comment every 15 s keeps it open. */
export const KEEP_ALIVE_MS = 15_000;

export interface StreamOptions {
  keepAliveMs?: number | undefined;
}

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export interface OpenOptions {
  /** Adds `changed` frames: one per burst of changes, naming what changed, so a view knows what to fetch again. */
  changes?: boolean;
}

/** Owns the open streams so that closing the server can end them. */
export class StreamHub {
  readonly #closers = new Set<() => void>();
  readonly #changeListeners = new Set<(topic: StreamTopic) => void>();

  constructor(
    private readonly engine: Engine,
    private readonly options: StreamOptions = {},
  ) {}

  get size(): number {
    return this.#closers.size;
  }

  /** Tells `changes` streams about a change outside the engine (the clock, faults, scenario runs). */
  notify(topic: StreamTopic): void {
    for (const listener of this.#changeListeners) listener(topic);
  }

  /** Takes over a hijacked response until the client goes away or closeAll() runs. */
  open(res: ServerResponse, options: OpenOptions = {}): void {
    const engine = this.engine;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(frame('hello', { now: formatIso(engine.now()) }));

    const sent = new Map<string, number>();
    const removed = new Set<string>();
    let closed = false;

    // Read synchronously: mid-tick the engine does not tick again, so each transition shows in turn.
    const unsubscribe = engine.onChange((vms) => {
      for (const name of vms) {
        if (closed) return;
        if (!engine.fleet.vms.has(name)) {
          if (removed.has(name)) continue;
          removed.add(name);
          sent.delete(name);
          res.write(frame('document', { vm: name, removed: true }));
          continue;
        }
        removed.delete(name);
        const doc = engine.documentFor(name);
        // Outside a tick, documentFor may tick and notify (nested) first; never send an older document after a newer one.
        if (doc.incarnation <= (sent.get(name) ?? -Infinity)) continue;
        sent.set(name, doc.incarnation);
        const document = renderDocument(doc.incarnation, doc.events, LATEST_API_VERSION);
        res.write(frame('document', { vm: name, incarnation: doc.incarnation, document }));
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
        res.write(frame('changed', { now: formatIso(engine.now()), topics: [...pending].sort() }));
        pending.clear();
      });
    };
    const onMutation = () => onTopic('engine');
    const unsubscribeMutations = options.changes ? engine.onMutation(onMutation) : () => false;
    if (options.changes) this.#changeListeners.add(onTopic);

    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), this.options.keepAliveMs ?? KEEP_ALIVE_MS);
    keepAlive.unref();

    const close = () => {
      if (closed) return;
      closed = true;
      unsubscribe();
      unsubscribeMutations();
      this.#changeListeners.delete(onTopic);
      if (flush) clearImmediate(flush);
      clearInterval(keepAlive);
      this.#closers.delete(close);
      if (!res.writableEnded) res.end();
    };
    this.#closers.add(close);
    res.on('close', close);
    res.on('error', close);
  }

  closeAll(): void {
    for (const close of [...this.#closers]) close();
  }
}
