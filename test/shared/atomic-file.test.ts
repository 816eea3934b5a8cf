// The durable file layer under every failure a full or faulty disk can produce, with the
// failures injected through FileOps; test/integration/disk-full.test.ts does it on a real tmpfs.
import assert from 'node:assert/strict';
import { constants, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  DurableAppender,
  PRIVATE_FILE_MODE,
  ensurePrivateDir,
  nodeFileOps,
  removeStaleTempFiles,
  writeFileAtomicSync,
} from '../../src/shared/atomic-file.js';
import { jsonOfSize, writerScenarios, type AtomicWriter } from './atomic-file-scenarios.js';
import { errno, shortWrite, withFaults } from './fault-ops.js';

const root = mkdtempSync(join(tmpdir(), 'forewarn-atomic-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = (): string => {
  const dir = join(root, `d${n++}`);
  mkdirSync(dir);
  return dir;
};

const writer: AtomicWriter = (path, text, ops) => writeFileAtomicSync(path, text, { ops });

describe('writeFileAtomicSync', () => {
  for (const scenario of writerScenarios) {
    it(scenario.name, () => scenario.run(writer, nodeFileOps, freshDir()));
  }

  it('creates the temp file with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, under a random name beside the target', () => {
    const dir = freshDir();
    const path = join(dir, 'journal.json');
    const opens: { path: string; flags: number; mode: number | undefined }[] = [];
    const faulty = withFaults(nodeFileOps, {
      openSync: (_n, real, p, flags, mode) => {
        opens.push({ path: p, flags, mode });
        return real(p, flags, mode);
      },
    });
    for (let i = 0; i < 5; i++) writeFileAtomicSync(path, `{"i":${i}}`, { ops: faulty.ops });
    const temps = opens.filter((o) => o.path !== dir);
    assert.equal(temps.length, 5);
    for (const open of temps) {
      assert.match(open.path, /^.*\/journal\.json\.tmp-[0-9a-f]{16}$/);
      assert.ok(!open.path.endsWith(`.tmp-${process.pid}`), 'not the predictable pid name');
      for (const [name, flag] of Object.entries({
        O_CREAT: constants.O_CREAT,
        O_EXCL: constants.O_EXCL,
        O_NOFOLLOW: constants.O_NOFOLLOW,
      })) {
        assert.equal(open.flags & flag, flag, `${name} is set`);
      }
      assert.equal(open.flags & constants.O_TRUNC, 0, 'never truncates an existing file');
      assert.equal(open.mode, PRIVATE_FILE_MODE);
    }
    assert.equal(new Set(temps.map((o) => o.path)).size, 5, 'a fresh name every time');
    assert.equal(readFileSync(path, 'utf8'), '{"i":4}');
  });

  it('follows none of many symlinks planted at random temp names', () => {
    const dir = freshDir();
    const path = join(dir, 'state.json');
    const victim = join(freshDir(), 'precious');
    writeFileSync(victim, 'precious\n');
    for (let i = 0; i < 64; i++) symlinkSync(victim, `${path}.tmp-${i.toString(16).padStart(16, '0')}`);
    symlinkSync(victim, `${path}.tmp-${process.pid}`);
    for (let i = 0; i < 20; i++) writeFileAtomicSync(path, jsonOfSize(1024 * (i + 1), i));
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
    assert.equal(JSON.parse(readFileSync(path, 'utf8')).version, 19);
  });

  it('reports the first error when removing the temp file fails too, and leaves that file for removeStaleTempFiles', () => {
    const dir = freshDir();
    const path = join(dir, 'state.json');
    writeFileSync(path, 'old');
    const faulty = withFaults(nodeFileOps, {
      renameSync: () => {
        throw errno('EIO', 'rename');
      },
      unlinkSync: () => {
        throw errno('EBUSY', 'unlink');
      },
    });
    assert.throws(() => writeFileAtomicSync(path, 'new', { ops: faulty.ops }), { code: 'EIO' });
    assert.equal(readFileSync(path, 'utf8'), 'old');
    const left = readdirSync(dir).filter((f) => f !== 'state.json');
    assert.equal(left.length, 1);
    assert.deepEqual(removeStaleTempFiles(path), left);
    assert.deepEqual(readdirSync(dir), ['state.json']);
  });

  it('reports success once the rename is done, even when the directory cannot be fsynced or closed', () => {
    for (const hook of ['fsyncSync', 'closeSync'] as const) {
      const dir = freshDir();
      const path = join(dir, 'state.json');
      writeFileSync(path, 'old');
      let dirFd = -1;
      const faulty = withFaults(nodeFileOps, {
        openSync: (_n, real, p, flags, mode) => {
          const fd = real(p, flags, mode);
          if (p === dir) dirFd = fd;
          return fd;
        },
        [hook]: (_n: number, real: (fd: number) => void, fd: number) => {
          if (fd !== dirFd) return real(fd);
          if (hook === 'closeSync') real(fd);
          throw errno('EIO', hook);
        },
      });
      writeFileAtomicSync(path, 'new', { ops: faulty.ops });
      assert.equal(readFileSync(path, 'utf8'), 'new', hook);
      assert.ok(dirFd >= 0, 'the directory was opened');
    }
  });
});

describe('removeStaleTempFiles', () => {
  it('removes <name>.tmp-* (old pid names, random names, planted links) and nothing else', () => {
    const dir = freshDir();
    const path = join(dir, 'journal.json');
    const victim = join(freshDir(), 'precious');
    writeFileSync(victim, 'precious\n');
    const stale = ['journal.json.tmp-4242', 'journal.json.tmp-0123456789abcdef', 'journal.json.tmp-'];
    const kept = [
      'journal.json',
      'journal.json.tmp',
      'journal.jsontmp-1',
      'journal.json.corrupt-2030-01-01T00-00-00-000Z',
      'xjournal.json.tmp-1',
      'state.json.tmp-1',
      'journal.json.tmp-dir',
    ];
    for (const name of [...stale.slice(0, 2), ...kept.slice(0, -1)]) writeFileSync(join(dir, name), name);
    symlinkSync(victim, join(dir, 'journal.json.tmp-'));
    mkdirSync(join(dir, 'journal.json.tmp-dir'));

    assert.deepEqual(removeStaleTempFiles(path).sort(), [...stale].sort());
    assert.deepEqual(readdirSync(dir).sort(), [...kept].sort());
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n', 'a planted link is removed, its target is not');
    assert.equal(readFileSync(path, 'utf8'), 'journal.json');
  });

  it('returns nothing for a directory that does not exist', () => {
    assert.deepEqual(removeStaleTempFiles(join(root, 'missing', 'journal.json')), []);
  });
});

describe('ensurePrivateDir', () => {
  it('creates the directory and its missing parents with mode 0700', () => {
    const base = freshDir();
    const dir = join(base, 'a', 'b', 'c');
    ensurePrivateDir(dir);
    for (const d of [join(base, 'a'), join(base, 'a', 'b'), dir]) {
      assert.ok(statSync(d).isDirectory());
      assert.equal(statSync(d).mode & 0o777, 0o700, d);
    }
  });

  it('leaves an existing directory, its mode and its files as they are', () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'keep'), 'keep');
    const before = statSync(dir).mode & 0o777;
    ensurePrivateDir(dir);
    ensurePrivateDir(dir);
    assert.equal(statSync(dir).mode & 0o777, before);
    assert.deepEqual(readdirSync(dir), ['keep']);
  });
});

