// IMDS throughput: GET /metadata/scheduledevents with keep-alive, driven by wrk (Debian's
// /usr/bin/wrk, `-t1 -c10`) from its own process, against three servers, each in its own process:
//   - bare:     a bare node:http server answering each path with the emulator's bytes for it (body and
//               ETag), the baseline: one body for 1 VM, each VM's own for 10k VMs;
//   - 1 VM:     the emulator's IMDS surface with one VM;
//   - 10k VMs:  the same with 10,000 VMs, a request per VM by path prefix in a shuffled order.
// The emulator runs with its rate limiter on (at a limit these rates never reach), so the limiter's
// cost is in the figures. A Lua script adds `Metadata: true` (and the path per request for 10k VMs)
// and reports wrk's summary. With `taskset` and 2+ cores the server runs on core 0 and wrk on core 1,
// so the load generator has a core of its own. Each server's CPU time (user + system, from
// process.cpuUsage() over IPC) around a run prices a request in server CPU alone.
// Per case: warm-up, then ROUNDS rounds alternating bare and emulator (drift hits both alike); the
// report gives medians, and the ratios are medians of the paired rounds' ratios.
// Env: BENCH_DURATION (s, default 10), BENCH_ROUNDS (default 5), BENCH_WARMUP (s, default 3).
// Goals: throughput >= 0.7 of bare; CPU per request < 1.2x bare.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const WRK = '/usr/bin/wrk';
const QUERY = '?api-version=2020-07-01';
const VMS = 10_000;
const THROUGHPUT_GOAL = 0.7;
const CPU_GOAL = 1.2;

const dir = mkdtempSync(join(tmpdir(), 'forewarn-bench-imds-'));
const children = new Set<ChildProcess>();
const pin = spawnSync('taskset', ['-c', '0', 'true']).status === 0 && availableParallelism() >= 2;
const SERVER_CPU = '0';
const LOAD_CPU = '1';

/** Runs `command args` on `cpu` when pinning is possible. */
function pinned(cpu: string, command: string, args: string[]): [string, string[]] {
  return pin ? ['taskset', ['-c', cpu, command, ...args]] : [command, args];
}

interface Server {
  name: string;
  port: number;
  child: ChildProcess;
}

async function startServer(name: string, ...args: string[]): Promise<Server> {
  const script = new URL('./imds-servers.ts', import.meta.url).pathname;
  const [command, argv] = pinned(SERVER_CPU, process.execPath, ['--import', 'tsx', script, ...args]);
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`server ${args[0]} exited with ${code}`)));
  });
  return { name, port, child };
}

/** The server's CPU time so far (user + system, µs), asked over IPC. */
function cpuOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m) => {
      const { user, system } = m as NodeJS.CpuUsage;
      resolve(user + system);
    });
    child.send('cpu');
  });
}

/** wrk's Lua: the Metadata header, the path (or a shuffled list of them), and a JSON summary line. */
function luaScript(paths: readonly string[]): string {
  const file = join(dir, `load-${paths.length}.lua`);
  const list = paths.map((p) => JSON.stringify(p)).join(',\n');
  const perRequest =
    paths.length === 1
      ? `wrk.path = ${JSON.stringify(paths[0])}\n`
      : // Requests are formatted once in init; request() only picks the next one.
        `local paths = {\n${list}\n}\nlocal reqs, n, i = {}, #paths, 0\n` +
        'function init(args)\n  for k = 1, n do reqs[k] = wrk.format("GET", paths[k]) end\nend\n' +
        'function request()\n  i = i % n + 1\n  return reqs[i]\nend\n';
  writeFileSync(
    file,
    'wrk.headers["Metadata"] = "true"\n' +
      perRequest +
      'function done(summary, latency, requests)\n' +
      '  local e = summary.errors\n' +
      '  io.write(string.format("BENCH {\\"requests\\":%d,\\"durationUs\\":%d,\\"p99Us\\":%d,\\"status\\":%d,\\"socket\\":%d}\\n",\n' +
      '    summary.requests, summary.duration, latency:percentile(99.0), e.status, e.connect + e.read + e.write + e.timeout))\n' +
      'end\n',
  );
  return file;
}

interface Result {
  rps: number;
  p99Ms: number;
  /** Responses with a status of 400 or more (wrk's count; no request here can get a 3xx). */
  non2xx: number;
  socketErrors: number;
  /** Server CPU (user + system) per request, µs. */
  cpuUs: number;
  /** Server CPU time over wall time: near 1 means the server, not wrk, was the limit. */
  busy: number;
}

