// Tools for watching a file while a real, full disk fights its writer: a reader on another
// thread that samples the file as any other process would, and a way to leave little space free.
// Used by test/integration/disk-full.test.ts and bench/disk-full.ts.
import { readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Tmpfs } from '../support/tmpfs.js';

/** `json`: the whole file is one JSON document. `jsonl`: every complete line is one (a final line without its newline is an append in flight). */
export type FileKind = 'json' | 'jsonl';

export interface Samples {
  reads: number;
  invalid: number;
  /** Length and head of the first invalid read, to say what went wrong. */
  firstInvalid: string | null;
}

export interface Sampler {
  /** Reads so far; the writer thread may poll it while it runs synchronously. */
  reads(): number;
  /** True once the reader has taken the number of reads it was asked for. */
  finished(): boolean;
  /** Stops the reader (if still reading) and returns what it saw. */
  stop(): Promise<Samples>;
}

// Plain JavaScript, so the worker needs no TypeScript loader. Shared slots: 0 stop, 1 reads, 2 finished.
const READER = `
const { readFileSync } = require('node:fs');
const { workerData, parentPort } = require('node:worker_threads');
const { path, kind, limit, pauseMs, shared } = workerData;
const slots = new Int32Array(shared);
function valid(text) {
  try {
    if (kind === 'json') { JSON.parse(text); return true; }
    const lines = text.split('\\n');
    lines.pop();
    for (const line of lines) JSON.parse(line);
    return true;
  } catch { return false; }
}
let reads = 0, invalid = 0, firstInvalid = null;
parentPort.postMessage({ ready: true });
while (Atomics.load(slots, 0) === 0 && (limit === 0 || reads < limit)) {
  let text;
  try { text = readFileSync(path, 'utf8'); } catch (err) { text = '<' + err.code + '>'; }
  reads++;
  Atomics.store(slots, 1, reads);
  if (!valid(text)) { invalid++; if (firstInvalid === null) firstInvalid = text.length + ' chars: ' + JSON.stringify(text.slice(0, 40)); }
  if (pauseMs > 0) Atomics.wait(slots, 0, 0, pauseMs);
}
Atomics.store(slots, 2, 1);
parentPort.postMessage({ reads, invalid, firstInvalid });
`;

/**
 * Starts a reader of `path` on its own thread; resolves once it is reading. It reads until stopped,
 * or `limit` times (0: no limit) with `pauseMs` between reads. A missing file counts as invalid:
 * a file replaced by rename is never missing.
 */
export async function startSampler(path: string, kind: FileKind, options: { limit?: number; pauseMs?: number } = {}): Promise<Sampler> {
  const shared = new SharedArrayBuffer(12);
  const slots = new Int32Array(shared);
  const worker = new Worker(READER, {
    eval: true,
    workerData: { path, kind, limit: options.limit ?? 0, pauseMs: options.pauseMs ?? 0, shared },
  });
  const result = new Promise<Samples>((resolve, reject) => {
    worker.on('message', (m: Samples | { ready: true }) => {
      if (!('ready' in m)) resolve(m);
    });
    worker.on('error', reject);
    worker.on('exit', (code) => reject(new Error(`the reader thread exited with ${code} before reporting`)));
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return {
    reads: () => Atomics.load(slots, 1),
    finished: () => Atomics.load(slots, 2) === 1,
    async stop() {
      Atomics.store(slots, 0, 1);
      Atomics.notify(slots, 0);
      const samples = await result;
      await worker.terminate();
      return samples;
    },
  };
}

/** Fills the tmpfs but for about `kib` KiB, so the next larger write comes out short and then fails with ENOSPC. */
export function leaveFree(tmpfs: Tmpfs, kib: number): void {
  const ballast = join(tmpfs.dir, '.ballast');
  writeFileSync(ballast, Buffer.alloc(kib * 1024));
  tmpfs.fill();
  unlinkSync(ballast);
}

/** Temp files of `path` in its directory (`<name>.tmp-*`). */
export function tempFilesOf(path: string): string[] {
  const prefix = `${basename(path)}.tmp-`;
  return readdirSync(dirname(path)).filter((name) => name.startsWith(prefix));
}
