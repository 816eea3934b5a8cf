// Where a fleet's memory goes: builds one fleet as bench/fleet-scale.ts does (default 100,000 VMs),
// takes V8 heap snapshots, and prints the heap by kind of object (count, bytes, bytes per VM,
// largest first) twice: the fleet against the empty heap of the same process, then a rolling
// update of every availability set under way (one event per set) against the fleet alone.
// Run with `npm run bench:fleet-heap`; size with FLEET_SIZE=N; TOP=N rows (default 12).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { ManualClock } from '../src/shared/clock.js';
import { Engine } from '../src/emulator/engine/engine.js';
import { generateAvailabilitySets } from '../src/emulator/fleet/generator.js';

const SIZE = Number(process.env.FLEET_SIZE ?? 100_000);
const TOP = Number(process.env.TOP ?? 12);
const VMS_PER_SET = 10;

interface Snapshot {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

type Kinds = Map<string, { count: number; bytes: number }>;

/**
 * Self size and count per kind: "type:constructor" for objects, the type for strings, arrays and
 * code. Plain objects (constructor Object) are told apart by their first property names.
 */
function byKind(file: string): Kinds {
  const data = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = data.snapshot.meta.node_fields;
  const types = data.snapshot.meta.node_types[0];
  const width = fields.length;
  const [type, name, size, edgeCount] = ['type', 'name', 'self_size', 'edge_count'].map((f) => fields.indexOf(f)) as [
    number,
    number,
    number,
    number,
  ];
  const edgeFields = data.snapshot.meta.edge_fields;
  const edgeWidth = edgeFields.length;
  const [edgeType, edgeName] = ['type', 'name_or_index'].map((f) => edgeFields.indexOf(f)) as [number, number];
  const property = data.snapshot.meta.edge_types[0].indexOf('property');
  const kinds: Kinds = new Map();
  let edge = 0;
  for (let i = 0; i < data.nodes.length; i += width) {
    const t = types[data.nodes[i + type]!]!;
    const named = t === 'object' || t === 'closure' || t === 'hidden' || t === 'native';
    let key = named ? `${t}:${data.strings[data.nodes[i + name]!]}` : t;
    const edges = data.nodes[i + edgeCount]!;
    if (key === 'object:Object') {
      const props: string[] = [];
      for (let e = edge; e < edge + edges * edgeWidth && props.length < 3; e += edgeWidth) {
        if (data.edges[e + edgeType] === property) props.push(data.strings[data.edges[e + edgeName]!]!);
      }
      key = `{${props.join(', ')}${props.length === 3 ? ', …' : ''}}`;
    }
    edge += edges * edgeWidth;
    const entry = kinds.get(key) ?? { count: 0, bytes: 0 };
    entry.count += 1;
    entry.bytes += data.nodes[i + size]!;
    kinds.set(key, entry);
  }
  return kinds;
}

function snapshotKinds(dir: string, label: string): Kinds {
  const file = writeHeapSnapshot(join(dir, `${label}.heapsnapshot`));
  try {
    return byKind(file);
  } finally {
    rmSync(file, { force: true });
  }
}

function report(title: string, before: Kinds, after: Kinds): void {
  const rows = [...after]
    .map(([kind, { count, bytes }]) => {
      const base = before.get(kind) ?? { count: 0, bytes: 0 };
      return { kind, count: count - base.count, bytes: bytes - base.bytes };
    })
    .filter((r) => r.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
  const total = rows.reduce((sum, r) => sum + r.bytes, 0);
  console.log(`\n${title}: ${(total / 2 ** 20).toFixed(1)} MiB, ${(total / SIZE).toFixed(0)} bytes/VM`);
  console.log(`  ${'kind'.padEnd(44)} ${'count'.padStart(10)} ${'MiB'.padStart(8)} ${'B/VM'.padStart(7)} ${'share'.padStart(6)}`);
  for (const r of rows.slice(0, TOP)) {
    console.log(
      `  ${r.kind.slice(0, 44).padEnd(44)} ${r.count.toLocaleString('en').padStart(10)} ${(r.bytes / 2 ** 20).toFixed(1).padStart(8)} ` +
        `${(r.bytes / SIZE).toFixed(0).padStart(7)} ${((100 * r.bytes) / total).toFixed(1).padStart(5)}%`,
    );
  }
}

const dir = mkdtempSync(join(tmpdir(), 'forewarn-heap-'));
try {
  const baseline = snapshotKinds(dir, 'baseline');
  const fleet = generateAvailabilitySets({ sets: SIZE / VMS_PER_SET, vmsPerSet: VMS_PER_SET, hosts: SIZE / 5, faultDomainCount: 3 });
  const engine = new Engine({ clock: new ManualClock(Date.UTC(2026, 0, 5, 10)), fleet });
  // The specs the generator made are the caller's: only what the engine keeps counts.
  fleet.length = 0;
  const built = snapshotKinds(dir, 'built');
  console.log(
    `fleet-heap: ${SIZE.toLocaleString('en')} VMs, ${engine.fleet.tenants.size.toLocaleString('en')} tenants, node ${process.version}`,
  );
  report("the fleet, against this process's empty heap", baseline, built);
  for (const tenant of engine.fleet.tenants.keys()) engine.createOperation({ type: 'host-update', tenant });
  const rolling = snapshotKinds(dir, 'rolling');
  report(`${engine.eventsCreated.toLocaleString('en')} live events of a rolling update, against the fleet alone`, built, rolling);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
