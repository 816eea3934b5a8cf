// Helpers shared by the CLI tests: captured output, stack-trace checks, a port nobody listens on.
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
