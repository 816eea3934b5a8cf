// The state file's save cost per committed change, and memory, with 10,000 and 100,000 ended events
// retained (the history limit raised to keep them): the log writer (one appended, fsynced record per
// batch, compacted into a fresh snapshot once the log outgrows it) against the old full rewrite
// (JSON.stringify of the whole snapshot, indented, plus an atomic write: what writeStateFileSync did),
// in the same run, on the same disk. Prints one table; the cost of the log follows the change, the
// rewrite's follows the state. Run with `npm run bench:state` (node --expose-gc);
// STATE_SIZES=10000,100000 and STATE_CHANGES=200 set the sizes and the changes timed.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { nodeFileOps, writeFileAtomicSync, type FileOps } from '../src/shared/atomic-file.js';
import { ManualClock } from '../src/shared/clock.js';
import { Engine } from '../src/emulator/engine/engine.js';
import { COMPACT_FLOOR_BYTES, StateFileWriter } from '../src/emulator/state/file.js';

const SIZES = (process.env.STATE_SIZES ?? '10000,100000').split(',').map(Number);
const CHANGES = Number(process.env.STATE_CHANGES ?? 200);
/** The full rewrite is slow at 100k; a few changes give its cost. */
const BASELINE_CHANGES = Math.max(5, Math.round(CHANGES / 10));
const VMS = 100;
const gc = (globalThis as { gc?: () => void }).gc;
const MiB = 2 ** 20;

function memory(): { heap: number; rss: number } {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return { heap: m.heapUsed / MiB, rss: m.rss / MiB };
}

/** An engine that has retained `ended` ended events (and as many finished operations). */
function build(ended: number) {
  const clock = new ManualClock(Date.UTC(2030, 0, 1));
  const fleet = Array.from({ length: VMS }, (_, i) => ({ name: `vm${i}` }));
  const engine = new Engine({ clock, fleet, historyLimit: ended + CHANGES * 2 + BASELINE_CHANGES * 2 });
  for (let i = 0; i < ended; i++) {
    const op = engine.createOperation({ type: 'freeze', vms: [`vm${i % VMS}`] });
    engine.cancel(op.events[0]!);
  }
  return engine;
}

/** One committed change as the control API makes it: an operation created (its event goes live). */
let n = 0;
const change = (engine: Engine) => engine.createOperation({ type: 'freeze', vms: [`vm${n++ % VMS}`] });

