// Helpers shared by the CLI tests: captured output, stack-trace checks, a port nobody listens on.
import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { Io } from '../../src/cli/errors.js';

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
export async function outputOf(child: ChildProcessByStdio<null | Writable, Readable, Readable>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr };
}
