// A SIGINT that arrives the moment the emulator says it is ready still stops it cleanly (exit 0),
// as a supervisor or test harness that stops it at once would send it. Before the fix, the handlers
// were installed only after the ready line, and about half of such signals killed the process.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { cliCommand } from '../support/cli.js';

const ROUNDS = 12;

test('SIGINT sent on the ready line stops the emulator with 0, every time', { timeout: 120_000 }, async () => {
  const outcomes: string[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const [cmd, argv] = cliCommand(['emulator', '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0', '--json']);
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.stdout.once('data', () => child.kill('SIGINT'));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.on('close', (c, s) => resolve([c, s])),
    );
    outcomes.push(code === 0 && /SIGINT: stopping/.test(stderr) ? 'clean' : `code ${code} signal ${signal}`);
  }
  assert.deepEqual(outcomes, Array(ROUNDS).fill('clean'));
});