describe('DurableAppender', () => {
  /** An appender whose writes and fsyncs fail as `fault` says at the moment of the call. */
  function faultyAppender(path: string) {
    const state: { fault: 'none' | 'short-then-enospc' | 'zero' | 'fsync' } = { fault: 'none' };
    let writesInAppend = 0;
    const faulty = withFaults(nodeFileOps, {
      writeSync: (n, real, ...args) => {
        if (state.fault === 'short-then-enospc') {
          if (writesInAppend++ === 0) return shortWrite(5)(n, real, ...args);
          throw errno('ENOSPC');
        }
        if (state.fault === 'zero') return 0;
        return real(...args);
      },
      fsyncSync: (_n, real, fd) => {
        if (state.fault === 'fsync') {
          state.fault = 'none';
          throw errno('EIO', 'fsync');
        }
        real(fd);
      },
      ftruncateSync: (_n, real, fd, length) => {
        if (truncateFails) throw errno('EIO', 'ftruncate');
        real(fd, length);
      },
    });
    let truncateFails = false;
    const appender = new DurableAppender(path, { ops: faulty.ops });
    return {
      appender,
      faulty,
      fail(fault: typeof state.fault, opts: { truncateFails?: boolean } = {}) {
        state.fault = fault;
        writesInAppend = 0;
        truncateFails = opts.truncateFails ?? false;
      },
    };
  }

  it('appends whole records, creating the file with mode 0600', () => {
    const path = join(freshDir(), 'log.jsonl');
    const appender = new DurableAppender(path);
    appender.append('{"a":1}\n');
    appender.append(Buffer.from('{"b":2}\n'));
    assert.equal(appender.size, 16);
    appender.close();
    assert.equal(readFileSync(path, 'utf8'), '{"a":1}\n{"b":2}\n');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(new DurableAppender(path).size, 16, 'a reopened appender starts at the file’s size');
  });

  it('undoes an append that wrote short and then hit ENOSPC; appends work again once space returns', () => {
    const path = join(freshDir(), 'log.jsonl');
    const { appender, fail } = faultyAppender(path);
    appender.append('{"a":1}\n');
    fail('short-then-enospc');
    assert.throws(() => appender.append('{"b":"a record longer than five bytes"}\n'), { code: 'ENOSPC' });
    assert.equal(readFileSync(path, 'utf8'), '{"a":1}\n', 'only the whole earlier record');
    assert.equal(appender.size, 8);
    fail('none');
    appender.append('{"c":3}\n');
    assert.equal(readFileSync(path, 'utf8'), '{"a":1}\n{"c":3}\n');
    assert.equal(appender.size, 16);
    appender.close();
  });

  it('undoes an append whose write returns 0', () => {
    const path = join(freshDir(), 'log.jsonl');
    const { appender, fail } = faultyAppender(path);
    appender.append('{"a":1}\n');
    fail('zero');
    assert.throws(() => appender.append('{"b":2}\n'), { code: 'EIO' });
    assert.equal(readFileSync(path, 'utf8'), '{"a":1}\n');
    appender.close();
  });

  it('undoes an append whose fsync fails, though every byte was written', () => {
    const path = join(freshDir(), 'log.jsonl');
    const { appender, fail, faulty } = faultyAppender(path);
    appender.append('{"a":1}\n');
    fail('fsync');
    assert.throws(() => appender.append('{"b":2}\n'), { code: 'EIO' });
    assert.equal(readFileSync(path, 'utf8'), '{"a":1}\n');
    assert.equal(faulty.count('ftruncateSync'), 1);
    appender.append('{"c":3}\n');
    assert.equal(readFileSync(path, 'utf8'), '{"a":1}\n{"c":3}\n');
    appender.close();
  });

  it('closes itself when a partial record cannot be cut off, so nothing is appended after it', () => {
    const path = join(freshDir(), 'log.jsonl');
    const { appender, fail } = faultyAppender(path);
    appender.append('{"a":1}\n');
    fail('short-then-enospc', { truncateFails: true });
    assert.throws(
      () => appender.append('{"c":"long enough to be cut"}\n'),
      (err: Error) => err instanceof AggregateError && /could not be removed/.test(err.message),
    );
    assert.throws(() => appender.append('{"d":4}\n'), /the appender is closed/);
  });

  it('reports the failed append, not a close error, when it cannot cut the partial record or close', () => {
    const path = join(freshDir(), 'log.jsonl');
    const faulty = withFaults(nodeFileOps, {
      writeSync: (n, real, ...args) => {
        if (n === 1) return shortWrite(3)(n, real, ...args);
        throw errno('ENOSPC');
      },
      ftruncateSync: () => {
        throw errno('EIO', 'ftruncate');
      },
      closeSync: (_n, real, fd) => {
        real(fd);
        throw errno('EBADF', 'close');
      },
    });
    const appender = new DurableAppender(path, { ops: faulty.ops });
    assert.throws(
      () => appender.append('{"a":1}\n'),
      (err: Error) => err instanceof AggregateError && err.errors.map((e: NodeJS.ErrnoException) => e.code).join() === 'ENOSPC,EIO',
    );
    assert.throws(() => appender.append('{"b":2}\n'), /the appender is closed/);
  });

  it('refuses a symlink planted at its path', () => {
    const dir = freshDir();
    const victim = join(freshDir(), 'precious');
    writeFileSync(victim, 'precious\n');
    const path = join(dir, 'log.jsonl');
    symlinkSync(victim, path);
    assert.throws(() => new DurableAppender(path), { code: 'ELOOP' });
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
  });

  it('closes its file when it cannot read the size at open', () => {
    const path = join(freshDir(), 'log.jsonl');
    let opened = -1;
    const faulty = withFaults(nodeFileOps, {
      openSync: (_n, real, p, flags, mode) => (opened = real(p, flags, mode)),
      fstatSync: () => {
        throw errno('EIO', 'fstat');
      },
    });
    assert.throws(() => new DurableAppender(path, { ops: faulty.ops }), { code: 'EIO' });
    assert.ok(opened >= 0);
    assert.deepEqual(faulty.calls.slice(-1), ['closeSync'], 'the descriptor is not leaked');
  });
});
