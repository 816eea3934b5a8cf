// Fleets of 1,000, 10,000 and 100,000 VMs on the manual clock: a rolling host update across
// every availability set plus a host hardware failure. Prints build time, engine time per
// simulated hour, memory per VM and the time to render one VM's document, and runs the same
// simulation with 1 s ticks, 1 min ticks and one single advance: if cost followed fleet size ×
// clock ticks the 1 s run would be far slower; it follows the number of changes instead.
// Run with `npm run bench:fleet` (node --expose-gc). Goals: 100,000 VMs under 1 GiB, the full
// rolling update of that fleet simulated in under 10 s.
import { performance } from 'node:perf_hooks';
import { ManualClock } from '../src/emulator/engine/clock.js';
import { Engine, type Operation } from '../src/emulator/engine/engine.js';
import { MAX_PAGE_LIMIT } from '../src/emulator/engine/paging.js';
import { generateAvailabilitySets } from '../src/emulator/fleet-generator.js';
import { renderDocument, serializeDocument } from '../src/protocol/render.js';

const SIZES = (process.env.FLEET_SIZES ?? '1000,10000,100000').split(',').map(Number);
const VMS_PER_SET = 10;
const START = Date.UTC(2026, 0, 5, 10, 0, 0);
const HORIZON_MS = 2 * 60 * 60 * 1000; // 3 fault domains take about 50 min; two hours is plenty
const gc = (globalThis as { gc?: () => void }).gc;

function heapMiB(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

function build(size: number) {
  const t0 = performance.now();
  const fleet = generateAvailabilitySets({ sets: size / VMS_PER_SET, vmsPerSet: VMS_PER_SET, hosts: size / 5, faultDomainCount: 3 });
  const clock = new ManualClock(START);
  // Keeps every finished operation, so the totals below count them all.
  const engine = new Engine({ clock, fleet, historyLimit: size });
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
  const ops = allOperations(engine);
  const unfinished = ops.filter((op) => op.status !== 'completed').length;
  const events = ops.reduce((n, op) => n + op.events.length, 0);
  return { engine, ms, documentChanges, events, unfinished, ticks: Math.ceil(HORIZON_MS / tickMs) };
}

function allOperations(engine: Engine): Operation[] {
  const all: Operation[] = [];
  let before: string | undefined;
  do {
    const page = engine.operations({ limit: MAX_PAGE_LIMIT, before });
    all.push(...page.items);
    before = page.next ?? undefined;
  } while (before !== undefined);
  return all;
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

console.log(`fleet-scale: availability sets of ${VMS_PER_SET} VMs over 3 fault domains, 1 host per 5 VMs, node ${process.version}`);
if (!gc) console.log('(run with node --expose-gc for steady memory figures)');
for (const size of SIZES) {
  const before = heapMiB();
  const built = build(size);
  const heap = heapMiB() - before;
  built.engine.createOperation({ type: 'freeze', vms: [built.engine.fleet.vms.keys().next().value!] });
  const renderUs = renderCost(built.engine);

  const perSecond = simulate(size, 1000);
  const perMinute = simulate(size, 60_000);
  const once = simulate(size, HORIZON_MS);
  const hours = HORIZON_MS / 3_600_000;
  console.log(`\n${size.toLocaleString('en')} VMs (${(size / VMS_PER_SET).toLocaleString('en')} availability sets)`);
  console.log(`  build                ${built.ms.toFixed(0).padStart(7)} ms`);
  console.log(`  memory               ${((heap * 2 ** 20) / size).toFixed(0).padStart(7)} bytes/VM  (${heap.toFixed(0)} MiB heap for the fleet)`);
  console.log(`  render one document  ${renderUs.toFixed(1).padStart(7)} µs`);
  console.log(`  rolling update of every set + a host failure: ${once.events.toLocaleString('en')} events, ${once.documentChanges.toLocaleString('en')} document changes`);
  for (const [label, run] of [
    ['1 s ticks', perSecond],
    ['1 min ticks', perMinute],
    ['one advance', once],
  ] as const) {
    console.log(
      `  ${label.padEnd(12)} ${String(run.ticks).padStart(5)} ticks  ${run.ms.toFixed(0).padStart(6)} ms  ` +
        `${(run.ms / hours).toFixed(0).padStart(6)} ms per simulated hour  ${((run.ms * 1000) / run.documentChanges).toFixed(2)} µs per document change` +
        (run.unfinished > 0 ? `  (${run.unfinished} operations unfinished!)` : ''),
    );
  }
  if (size >= 100_000) {
    console.log(`  goals: memory under 1 GiB ${heap < 1024 ? 'met' : 'NOT met'}; full rolling update under 10 s ${once.ms < 10_000 && perSecond.ms < 10_000 ? 'met' : 'NOT met'}`);
  }
}