async function load(server: Server, script: string, seconds: number): Promise<Result> {
  const cpuBefore = await cpuOf(server.child);
  const [command, argv] = pinned(LOAD_CPU, WRK, ['-t1', '-c10', `-d${seconds}s`, '-s', script, `http://127.0.0.1:${server.port}`]);
  const out = await new Promise<string>((resolve, reject) => {
    const wrk = spawn(command, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    wrk.stdout.on('data', (d: Buffer) => (text += d));
    wrk.once('error', reject);
    wrk.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited with ${code}:\n${text}`))));
  });
  const cpu = (await cpuOf(server.child)) - cpuBefore;
  const line = out.split('\n').find((l) => l.startsWith('BENCH '));
  if (line === undefined) throw new Error(`wrk printed no summary:\n${out}`);
  const s = JSON.parse(line.slice(6)) as { requests: number; durationUs: number; p99Us: number; status: number; socket: number };
  return {
    rps: s.requests / (s.durationUs / 1e6),
    p99Ms: s.p99Us / 1000,
    non2xx: s.status,
    socketErrors: s.socket,
    cpuUs: cpu / Math.max(1, s.requests),
    busy: cpu / s.durationUs,
  };
}

async function sample(port: number, path: string): Promise<{ body: string; etag: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { Metadata: 'true' } });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`warm-up ${path} answered ${res.status}: ${body}`);
  return { body, etag: res.headers.get('etag') ?? '' };
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Verdict {
  throughput: number;
  cpu: number;
}

async function compare(label: string, mode: string, paths: readonly string[]): Promise<Verdict> {
  const fw = await startServer('forewarn', mode);
  // The baseline answers each path with the very bytes forewarn answers for it: one body for 1 VM,
  // each VM's own for 10k (so both pay for looking a body up and for bodies that are not in cache).
  const answers: Record<string, { body: string; etag: string }> = {};
  for (const path of new Set(paths)) answers[path] = await sample(fw.port, path);
  const file = join(dir, `${mode}-bodies.json`);
  writeFileSync(file, JSON.stringify(answers));
  const base = await startServer('bare node:http', 'bare', file);
  for (const path of [paths[0]!, paths[paths.length - 1]!]) {
    const check = await sample(base.port, path);
    if (check.body !== answers[path]!.body || check.etag !== answers[path]!.etag)
      throw new Error(`the bare server does not answer ${path}'s bytes`);
  }
  const bytes = answers[paths[0]!]!;
  const script = luaScript(paths);
  try {
    await load(base, script, WARMUP);
    await load(fw, script, WARMUP);
    const bs: Result[] = [];
    const fs: Result[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      bs.push(await load(base, script, DURATION));
      fs.push(await load(fw, script, DURATION));
    }
    const throughput = median(fs.map((f, i) => f.rps / bs[i]!.rps));
    const cpu = median(fs.map((f, i) => f.cpuUs / bs[i]!.cpuUs));
    console.log(`${label} (${bytes.body.length}-byte body)`);
    console.log(row(fw.name, fs));
    console.log(row(base.name, bs));
    console.log(`  forewarn/bare: throughput ${throughput.toFixed(2)}, CPU per request ${cpu.toFixed(2)}x`);
    // Every request here is valid: anything but 2xx means a broken server, not a slow one.
    const refused = [...fs, ...bs].reduce((n, r) => n + r.non2xx, 0);
    if (refused > 0) throw new Error(`${label}: ${refused} answers were not 2xx`);
    return { throughput, cpu };
  } finally {
    fw.child.kill();
    base.child.kill();
  }
}

function row(name: string, rs: readonly Result[]): string {
  const m = (f: (r: Result) => number) => median(rs.map(f));
  const sum = (f: (r: Result) => number) => rs.reduce((a, r) => a + f(r), 0);
  return (
    `  ${name.padEnd(15)} ${m((r) => r.rps)
      .toFixed(0)
      .padStart(6)} req/s  p99 ${m((r) => r.p99Ms)
      .toFixed(2)
      .padStart(6)} ms` +
    `  CPU ${m((r) => r.cpuUs)
      .toFixed(1)
      .padStart(5)} µs/request  server core ${(m((r) => r.busy) * 100).toFixed(0).padStart(3)}% busy` +
    `  non-2xx ${sum((r) => r.non2xx)}  socket errors ${sum((r) => r.socketErrors)}`
  );
}

function goal(met: boolean): string {
  return met ? 'met' : 'NOT met';
}

process.once('exit', () => {
  for (const child of children) child.kill();
  rmSync(dir, { recursive: true, force: true });
});

try {
  console.log(
    `GET /metadata/scheduledevents, keep-alive, wrk -t1 -c10, ${ROUNDS} alternating ${DURATION} s rounds (medians), ` +
      `node ${process.version}, ${pin ? `server on CPU ${SERVER_CPU}, wrk on CPU ${LOAD_CPU}` : 'not pinned (no taskset or one core)'}`,
  );
  const eventsPath = `/metadata/scheduledevents${QUERY}`;
  const one = await compare('1 VM', 'forewarn-1', [eventsPath]);
  // A fixed shuffle (xorshift), so each run sends the same sequence of VMs.
  const order = Array.from({ length: VMS }, (_, i) => i);
  let seed = 0x9e3779b9;
  for (let i = order.length - 1; i > 0; i--) {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    const j = (seed >>> 0) % (i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const many = await compare(
    '10,000 VMs by path prefix',
    'forewarn-10k',
    order.map((i) => `/vms/vm${i}${eventsPath}`),
  );
  const throughputMet = one.throughput >= THROUGHPUT_GOAL && many.throughput >= THROUGHPUT_GOAL;
  const cpuMet = one.cpu < CPU_GOAL && many.cpu < CPU_GOAL;
  console.log(`goals: throughput ≥ ${THROUGHPUT_GOAL} of bare ${goal(throughputMet)}; CPU per request < ${CPU_GOAL}× bare ${goal(cpuMet)}`);
} catch (err) {
  console.error(`bench failed: ${(err as Error).message}`);
  process.exitCode = 1;
}
