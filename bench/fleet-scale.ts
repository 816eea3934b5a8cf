// Fleets of 10,000, 100,000 and 1,000,000 VMs on the manual clock: a rolling host update across
// every availability set plus a host hardware failure. Each size runs in a process of its own (so
// its peak RSS is its own) and prints build time, memory per VM, the time to render one VM's
// document, and the same simulation with 1 s ticks, 1 min ticks and one single advance: if cost
// followed fleet size × clock ticks the 1 s run would be far slower; it follows the number of
// changes instead. The smallest size is the baseline: per-change cost at the largest must stay
// within 1.5× of it, so cost grows linearly with the fleet.
// Run with `npm run bench:fleet`; sizes with FLEET_SIZES=10000,100000,1000000.
// Goals: 1M per-change cost within 1.5× of 10k; the slowest 1M run under 20 s; under 2 GiB peak RSS.
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ManualClock } from '../src/shared/clock.js';
import { Engine } from '../src/emulator/engine/engine.js';
import { MAX_PAGE_LIMIT } from '../src/emulator/engine/paging.js';
import { generateAvailabilitySets } from '../src/emulator/fleet/generator.js';
import { renderDocument, serializeDocument } from '../src/protocol/render.js';

const SIZES = (process.env.FLEET_SIZES ?? '10000,100000,1000000').split(',').map(Number);
const VMS_PER_SET = 10;
const START = Date.UTC(2026, 0, 5, 10, 0, 0);
const HORIZON_MS = 2 * 60 * 60 * 1000; // 3 fault domains take about 50 min; two hours is plenty
const gc = (globalThis as { gc?: () => void }).gc;
// The parent only spawns; each size runs with --expose-gc in its own process.

function heapMiB(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

function build(size: number) {
  const t0 = performance.now();
  const fleet = generateAvailabilitySets({ sets: size / VMS_PER_SET, vmsPerSet: VMS_PER_SET, hosts: size / 5, faultDomainCount: 3 });
  const clock = new ManualClock(START);
  // The default history limit, as a user runs it: the totals come from counters, not from history.
  const engine = new Engine({ clock, fleet });
  return { engine, clock, ms: performance.now() - t0 };
}

/** Starts every rollout and the failure, then runs two simulated hours in ticks of `tickMs`. */
function simulate(size: number, tickMs: number) {
  const { engine, clock } = build(size);
  let documentChanges = 0;
  engine.onChange((vms) => (documentChanges += vms.length));
  const t0 = performance.now();
  for (const tenant of engine.fleet.tenants.keys()) engine.createOperation({ type: 'host-update', tenant });
  engine.createOperation({ type: 'hardware-failure', host: 'host0' });
  for (let t = 0; t < HORIZON_MS; t += tickMs) {
    clock.advance(Math.min(tickMs, HORIZON_MS - t));
    engine.tick();
  }
  const ms = performance.now() - t0;
  const unfinished = runningOperations(engine);
  return { ms, documentChanges, events: engine.eventsCreated, unfinished, ticks: Math.ceil(HORIZON_MS / tickMs) };
}

/** Operations still running: finished ones leave history past its limit, running ones never do. */
function runningOperations(engine: Engine): number {
  let n = 0;
  let before: string | undefined;
  do {
    const page = engine.operations({ limit: MAX_PAGE_LIMIT, before, status: 'running' });
    n += page.items.length;
    before = page.next ?? undefined;
  } while (before !== undefined);
  return n;
}

function renderCost(engine: Engine): number {
  // A VM with a live event, so there is something to render.
  const name = engine.fleet.vms.keys().next().value!;
  const rounds = 20_000;
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) {
    const doc = engine.documentFor(name);
    serializeDocument(renderDocument(doc.incarnation, doc.events, '2020-07-01'));
  }
  return ((performance.now() - t0) * 1000) / rounds;
}

interface SizeResult {
  size: number;
  buildMs: number;
  bytesPerVm: number;
  heapMiB: number;
  renderUs: number;
  events: number;
  documentChanges: number;
  runs: { label: string; ticks: number; ms: number; unfinished: number; documentChanges: number }[];
  peakRssMiB: number;
}

