// Full-disk safety of the state-file writer, measured: the writer before the fix (the BASELINE
// below) and writeFileAtomicSync side by side, each rewriting a growing JSON state on a small
// tmpfs that has run out of space while a reader on another thread samples the file.
//   npm run bench:disk-full [-- --reads 128,500]
// Needs root (it mounts tmpfs); exits 2 with a message otherwise.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { fsyncDirectory, writeFileAtomicSync } from '../src/shared/atomic-file.js';
import { jsonOfSize } from '../test/shared/atomic-file-scenarios.js';
import { leaveFree, startSampler, tempFilesOf } from '../test/shared/disk-pressure.js';
import { mountTmpfs, tmpfsUnavailable } from '../test/support/tmpfs.js';

/** The disk and the state that fills it, in KiB. */
const SIZES = {
  /** The disk: 1 MiB, of which other files leave `free` once the state has `start`. */
  disk: 1024,
  free: 192,
  start: 64,
  /** The state grows `growth` per save to about `max`, then keeps being rewritten at that size. */
  max: 256,
  growth: 4,
} as const;
/** Between two reads of the sampler, so the reads spread over many saves. */
const READ_PAUSE_MS = 2;

/**
 * BASELINE, not for use: the writer as it was before the full-disk fix (src/shared/atomic-file.ts),
 * copied here to measure against. One writeSync whose count is not checked (a nearly full disk
 * writes short and the rest is silently lost), fsync, rename: the short file replaces the good one.
 */
function baselineWriteFileAtomicSync(path: string, text: string): void {
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

const writers = {
  'baseline (before the fix)': baselineWriteFileAtomicSync,
  writeFileAtomicSync: (path: string, text: string) => writeFileAtomicSync(path, text),
} as const;

interface Run {
  writer: string;
  reads: number;
  invalid: number;
  firstInvalid: string | null;
  saves: number;
  failed: number;
  errors: string[];
  validAfter: boolean;
  sizeAfter: number;
  tempsLeft: number;
}

async function run(name: keyof typeof writers, reads: number): Promise<Run> {
  const write = writers[name];
  const disk = await mountTmpfs(SIZES.disk);
  try {
    const path = join(disk.dir, 'state.json');
    writeFileAtomicSync(path, jsonOfSize(SIZES.start * 1024, 0));
    leaveFree(disk, SIZES.free);
    const sampler = await startSampler(path, 'json', { limit: reads, pauseMs: READ_PAUSE_MS });
    let saves = 0;
    let failed = 0;
    const errors = new Set<string>();
    // The emulator saves its state after every change: here, as fast as the disk allows, until the reader is done.
    while (!sampler.finished()) {
      saves++;
      const kib = Math.min(SIZES.max, SIZES.start + saves * SIZES.growth);
      try {
        write(path, jsonOfSize(kib * 1024, saves));
      } catch (err) {
        failed++;
        errors.add((err as NodeJS.ErrnoException).code ?? (err as Error).message);
      }
    }
    const samples = await sampler.stop();
    const after = readFileSync(path, 'utf8');
    let validAfter = true;
    try {
      JSON.parse(after);
    } catch {
      validAfter = false;
    }
    return {
      writer: name,
      reads: samples.reads,
      invalid: samples.invalid,
      firstInvalid: samples.firstInvalid,
      saves,
      failed,
      errors: [...errors],
      validAfter,
      sizeAfter: Buffer.byteLength(after),
      tempsLeft: tempFilesOf(path).length,
    };
  } finally {
    await disk.unmount();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { reads: { type: 'string', default: '128,500' } } });
  const counts = values.reads.split(',').map((s) => Number(s));
  if (counts.some((n) => !Number.isInteger(n) || n < 1)) {
    console.error(`--reads: expected a comma-separated list of positive integers, got "${values.reads}"`);
    process.exit(2);
  }
  const unavailable = await tmpfsUnavailable();
  if (unavailable) {
    console.error(`bench:disk-full needs to mount a small tmpfs, and ${unavailable}. Run it as root on Linux.`);
    process.exit(2);
  }
  console.log(
    `tmpfs ${SIZES.disk} KiB, ${SIZES.free} KiB free beside a ${SIZES.start} KiB state that grows ${SIZES.growth} KiB per save to ${SIZES.max} KiB;` +
      ` one reader samples the file every ${READ_PAUSE_MS} ms while the writer saves.\n`,
  );
  for (const reads of counts) {
    for (const name of Object.keys(writers) as (keyof typeof writers)[]) {
      const r = await run(name, reads);
      console.log(`${r.writer}, ${reads} reads`);
      console.log(`  invalid reads / total reads: ${r.invalid} / ${r.reads}${r.firstInvalid ? ` (first: ${r.firstInvalid})` : ''}`);
      console.log(`  file valid after the stop:   ${r.validAfter ? 'yes' : 'no'} (${(r.sizeAfter / 1024).toFixed(1)} KiB)`);
      console.log(`  temp files left:             ${r.tempsLeft}`);
      console.log(`  saves: ${r.saves}, failed: ${r.failed}${r.errors.length ? ` (${r.errors.join(', ')})` : ''}\n`);
    }
  }
}

await main();
