// `forewarn emulator --json` as another language's test suite would start it: a process, its ready line, SIGINT.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cliCommand, repo } from '../support/cli.js';

export interface ReadyLine {
  event: string;
  imdsUrl: string;
  controlUrl: string;
  dashboardUrl: string;
  pid: number;
  version: string;
}

export interface SpawnedEmulator {
  child: ChildProcessWithoutNullStreams;
  ready: ReadyLine;
  stdout(): string;
  stderr(): string;
  /** Sends the signal and resolves to the exit code (null if it had to be killed after 10 s). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `forewarn emulator ARGS --json` on free ports (unless ARGS name them) and waits for its ready line. */
export async function spawnEmulator(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<SpawnedEmulator> {
  const ports = [
    ...(args.includes('--imds') ? [] : ['--imds', '127.0.0.1:0']),
    ...(args.includes('--control') ? [] : ['--control', '127.0.0.1:0']),
  ];
  const [cmd, argv] = cliCommand(['emulator', ...args, ...ports, '--json']);
  return spawnReady(cmd, argv, env);
}

/** Runs a command that ends in `forewarn emulator … --json` and waits for the ready line. */
export async function spawnReady(
  cmd: string,
  argv: readonly string[],
  env: Record<string, string | undefined> = {},
): Promise<SpawnedEmulator> {
  const child = spawn(cmd, argv, { cwd: repo, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const ready = await new Promise<ReadyLine>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line within 20 s; stdout: ${stdout}; stderr: ${stderr}`)), 20_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
      const newline = stdout.indexOf('\n');
      if (newline < 0) return;
      clearTimeout(timer);
      try {
        resolve(JSON.parse(stdout.slice(0, newline)) as ReadyLine);
      } catch (err) {
        reject(new Error(`the first stdout line is not JSON: ${stdout}; ${(err as Error).message}`));
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before its ready line; stderr: ${stderr}`));
    });
  });
  return {
    child,
    ready,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop(signal = 'SIGINT') {
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return child.signalCode === 'SIGKILL' ? null : code;
    },
  };
}