/** One size, in this process: the parent reads the JSON line. */
function measure(size: number): SizeResult {
  // One fleet at a time: this one is garbage once measured, and each run builds its own.
  const { heap, buildMs, renderUs } = (() => {
    const before = heapMiB();
    const built = build(size);
    const heap = heapMiB() - before;
    built.engine.createOperation({ type: 'freeze', vms: [built.engine.fleet.vms.keys().next().value!] });
    return { heap, buildMs: built.ms, renderUs: renderCost(built.engine) };
  })();
  const runs: SizeResult['runs'] = [];
  let events = 0;
  let documentChanges = 0;
  for (const [label, tickMs] of [
    ['1 s ticks', 1000],
    ['1 min ticks', 60_000],
    ['one advance', HORIZON_MS],
  ] as const) {
    heapMiB();
    const run = simulate(size, tickMs);
    runs.push({ label, ticks: run.ticks, ms: run.ms, unfinished: run.unfinished, documentChanges: run.documentChanges });
    events = run.events;
    documentChanges = run.documentChanges;
  }
  return {
    size,
    buildMs,
    bytesPerVm: (heap * 2 ** 20) / size,
    heapMiB: heap,
    renderUs,
    events,
    documentChanges,
    runs,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
  };
}

const childSize = process.argv.indexOf('--size');
if (childSize !== -1) {
  console.log(JSON.stringify(measure(Number(process.argv[childSize + 1]))));
} else {
  console.log(`fleet-scale: availability sets of ${VMS_PER_SET} VMs over 3 fault domains, 1 host per 5 VMs, node ${process.version}`);
  const results: SizeResult[] = [];
  for (const size of SIZES) {
    const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--size', String(size)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 2 ** 20,
    });
    if (child.status !== 0) {
      console.log(`\n${size.toLocaleString('en')} VMs: the run failed (exit ${child.status ?? child.signal})`);
      process.exitCode = 1;
      continue;
    }
    const r = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as SizeResult;
    results.push(r);
    console.log(`\n${size.toLocaleString('en')} VMs (${(size / VMS_PER_SET).toLocaleString('en')} availability sets)`);
    console.log(`  build                ${r.buildMs.toFixed(0).padStart(7)} ms`);
    console.log(`  memory               ${r.bytesPerVm.toFixed(0).padStart(7)} bytes/VM  (${r.heapMiB.toFixed(0)} MiB heap for the fleet)`);
    console.log(`  peak RSS             ${r.peakRssMiB.toFixed(0).padStart(7)} MiB (the whole process, all runs)`);
    console.log(`  render one document  ${r.renderUs.toFixed(1).padStart(7)} µs`);
    console.log(
      `  rolling update of every set + a host failure: ${r.events.toLocaleString('en')} events, ${r.documentChanges.toLocaleString('en')} document changes`,
    );
    const hours = HORIZON_MS / 3_600_000;
    for (const run of r.runs) {
      console.log(
        `  ${run.label.padEnd(12)} ${String(run.ticks).padStart(5)} ticks  ${run.ms.toFixed(0).padStart(6)} ms  ` +
          `${(run.ms / hours).toFixed(0).padStart(6)} ms per simulated hour  ${((run.ms * 1000) / run.documentChanges).toFixed(2)} µs per document change` +
          (run.unfinished > 0 ? `  (${run.unfinished} operations unfinished!)` : ''),
      );
    }
  }
  if (results.length >= 2) {
    const perChange = (r: SizeResult) => (r.runs[0]!.ms * 1000) / r.runs[0]!.documentChanges;
    const base = results[0]!;
    const baseBuildUs = (base.buildMs * 1000) / base.size;
    console.log(`\nagainst ${base.size.toLocaleString('en')} VMs, the baseline of this run:`);
    console.log('         VMs   per change (1 s ticks)   build per VM     heap per VM');
    for (const r of results) {
      const buildUs = (r.buildMs * 1000) / r.size;
      console.log(
        `  ${r.size.toLocaleString('en').padStart(10)}  ${perChange(r).toFixed(2).padStart(7)} µs  ×${(perChange(r) / perChange(base)).toFixed(2)}` +
          `    ${buildUs.toFixed(2).padStart(6)} µs  ×${(buildUs / baseBuildUs).toFixed(2)}` +
          `    ${r.bytesPerVm.toFixed(0).padStart(5)} B  ×${(r.bytesPerVm / base.bytesPerVm).toFixed(2)}`,
      );
    }
    const largest = results.at(-1)!;
    if (largest.size >= 1_000_000) {
      const ratio = perChange(largest) / perChange(base);
      const wall = Math.max(...largest.runs.map((run) => run.ms));
      console.log(
        `goals at ${largest.size.toLocaleString('en')} VMs: per-change cost within 1.5× of ${base.size.toLocaleString('en')} ${ratio <= 1.5 ? 'met' : 'NOT met'} (×${ratio.toFixed(2)}); ` +
          `under 20 s ${wall < 20_000 ? 'met' : 'NOT met'} (${(wall / 1000).toFixed(1)} s, slowest run); ` +
          `under 2 GiB ${largest.peakRssMiB < 2048 ? 'met' : 'NOT met'} (${largest.peakRssMiB.toFixed(0)} MiB peak RSS)`,
      );
    }
  }
}
