// A small tmpfs of the test's own, to fill up for real: the end-to-end truth of a full disk.
import { execFile } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, type TestContext } from 'node:test';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** CI sets this (it runs as root), so a machine that cannot mount fails the suite instead of skipping it. */
export const REQUIRE_TMPFS = process.env.FOREWARN_REQUIRE_TMPFS === '1';

export interface Tmpfs {
  dir: string;
  /** Fills every free byte with a filler file; writes then fail with ENOSPC. */
  fill(): void;
  /** Deletes the filler: the space is back. */
  free(): void;
  unmount(): Promise<void>;
}

/** Why a tmpfs cannot be mounted here, or undefined when it can. */
export async function tmpfsUnavailable(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `tmpfs mounts need Linux, not ${process.platform}`;
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  try {
    const probe = await mountTmpfs(64);
    await probe.unmount();
    return undefined;
  } catch (err) {
    return `cannot mount a tmpfs: ${(err as Error).message}`;
  }
}

let availability: Promise<string | undefined> | undefined;

/**
 * Whether this test can have a tmpfs (found out once per process): when it cannot, skips it and
 * answers false, or with FOREWARN_REQUIRE_TMPFS=1 fails it instead.
 */
export async function tmpfsOrSkip(t: TestContext): Promise<boolean> {
  const unavailable = await (availability ??= tmpfsUnavailable());
  if (unavailable === undefined) return true;
  if (REQUIRE_TMPFS) throw new Error(`FOREWARN_REQUIRE_TMPFS=1 but ${unavailable}`);
  t.skip(unavailable);
  return false;
}

/**
 * Mounts for the tests of the file or describe this is called in: `mount(t, sizeKiB)` mounts one, or
 * gives undefined when `tmpfsOrSkip` skipped the test; every mount is unmounted after those tests.
 */
export function tmpfsMounts(): (t: TestContext, sizeKiB: number) => Promise<Tmpfs | undefined> {
  const mounts: Tmpfs[] = [];
  after(async () => {
    for (const m of mounts) await m.unmount();
  });
  return async (t, sizeKiB) => {
    if (!(await tmpfsOrSkip(t))) return undefined;
    const m = await mountTmpfs(sizeKiB);
    mounts.push(m);
    return m;
  };
}

/** Mounts a tmpfs of `sizeKiB` on a fresh directory. */
export async function mountTmpfs(sizeKiB: number): Promise<Tmpfs> {
  const dir = mkdtempSync(join(tmpdir(), 'forewarn-tmpfs-'));
  try {
    await exec('mount', ['-t', 'tmpfs', '-o', `size=${sizeKiB}k,mode=0755`, 'tmpfs', dir], { timeout: 5_000 });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const filler = join(dir, '.filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(64 * 1024);
      try {
        for (let size = chunk.length; size >= 1;) {
          try {
            writeSync(fd, chunk, 0, size);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
            size = Math.floor(size / 2);
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free() {
      try {
        unlinkSync(filler);
      } catch {
        // Not filled.
      }
    },
    async unmount() {
      await exec('umount', ['-l', dir], { timeout: 5_000 }).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
