// The README's client example is a real program: run it against the emulator and watch it prepare, approve and recover.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ManualClock } from '../src/shared/clock.js';
import { Emulator } from '../src/emulator/emulator.js';
import { waitFor } from './support/wait.js';

const repo = fileURLToPath(new URL('..', import.meta.url));
const clientEntry = fileURLToPath(new URL('../src/client/index.ts', import.meta.url));

/** The ```ts block right after `<!-- readme-example -->`. */
function readmeExample(readme: string): string {
  const match = /<!-- readme-example -->\r?\n```ts\r?\n([\s\S]*?)\r?\n```/.exec(readme);
  assert.ok(match, 'README.md has no ```ts block right after <!-- readme-example -->');
  return match[1]!;
}

test('the README example is short, imports forewarn/client, and uses watch()', () => {
  const code = readmeExample(readFileSync(join(repo, 'README.md'), 'utf8'));
  assert.ok(code.split('\n').length <= 12, `${code.split('\n').length} lines`);
  assert.match(code, /from 'forewarn\/client'/);
  assert.match(code, /\.watch\(/);
});

test('the README example prepares for, approves and recovers from a freeze on the emulator', { timeout: 60_000 }, async () => {
  const code = readmeExample(readFileSync(join(repo, 'README.md'), 'utf8'));
  const program = code.replaceAll("'forewarn/client'", JSON.stringify(clientEntry));
  assert.notEqual(program, code, 'the example does not import from forewarn/client');

  const dir = mkdtempSync(join(tmpdir(), 'forewarn-readme-'));
  // Top-level await needs ESM; outside the repo nothing else says the .ts file is a module.
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  const file = join(dir, 'example.ts');
  writeFileSync(file, program);

  const emulator = await Emulator.create({ clock: 'manual', rateLimit: 0 });
  const { imdsUrl } = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: repo,
    env: { ...process.env, FOREWARN_ENDPOINT: imdsUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const output = () => `stdout: ${stdout}; stderr: ${stderr}`;
  try {
    const [id] = emulator.engine.createOperation({ type: 'freeze', vms: ['vm0'] }).events;
    assert.ok(id);
    await waitFor(`prepare ${id}; ${output()}`, () => stdout.includes(`prepare ${id}\n`), 20_000);
    // The program approved it: it starts now instead of at NotBefore, 15 minutes away.
    await waitFor(`${id} Started; ${output()}`, () => emulator.engine.event(id).status === 'Started', 20_000);
    assert.deepEqual(
      emulator.engine.event(id).approvals.map((a) => a.vm),
      ['vm0'],
    );

    const endsAt = emulator.engine.event(id).endsAt;
    assert.ok(endsAt !== null);
    (emulator.clock as ManualClock).advance(endsAt - emulator.clock.now() + 1_000);
    emulator.engine.tick();
    await waitFor(`recover ${id}; ${output()}`, () => stdout.includes(`recover ${id}\n`), 20_000);
    assert.equal(stdout, `prepare ${id}\nrecover ${id}\n`);
  } finally {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
