// A text file read line by line with a cap on each line and on the whole: what a user names as input
// (a recording, a watch log) may be /dev/zero, a FIFO or a huge file, and must neither hang nor
// exhaust memory. Only regular files are read.
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';

export interface LineLimits {
  /** The longest line, in bytes, without its newline. */
  maxLineBytes: number;
  /** The largest file. */
  maxBytes: number;
}

/**
 * Why a file could not be read: `open` (it could not be opened: exit 1 in the CLI), `type` (not a
 * regular file), `line` (a line past the cap; `line` says which) or `size` (the file past the cap).
 */
export class LineFileError extends Error {
  override name = 'LineFileError';
  constructor(
    readonly kind: 'open' | 'type' | 'line' | 'size',
    readonly path: string,
    readonly line: number | null,
    readonly problem: string,
  ) {
    super(line === null ? `${path}: ${problem}` : `${path}:${line}: ${problem}`);
  }
}

const CHUNK_BYTES = 64 * 1024;

/** Calls `onLine` with each line (1-based `n`, without its newline); `unterminated` marks a last line without one. */
export function readLines(path: string, limits: LineLimits, onLine: (text: string, n: number, unterminated: boolean) => void): void {
  let fd: number;
  try {
    // Non-blocking, so opening a FIFO that has no writer returns at once (and is then refused).
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    throw new LineFileError('open', path, null, `cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new LineFileError('type', path, null, `is ${kindOf(stat)}, not a regular file; name a file`);
    const tooBig = () => new LineFileError('size', path, null, `larger than ${limits.maxBytes} bytes, the most this reads`);
    if (stat.size > limits.maxBytes) throw tooBig();
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    let pieces: Buffer[] = [];
    let pending = 0;
    let n = 1;
    let total = 0;
    for (;;) {
      const got = readSync(fd, chunk, 0, chunk.length, null);
      if (got === 0) break;
      total += got;
      // The file may grow while it is read.
      if (total > limits.maxBytes) throw tooBig();
      const view = chunk.subarray(0, got);
      let start = 0;
      while (start <= got) {
        const newline = view.indexOf(0x0a, start);
        const end = newline === -1 ? got : newline;
        pending += end - start;
        if (pending > limits.maxLineBytes)
          throw new LineFileError('line', path, n, `the line is longer than ${limits.maxLineBytes} bytes, the most a line may hold`);
        if (end > start) pieces.push(Buffer.from(view.subarray(start, end)));
        if (newline === -1) break;
        onLine(Buffer.concat(pieces, pending).toString('utf8'), n++, false);
        pieces = [];
        pending = 0;
        start = newline + 1;
      }
    }
    if (pending > 0) onLine(Buffer.concat(pieces, pending).toString('utf8'), n, true);
  } finally {
    closeSync(fd);
  }
}

function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isSocket()) return 'a socket';
  return 'not a file';
}
