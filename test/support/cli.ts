// Helpers shared by the CLI tests: the CLI as a process, captured output, stack-trace checks, a port nobody listens on.
import { spawn, type ChildProcessByStdio, type StdioOptions } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Io } from '../../src/cli/errors.js';
import { waitFor } from './wait.js';

/** The repository's root, with a trailing slash. */
export const repo = fileURLToPath(new URL('../..', import.meta.url));

/**
 * How to start the CLI on the current source: the JavaScript build of it that scripts/run-tests.mjs makes
 * for the run (FOREWARN_TEST_CLI), which starts in half the time, or else src/cli/main.ts through tsx.
 */
export function cliCommand(args: readonly string[]): [string, string[]] {
  const built = process.env.FOREWARN_TEST_CLI;
  return [process.execPath, [...(built ? [built] : ['--import', 'tsx', join(repo, 'src', 'cli', 'main.ts')]), ...args]];
}

export interface EmulatorArgs {
  /** Loopback ports; 0 (the default) picks free ones. */
  ports?: { imds: number; control: number };
  /** --state FILE */
  state?: string;
  rateLimit?: number;
  logLevel?: 'silent' | 'warn' | 'info';
}

/** `forewarn emulator` on loopback with a manual clock, and the options given. */
export function emulatorArgs(options: EmulatorArgs = {}): string[] {
  const { imds, control } = options.ports ?? { imds: 0, control: 0 };
  const args = ['emulator', '--imds', `127.0.0.1:${imds}`, '--control', `127.0.0.1:${control}`, '--clock', 'manual'];
  if (options.state !== undefined) args.push('--state', options.state);
  if (options.rateLimit !== undefined) args.push('--rate-limit', String(options.rateLimit));
  if (options.logLevel !== undefined) args.push('--log-level', options.logLevel);
  return args;
}

/** What the CLI reads from the environment: a test's process starts without this run's values. */
const CLI_ENV = ['FOREWARN_ENDPOINT', 'FOREWARN_CONTROL', 'FOREWARN_TOKEN'];

export interface SpawnCliOptions {
  /** Added to the environment, after FOREWARN_ENDPOINT, FOREWARN_CONTROL and FOREWARN_TOKEN are taken out of it. */
  env?: Record<string, string | undefined>;
  /** 'pipe' to write to its stdin; by default it reads nothing. */
  stdin?: 'ignore' | 'pipe';
}

/** `forewarn ARGS` as a process in the repository, its output piped. */
export function spawnCli(
  args: readonly string[],
  options: SpawnCliOptions & { stdin: 'pipe' },
): ChildProcessByStdio<Writable, Readable, Readable>;
export function spawnCli(args: readonly string[], options?: SpawnCliOptions): ChildProcessByStdio<null, Readable, Readable>;
export function spawnCli(args: readonly string[], options: SpawnCliOptions = {}): ChildProcessByStdio<Writable | null, Readable, Readable> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of CLI_ENV) delete env[name];
  const [cmd, argv] = cliCommand(args);
  const stdio: StdioOptions = [options.stdin ?? 'ignore', 'pipe', 'pipe'];
  return spawn(cmd, argv, { cwd: repo, env: { ...env, ...options.env }, stdio }) as ChildProcessByStdio<
    Writable | null,
    Readable,
    Readable
  >;
}

/** Runs `forewarn ARGS` to its end. */
export function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return outputOf(spawnCli(args, { env }));
}

/** A `forewarn` process that never outlives the tests: its output kept, its exit awaited. Kill `CliProcess.all` in an after hook. */
export class CliProcess {
  static readonly all = new Set<CliProcess>();
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(args: readonly string[], env: Record<string, string> = {}) {
    this.child = spawnCli(args, { env });
    this.child.stdout.on('data', (d: Buffer) => (this.stdout += d));
    this.child.stderr.on('data', (d: Buffer) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    CliProcess.all.add(this);
    void this.exited.then(() => CliProcess.all.delete(this));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Waits until stdout matches, failing with what was printed if the process ends first or the time runs out. */
  async waitForOutput(pattern: RegExp, timeoutMs = 20_000): Promise<RegExpExecArray> {
    const seen = () => `${pattern} in the output\n--- stdout:\n${this.stdout.slice(-4000)}\n--- stderr:\n${this.stderr.slice(-4000)}`;
    return waitFor(
      seen,
      () => {
        const match = pattern.exec(this.stdout);
        if (!match && this.child.stdout.readableEnded) throw new Error(`the process closed its output before printing ${seen()}`);
        return match ?? undefined;
      },
      timeoutMs,
    );
  }

  /** Sends the signal and resolves to the exit code; after `timeoutMs` it kills the process and fails. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<number | null> {
    if (this.running) this.child.kill(signal);
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref());
    const code = await Promise.race([this.exited, timer]);
    if (code === 'timeout') {
      this.child.kill('SIGKILL');
      throw new Error(`process did not exit within ${timeoutMs} ms of ${signal}`);
    }
    return code;
  }

  /** SIGKILLs every process still running but those spared: for an after hook. */
  static killAll(...spared: CliProcess[]): void {
    for (const p of CliProcess.all) if (!spared.includes(p)) p.child.kill('SIGKILL');
  }
}

/** An Io that keeps what a command prints. */
export function captureIo(env: Record<string, string> = {}): Io & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    env,
    stdout: (s: string) => void (io.out += s),
    stderr: (s: string) => void (io.err += s),
  };
  return io;
}

export function assertNoStack(text: string): void {
  assert.doesNotMatch(text, /^\s+at /m, `stack trace in: ${text}`);
}

/** A port nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Waits for a spawned process to close, with everything it printed. */
export async function outputOf(
  child: ChildProcessByStdio<null | Writable, Readable, Readable>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr };
}
