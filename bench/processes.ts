// What the process-level benchmarks share: children started from the compiled CLI with their output kept,
// their CPU and memory read from /proc (Linux only), and percentiles.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export interface Started {
  child: ChildProcess;
  output: () => string;
}

/** Starts `node ARGS` in `cwd`, keeping what it prints; every child is added to `children` for the final kill. */
export function startProcess(children: ChildProcess[], cwd: string, args: string[]): Started {
  const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));
  return { child, output: () => out };
}

/** utime + stime in seconds, and VmRSS in bytes, from /proc. */
export function usage(pid: number): { cpu: number; rss: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat; after the command name, they are at 11 and 12. Clock ticks: 100 a second on Linux.
  const cpu = (Number(fields[11]) + Number(fields[12])) / 100;
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return { cpu, rss: rssKb * 1024 };
}

export function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)]!;
}

/** Compiles dist/ as an install has it, and checks the CLI is there. */
export function buildDist(repo: string, main: string): void {
  console.log('building dist/ …');
  const build = spawnSync(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: repo,
    stdio: 'inherit',
  });
  if (build.status !== 0 || !existsSync(main)) throw new Error('the build failed');
}

/** Runs the bench, then stops every child it started and removes its scratch folder, whatever happened. */
export async function runThenClean(run: () => Promise<void>, children: ChildProcess[], dir: string): Promise<void> {
  try {
    await run();
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    rmSync(dir, { recursive: true, force: true });
  }
}
