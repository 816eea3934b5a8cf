// The faults a replace-by-rename writer must survive, each taking the writer as a parameter so
// the same scenario can also be run against an older implementation to show it failing there.
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { FileOps } from '../../src/shared/atomic-file.js';
import { errno, shortWrite, withFaults, type Hooks } from './fault-ops.js';

/** Replaces `path` with `text`, making every file call through `ops`. */
export type AtomicWriter = (path: string, text: string, ops: FileOps) => void;

export interface WriterScenario {
  name: string;
  /** `base` is the real file system; `dir` is an empty directory of the scenario's own. */
  run(write: AtomicWriter, base: FileOps, dir: string): void;
}

/** A JSON document of about `bytes` bytes, like a state file or a journal. */
export function jsonOfSize(bytes: number, version: number): string {
  const head = JSON.stringify({ version, pad: '' });
  return `${JSON.stringify({ version, pad: 'x'.repeat(Math.max(0, bytes - head.length - 1)) })}\n`;
}

const OLD = jsonOfSize(8 * 1024, 1);
const NEW = jsonOfSize(64 * 1024, 2);

/** The target with its previous, good content, alone in `dir`. */
function seed(dir: string): string {
  const path = join(dir, 'state.json');
  writeFileSync(path, OLD, { mode: 0o644 });
  return path;
}

/** The write throws `code`; the target holds its old bytes exactly; no temp file is left. */
function failsAndKeeps(write: AtomicWriter, path: string, ops: FileOps, code: string): void {
  assert.throws(
    () => write(path, NEW, ops),
    (err: NodeJS.ErrnoException) => err.code === code,
    `the write must throw ${code}`,
  );
  assert.ok(readFileSync(path).equals(Buffer.from(OLD)), 'the target keeps its previous content byte for byte');
  assert.deepEqual(readdirSync(dirname(path)), [basename(path)], 'no temp file is left');
}

function failure(name: string, code: string, hooks: Hooks): WriterScenario {
  return {
    name,
    run(write, base, dir) {
      const path = seed(dir);
      failsAndKeeps(write, path, withFaults(base, hooks).ops, code);
    },
  };
}