/** File calls that add up the time spent in fsync: the disk's share, apart from the CPU's. */
let fsyncMs = 0;
const timedOps: FileOps = {
  ...nodeFileOps,
  fsyncSync: (fd) => {
    const t = performance.now();
    nodeFileOps.fsyncSync(fd);
    fsyncMs += performance.now() - t;
  },
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

interface Row {
  size: number;
  snapshotMiB: number;
  engineHeap: number;
  rss: number;
  logMedianMs: number;
  logMeanMs: number;
  logCpuMs: number;
  rewriteCpuMs: number;
  recordBytes: number;
  compactMs: number;
  amortizedMs: number;
  logHeapDelta: number;
  rewriteMs: number;
  rewriteHeapPeak: number;
}

const dir = mkdtempSync(join(tmpdir(), 'forewarn-bench-state-'));
const rows: Row[] = [];
try {
  for (const size of SIZES) {
    const before = memory();
    const engine = build(size);
    const built = memory();

    // The log writer: start writes the snapshot (what a compaction costs), then one record per change.
    const logPath = join(dir, `log-${size}.json`);
    const writer = new StateFileWriter(
      logPath,
      engine,
      (err) => {
        throw err;
      },
      { ops: timedOps },
    );
    let t0 = performance.now();
    writer.start();
    const compactMs = performance.now() - t0;
    const baseBytes = statSync(logPath).size;
    const heapBefore = memory().heap;
    const times: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < CHANGES; i++) {
      change(engine);
      fsyncMs = 0;
      t0 = performance.now();
      writer.flush();
      times.push(performance.now() - t0);
      cpu.push(times.at(-1)! - fsyncMs);
    }
    const recordBytes = (statSync(logPath).size - baseBytes) / CHANGES;
    const afterLog = memory();
    const logHeapDelta = afterLog.heap - heapBefore;
    writer.close();
    // A compaction of the snapshot follows every max(snapshot, floor) bytes of records.
    const perCompaction = Math.max(baseBytes, COMPACT_FLOOR_BYTES) / recordBytes;
    const amortizedMs = mean(times) + compactMs / perCompaction;

    // The old way: the whole snapshot, indented, written atomically after each change.
    const rewritePath = join(dir, `rewrite-${size}.json`);
    const rewrites: number[] = [];
    const rewriteCpu: number[] = [];
    let peak = 0;
    for (let i = 0; i < BASELINE_CHANGES; i++) {
      change(engine);
      fsyncMs = 0;
      t0 = performance.now();
      const text = `${JSON.stringify(engine.snapshot(), null, 2)}\n`;
      peak = Math.max(peak, process.memoryUsage().heapUsed / MiB);
      writeFileAtomicSync(rewritePath, text, { ops: timedOps });
      rewrites.push(performance.now() - t0);
      rewriteCpu.push(rewrites.at(-1)! - fsyncMs);
    }

    rows.push({
      size,
      snapshotMiB: baseBytes / MiB,
      engineHeap: built.heap - before.heap,
      rss: afterLog.rss,
      logMedianMs: median(times),
      logMeanMs: mean(times),
      logCpuMs: median(cpu),
      rewriteCpuMs: median(rewriteCpu),
      recordBytes,
      compactMs,
      amortizedMs,
      logHeapDelta,
      rewriteMs: mean(rewrites),
      rewriteHeapPeak: peak - built.heap,
    });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const f = (x: number, d = 2) => x.toFixed(d);
console.log(`state file save cost per committed change (${CHANGES} log saves, ${BASELINE_CHANGES} full rewrites per size; ${VMS} VMs)`);
console.log('');
console.log(
  '| ended events | snapshot MiB | engine heap MiB | RSS after log saves MiB | log save median ms | log save mean ms | of which not fsync (median) ms | record bytes | compaction ms | log amortized ms | heap growth over log saves MiB | full rewrite mean ms | of which not fsync (median) ms | rewrite transient heap MiB |',
);
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.size} | ${f(r.snapshotMiB, 1)} | ${f(r.engineHeap, 0)} | ${f(r.rss, 0)} | ${f(r.logMedianMs)} | ${f(r.logMeanMs)} | ${f(r.logCpuMs, 3)} | ${f(r.recordBytes, 0)} | ${f(r.compactMs, 0)} | ${f(r.amortizedMs)} | ${f(r.logHeapDelta, 1)} | ${f(r.rewriteMs, 1)} | ${f(r.rewriteCpuMs, 1)} | ${f(r.rewriteHeapPeak, 0)} |`,
  );
}
if (rows.length > 1) {
  const [a, b] = [rows[0]!, rows.at(-1)!];
  console.log('');
  console.log(`from ${a.size} to ${b.size} ended events (x${b.size / a.size}):`);
  console.log(`  log save (mean):      x${f(b.logMeanMs / a.logMeanMs)}   (${f(a.logMeanMs)} -> ${f(b.logMeanMs)} ms)`);
  console.log(`  log save (amortized): x${f(b.amortizedMs / a.amortizedMs)}   (${f(a.amortizedMs)} -> ${f(b.amortizedMs)} ms)`);
  console.log(
    `  log save, not fsync:  x${f(b.logCpuMs / a.logCpuMs)}   (${f(a.logCpuMs, 3)} -> ${f(b.logCpuMs, 3)} ms; fsync time is the disk's, whatever the size)`,
  );
  console.log(`  full rewrite:         x${f(b.rewriteMs / a.rewriteMs)}   (${f(a.rewriteMs, 1)} -> ${f(b.rewriteMs, 1)} ms)`);
}
