// Requests per second and p99 latency of GET /metadata/scheduledevents with keep-alive,
// for the emulator (1 VM; 10,000 VMs by path prefix) against a bare node:http server
// returning the same bytes, measured in the same run. Goal: ratio >= 0.7.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const QUERY = '?api-version=2020-07-01';
const HEADERS = { Metadata: 'true' };

async function startServer(...args: string[]): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./imds-servers.ts', import.meta.url).pathname, ...args], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`server ${args[0]} exited with ${code}`)));
  });
  return { port, child };
}

interface Result {
  rps: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** Server CPU (user + system) per request, in microseconds. */
  cpuUs: number;
}

function cpuOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m) => {
      const { user, system } = m as NodeJS.CpuUsage;
      resolve(user + system);
    });
    child.send('cpu');
  });
}

async function load({ port, child }: { port: number; child: ChildProcess }, paths: () => string): Promise<Result> {
  const cpuBefore = await cpuOf(child);
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: DURATION,
    headers: HEADERS,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: paths() }) }],
  });
  const cpu = (await cpuOf(child)) - cpuBefore;
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    cpuUs: cpu / Math.max(1, result.requests.total),
  };
}

async function sample(port: number, path: string) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: HEADERS });
  if (res.status !== 200) throw new Error(`warm-up ${path} answered ${res.status}`);
  return { body: await res.text(), etag: res.headers.get('etag') ?? '' };
}

async function compare(label: string, mode: string, paths: () => string, samplePath: string) {
  const fw = await startServer(mode);
  const bytes = await sample(fw.port, samplePath);
  const file = join(mkdtempSync(join(tmpdir(), 'forewarn-bench-')), 'body.json');
  writeFileSync(file, JSON.stringify(bytes));
  const base = await startServer('bare', file);
  try {
    // Warm both up, then alternate rounds so drift on a noisy machine hits both alike; report medians.
    await load(base, paths);
    await load(fw, paths);
    const bs: Result[] = [];
    const fs: Result[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      bs.push(await load(base, paths));
      fs.push(await load(fw, paths));
    }
    const b = median(bs);
    const f = median(fs);
    const ratio = f.rps / b.rps;
    console.log(`${label}`);
    console.log(row('forewarn', f));
    console.log(row('bare node:http', b));
    console.log(
      `  ratio ${ratio.toFixed(2)} in req/s; server CPU per request ${(f.cpuUs / b.cpuUs).toFixed(2)}x the bare server's` +
        (f.non2xx + f.errors > 0 ? `  (forewarn non-2xx ${f.non2xx}, errors ${f.errors})` : ''),
    );
    return ratio;
  } finally {
    fw.child.kill();
    base.child.kill();
  }
}

console.log(
  `GET /metadata/scheduledevents, keep-alive, ${CONNECTIONS} connections, median of ${ROUNDS} alternating ${DURATION} s runs, node ${process.version}`,
);
const one = await compare('1 VM', 'forewarn-1', () => `/metadata/scheduledevents${QUERY}`, `/metadata/scheduledevents${QUERY}`);
const many = await compare(
  '10,000 VMs by path prefix',
  'forewarn-10k',
  () => `/vms/vm${Math.floor(Math.random() * 10_000)}/metadata/scheduledevents${QUERY}`,
  `/vms/vm0/metadata/scheduledevents${QUERY}`,
);
const goal = 0.7;
console.log(`goal: ratio >= ${goal}: 1 VM ${one >= goal ? 'met' : 'NOT met'}, 10,000 VMs ${many >= goal ? 'met' : 'NOT met'}`);

function row(name: string, r: Result): string {
  return `  ${name.padEnd(15)} ${r.rps.toFixed(0).padStart(6)} req/s  p99 ${String(r.p99).padStart(3)} ms  server CPU ${r.cpuUs.toFixed(1).padStart(5)} µs/request`;
}

function median(results: Result[]): Result {
  return [...results].sort((x, y) => x.rps - y.rps)[Math.floor(results.length / 2)]!;
}