export const writerScenarios: WriterScenario[] = [
  {
    name: 'writes the new file whole, mode 0600, fsynced before the rename and the directory after it',
    run(write, base, dir) {
      const path = seed(dir);
      const faulty = withFaults(base, {});
      write(path, NEW, faulty.ops);
      assert.equal(readFileSync(path, 'utf8'), NEW);
      assert.equal(statSync(path).mode & 0o777, 0o600);
      assert.deepEqual(readdirSync(dir), ['state.json']);
      const { calls } = faulty;
      const rename = calls.findIndex((c) => c.startsWith('renameSync '));
      const firstFsync = calls.indexOf('fsyncSync');
      assert.ok(rename > 0 && firstFsync >= 0 && firstFsync < rename, `fsync of the temp file before the rename: ${calls.join(', ')}`);
      assert.ok(calls.slice(0, firstFsync).includes('writeSync'), 'the data is written before the fsync');
      const dirOpen = calls.indexOf(`openSync ${dir}`);
      assert.ok(
        dirOpen > rename && calls.indexOf('fsyncSync', dirOpen) > dirOpen,
        `the directory is fsynced after the rename: ${calls.join(', ')}`,
      );
    },
  },
  {
    name: 'a short write followed by more writes completes the file',
    run(write, base, dir) {
      const path = seed(dir);
      const cut = shortWrite(1000);
      const faulty = withFaults(base, {
        writeSync: (n, real, ...args) => (n === 1 ? cut(n, real, ...args) : n === 2 ? shortWrite(7)(n, real, ...args) : real(...args)),
      });
      write(path, NEW, faulty.ops);
      assert.equal(readFileSync(path, 'utf8'), NEW, 'every byte is there');
      assert.ok(faulty.count('writeSync') >= 3, 'the writer went on after the short writes');
      assert.deepEqual(readdirSync(dir), ['state.json']);
    },
  },
  failure('a write that returns 0 is an error, not the end of the data', 'EIO', {
    writeSync: (n, real, ...args) => (n === 1 ? 0 : real(...args)),
  }),
  failure('ENOSPC on the first write', 'ENOSPC', {
    writeSync: (n, real, ...args) => {
      if (n === 1) throw errno('ENOSPC');
      return real(...args);
    },
  }),
  failure('a short write, then ENOSPC (the disk filled mid-write): the short temp file is never renamed', 'ENOSPC', {
    writeSync: (n, real, ...args) => {
      if (n >= 2) throw errno('ENOSPC');
      return shortWrite(4096)(n, real, ...args);
    },
  }),
  failure('ENOSPC on a middle write', 'ENOSPC', {
    writeSync: (n, real, ...args) => {
      if (n === 3) throw errno('ENOSPC');
      return shortWrite(4096)(n, real, ...args);
    },
  }),
  failure('fsync of the temp file fails', 'EIO', {
    fsyncSync: (n, real, fd) => {
      if (n === 1) throw errno('EIO', 'fsync');
      real(fd);
    },
  }),
  failure('the size after fsync differs from the data (a write that claimed more than it wrote)', 'EIO', {
    writeSync: (n, real, fd, buffer, offset, length, position) => {
      if (n === 1) real(fd, buffer, offset, Math.max(0, length - 100), position);
      else real(fd, buffer, offset, length, position);
      return length;
    },
  }),
  failure('close of the temp file fails', 'EIO', {
    closeSync: (n, real, fd) => {
      if (n === 1) {
        real(fd);
        throw errno('EIO', 'close');
      }
      real(fd);
    },
  }),
  failure('the rename fails', 'EXDEV', {
    renameSync: (n, real, from, to) => {
      if (n === 1) throw errno('EXDEV', 'rename');
      real(from, to);
    },
  }),
  {
    name: 'a symlink planted at the old predictable temp name (<path>.tmp-<pid>) is not followed',
    run(write, base, dir) {
      const path = seed(dir);
      const victim = plantVictim(dir);
      const trap = `${path}.tmp-${process.pid}`;
      symlinkSync(victim, trap);
      write(path, NEW, base);
      assert.equal(readFileSync(victim, 'utf8'), 'precious\n', 'the file the link points to is untouched');
      assert.equal(readFileSync(path, 'utf8'), NEW);
      assert.ok(!lstatSync(path).isSymbolicLink(), 'the target is a file of its own, not the planted link');
      assert.equal(readlinkSync(trap), victim, 'the planted link is left as it was');
    },
  },
  {
    name: 'a symlink planted at the very temp name chosen is refused, not followed',
    run(write, base, dir) {
      const path = seed(dir);
      const victim = plantVictim(dir);
      let planted = '';
      const faulty = withFaults(base, {
        openSync: (n, real, p, flags, mode) => {
          if (n === 1) symlinkSync(victim, (planted = p));
          return real(p, flags, mode);
        },
      });
      assert.throws(
        () => write(path, NEW, faulty.ops),
        (err: NodeJS.ErrnoException) => err.code === 'EEXIST' || err.code === 'ELOOP',
      );
      assert.equal(readFileSync(victim, 'utf8'), 'precious\n', 'the file the link points to is untouched');
      assert.ok(readFileSync(path).equals(Buffer.from(OLD)), 'the target keeps its previous content');
      assert.equal(readlinkSync(planted), victim, 'the planted link is not ours to remove');
    },
  },
  {
    name: 'a file planted at the very temp name chosen is refused and left alone',
    run(write, base, dir) {
      const path = seed(dir);
      let planted = '';
      const faulty = withFaults(base, {
        openSync: (n, real, p, flags, mode) => {
          if (n === 1) writeFileSync((planted = p), 'someone else’s\n');
          return real(p, flags, mode);
        },
      });
      assert.throws(
        () => write(path, NEW, faulty.ops),
        (err: NodeJS.ErrnoException) => err.code === 'EEXIST',
      );
      assert.equal(readFileSync(planted, 'utf8'), 'someone else’s\n');
      assert.ok(readFileSync(path).equals(Buffer.from(OLD)), 'the target keeps its previous content');
    },
  },
];

/** A file outside `dir` that a planted link points to. */
function plantVictim(dir: string): string {
  const elsewhere = join(dirname(dir), `${basename(dir)}-victim`);
  mkdirSync(elsewhere, { recursive: true });
  const victim = join(elsewhere, 'precious');
  writeFileSync(victim, 'precious\n');
  return victim;
}
