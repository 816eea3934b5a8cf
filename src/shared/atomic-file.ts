// Files that must survive a crash or a full disk whole: the emulator's state and the agent's journal.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * The few synchronous file calls the durable writers make. Tests pass a wrapper that fails or
 * writes short at a chosen call, so every failure branch is exercised without a full disk.
 */
export interface FileOps {
  openSync(path: string, flags: number, mode?: number): number;
  writeSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null): number;
  fsyncSync(fd: number): void;
  fstatSync(fd: number): { size: number };
  ftruncateSync(fd: number, length: number): void;
  closeSync(fd: number): void;
  renameSync(from: string, to: string): void;
  unlinkSync(path: string): void;
  readdirSync(dir: string): string[];
}

export const nodeFileOps: FileOps = {
  openSync: (path, flags, mode) => fs.openSync(path, flags, mode),
  writeSync: (fd, buffer, offset, length, position) => fs.writeSync(fd, buffer, offset, length, position),
  fsyncSync: (fd) => fs.fsyncSync(fd),
  fstatSync: (fd) => fs.fstatSync(fd),
  ftruncateSync: (fd, length) => fs.ftruncateSync(fd, length),
  closeSync: (fd) => fs.closeSync(fd),
  renameSync: (from, to) => fs.renameSync(from, to),
  unlinkSync: (path) => fs.unlinkSync(path),
  readdirSync: (dir) => fs.readdirSync(dir),
};

/** Files Forewarn creates hold state, journals or tokens: readable by their owner only. */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

const { O_CREAT, O_EXCL, O_WRONLY, O_APPEND } = fs.constants;
// Not on Windows; there the exclusive create alone refuses a planted file.
const O_NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0;

/** What a temp file of `path` is called [choice]: beside it (so rename stays on one file system), random, never reused. */
export function tempPathFor(path: string): string {
  return `${path}${TEMP_INFIX}${randomBytes(8).toString('hex')}`;
}
const TEMP_INFIX = '.tmp-';

/** Writes every byte: a write may take only part of the buffer, and one that takes none is an error [choice]. */
export function writeAll(fd: number, data: Uint8Array, ops: FileOps = nodeFileOps): void {
  let offset = 0;
  while (offset < data.length) {
    const n = ops.writeSync(fd, data, offset, data.length - offset, null);
    if (!(n > 0)) throw Object.assign(new Error(`short write: ${offset} of ${data.length} bytes written`), { code: 'EIO' });
    offset += n;
  }
}

export interface AtomicWriteOptions {
  ops?: FileOps;
}

/**
 * Replaces `path` with `text` so that a crash, a power loss or a full disk leaves either the old
 * file or the new one, never part of one: the temp file is created exclusively (a planted link or
 * file is refused, not followed) with mode 0600, written whole, fsynced and checked for its size
 * before the rename; the directory is fsynced after it. On any failure the temp file is removed,
 * the old file is untouched, and the error is thrown.
 */
export function writeFileAtomicSync(path: string, text: string | Uint8Array, options: AtomicWriteOptions = {}): void {
  const ops = options.ops ?? nodeFileOps;
  const data = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const tmp = tempPathFor(path);
  let fd: number | undefined;
  let created = false;
  try {
    fd = ops.openSync(tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW, PRIVATE_FILE_MODE);
    created = true;
    writeAll(fd, data, ops);
    ops.fsyncSync(fd);
    const size = ops.fstatSync(fd).size;
    if (size !== data.length) {
      throw Object.assign(new Error(`the temp file holds ${size} of ${data.length} bytes after fsync`), { code: 'EIO' });
    }
    const closing = fd;
    fd = undefined;
    ops.closeSync(closing);
    ops.renameSync(tmp, path);
    created = false;
  } catch (err) {
    // The write already failed; that error is the one to report.
    if (fd !== undefined) closeQuietly(fd, ops);
    if (created) {
      try {
        ops.unlinkSync(tmp);
      } catch {
        // Left for removeStaleTempFiles at the next start.
      }
    }
    throw err;
  }
  fsyncDirectory(dirname(path), ops);
}

/**
 * Makes a rename durable. Best effort [choice]: some platforms cannot open or fsync a directory,
 * and the rename has already happened, so a failure here must not report the write as failed.
 */
export function fsyncDirectory(dir: string, ops: FileOps = nodeFileOps): void {
  let fd: number | undefined;
  try {
    fd = ops.openSync(dir, fs.constants.O_RDONLY);
    ops.fsyncSync(fd);
  } catch {
    // Best effort (e.g. Windows, some network file systems).
  } finally {
    if (fd !== undefined) closeQuietly(fd, ops);
  }
}

/** Closes a descriptor whose close cannot change the outcome being reported. */
function closeQuietly(fd: number, ops: FileOps): void {
  try {
    ops.closeSync(fd);
  } catch {
    // Nothing to add to the outcome.
  }
}

/**
 * Removes temp files of `path` left by runs that were killed mid-write (`<name>.tmp-*`, which
 * also covers the older `<name>.tmp-<pid>`). Returns the names removed. One process owns a
 * state file or journal at a time, so no temp file of a live writer can be among them.
 */
export function removeStaleTempFiles(path: string, ops: FileOps = nodeFileOps): string[] {
  const dir = dirname(path);
  const prefix = `${basename(path)}${TEMP_INFIX}`;
  let names: string[];
  try {
    names = ops.readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    try {
      ops.unlinkSync(join(dir, name));
      removed.push(name);
    } catch {
      // Gone already, or not ours to remove: leave it.
    }
  }
  return removed;
}

/** Creates `dir` and any missing parents with mode 0700; existing directories keep their mode. */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * An append-only file whose every append is whole and durable before it returns, or undone: a
 * failed append (a full disk mid-write) truncates the file back to its last good size, so once
 * append returns or throws the file ends on a whole record (a reader racing an append may see
 * its tail in flight, as with any append). Open it on a file the caller has already created whole.
 */
export class DurableAppender {
  readonly #ops: FileOps;
  #fd: number | undefined;
  #size: number;

  constructor(
    readonly path: string,
    options: AtomicWriteOptions = {},
  ) {
    this.#ops = options.ops ?? nodeFileOps;
    const fd = this.#ops.openSync(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, PRIVATE_FILE_MODE);
    try {
      this.#size = this.#ops.fstatSync(fd).size;
    } catch (err) {
      closeQuietly(fd, this.#ops);
      throw err;
    }
    this.#fd = fd;
  }

  /** Bytes in the file, all of them good. */
  get size(): number {
    return this.#size;
  }

  append(text: string | Uint8Array): void {
    const fd = this.#fd;
    if (fd === undefined) throw new Error(`${this.path}: the appender is closed`);
    const data = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
    try {
      writeAll(fd, data, this.#ops);
      this.#ops.fsyncSync(fd);
    } catch (err) {
      try {
        this.#ops.ftruncateSync(fd, this.#size);
        this.#ops.fsyncSync(fd);
      } catch (undo) {
        // [choice] The tail could not be cut: no further append may follow it.
        this.#fd = undefined;
        closeQuietly(fd, this.#ops);
        throw new AggregateError([err, undo], `${this.path}: an append failed and its partial record could not be removed`, {
          cause: undo,
        });
      }
      throw err;
    }
    this.#size += data.length;
  }

  close(): void {
    const fd = this.#fd;
    this.#fd = undefined;
    if (fd !== undefined) this.#ops.closeSync(fd);
  }
}
