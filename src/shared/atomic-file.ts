// Files that must survive a crash whole: the emulator's state and the agent's journal.
import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** A crash leaves either the old file or the new one, never half of one. */
export function writeFileAtomicSync(path: string, text: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  let fd: number | undefined;
  try {
    fd = openSync(tmp, 'w');
    writeSync(fd, text);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (err) {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      // Nothing to clean up.
    }
    throw err;
  }
  fsyncDirectory(dirname(path));
}

/** Makes the rename durable; some platforms cannot open a directory, and the rename still happened. */
export function fsyncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Best effort (e.g. Windows, some network file systems).
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
