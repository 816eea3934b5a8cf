// Churn soak: a real emulator process with --state on disk, driven over HTTP by create/cancel
// cycles for 600 s (`--seconds N` to shorten). Prints cycles per second, the process's RSS and
// the state file's size every minute, then the first and the last minute side by side: with
// the save cost following what changed and history bounded, the rate and RSS stay flat.
// Run with `npm run bench:soak [-- --seconds N] [-- --workers N]`.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cliCommand, emulatorArgs, repo } from '../test/support/cli.js';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const value = Number(process.argv[i + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} takes a positive number, got ${process.argv[i + 1]}`);
  return value;
}

const SECONDS = flag('seconds', 600);
const WORKERS = flag('workers', 4);
const PERIOD_MS = Math.min(60_000, SECONDS * 1000);
const dir = mkdtempSync(join(tmpdir(), 'forewarn-soak-'));
const statePath = join(dir, 'state.json');

const [cmd, argv] = cliCommand(emulatorArgs({ state: statePath, logLevel: 'warn' }));
const child = spawn(cmd, argv, { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] });
const stop = () => {
  child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
};

const control = await new Promise<string>((resolve, reject) => {
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    const url = /^Control:\s+(http:\/\/\S+)$/m.exec(out)?.[1];
    if (url) resolve(url);
  });
  child.once('exit', (code) => reject(new Error(`the emulator exited (${code}) before it listened`)));
});

async function post(path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(control + path, {
    method: 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const json = (await res.json()) as unknown;
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Resident memory of the emulator process, from /proc (Linux). */
function rssMiB(): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

let cycles = 0;
let running = true;
async function worker(vm: string): Promise<void> {
  while (running) {
    const op = (await post('/v1/operations', { type: 'freeze', vms: [vm] })) as { events: string[] };
    await post(`/v1/events/${op.events[0]}/cancel`);
    cycles++;
  }
}

// Each worker churns its own VM, so the cycles never collide.
const vms = Array.from({ length: WORKERS }, (_, i) => `soak${i}`);
for (const name of vms) await post('/v1/vms', { name });

const rows: { minute: number; rate: number; rss: number; fileKiB: number }[] = [];
console.log(`churn soak: ${SECONDS} s, ${WORKERS} workers, state in ${statePath}`);
console.log('period  cycles/s  RSS MiB  state KiB');
const started = performance.now();
const workers = vms.map(worker);
let last = 0;
const periods = Math.ceil((SECONDS * 1000) / PERIOD_MS);
for (let p = 1; p <= periods; p++) {
  await new Promise((resolve) => setTimeout(resolve, PERIOD_MS));
  const done = cycles;
  const row = { minute: p, rate: (done - last) / (PERIOD_MS / 1000), rss: rssMiB(), fileKiB: statSync(statePath).size / 1024 };
  last = done;
  rows.push(row);
  console.log(
    `${String(p).padStart(6)}  ${row.rate.toFixed(1).padStart(8)}  ${row.rss.toFixed(1).padStart(7)}  ${row.fileKiB.toFixed(0).padStart(9)}`,
  );
}
running = false;
await Promise.allSettled(workers);
const first = rows[0]!;
const final = rows.at(-1)!;
console.log(`total: ${cycles} cycles in ${((performance.now() - started) / 1000).toFixed(0)} s`);
console.log(`first period: ${first.rate.toFixed(1)} cycles/s, RSS ${first.rss.toFixed(1)} MiB`);
console.log(`last period:  ${final.rate.toFixed(1)} cycles/s, RSS ${final.rss.toFixed(1)} MiB`);
stop();
