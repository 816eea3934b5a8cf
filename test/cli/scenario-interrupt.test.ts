// Ctrl-C on `forewarn scenario run`: the run stops (remotely too), exit 130, no stack trace.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Emulator } from '../../src/emulator/emulator.js';
import { assertNoStack, spawnCli } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

const dir = tempDir('scenario-int');
// Realistic timing: the second step is 15 minutes away, so the run is still going when Ctrl-C comes.
const story = join(dir, 'slow.yaml');
writeFileSync(
  story,
  [
    'name: slow',
    'description: a freeze, then a long wait',
    'fleet: { vms: [{ name: app0 }] }',
    'steps:',
    '  - at: 0',
    '    operation: { type: freeze, vms: [app0] }',
    '    as: f',
    '  - at: 15m',
    '    expect: { vm: app0, events: [] }',
    '',
  ].join('\n'),
);

/** Runs the CLI, sends SIGINT once stdout matches `when`, and resolves to how it ended. */
async function interrupt(args: string[], when: RegExp) {
  const child = spawnCli(args);
  let stdout = '';
  let stderr = '';
  let sent = false;
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  child.stdout.on('data', (d: Buffer) => {
    stdout += d;
    if (!sent && when.test(stdout)) {
      sent = true;
      child.kill('SIGINT');
    }
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(killer);
  assert.ok(sent, `never saw ${when}; stdout: ${stdout}; stderr: ${stderr}`);
  return { code, stdout, stderr };
}

test('scenario run --control: Ctrl-C cancels the run on the emulator and exits 130', { timeout: 60_000 }, async () => {
  const emulator = await Emulator.create({ clock: 'system', logger: false });
  const { controlUrl } = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
  try {
    const { code, stdout, stderr } = await interrupt(['scenario', 'run', story, '--control', controlUrl], /Ctrl-C cancels it\n/);
    assert.equal(code, 130, `stdout: ${stdout}; stderr: ${stderr}`);
    const run = new RegExp(`^run (\\S+): ${controlUrl}/v1/scenarios/(\\S+); Ctrl-C cancels it$`, 'm').exec(stdout);
    assert.ok(run, stdout);
    assert.match(stderr, /SIGINT: stopping the scenario/);
    assert.match(stderr, new RegExp(`cancelled run ${run[1]} on ${controlUrl}`));
    assert.match(stderr, /stopped by SIGINT/);
    assertNoStack(stderr);
    const remote = (await (await fetch(`${controlUrl}/v1/scenarios/${run[1]}`)).json()) as { status: string; report: { aborted: boolean } };
    assert.equal(remote.status, 'aborted', 'the emulator stopped the run too');
    assert.equal(remote.report.aborted, true);
  } finally {
    await emulator.close();
  }
});

test('scenario run --clock system: prints its control URL, and Ctrl-C stops it with 130', { timeout: 60_000 }, async () => {
  const { code, stdout, stderr } = await interrupt(
    ['scenario', 'run', story, '--clock', 'system', '--imds', '127.0.0.1:0'],
    /^ {2}ok .*operation/m,
  );
  assert.equal(code, 130, `stdout: ${stdout}; stderr: ${stderr}`);
  assert.match(stdout, /^control API and dashboard at http:\/\/127\.0\.0\.1:\d+; Ctrl-C stops the run$/m);
  assert.match(stdout, /FAILED: stopped before the end/);
  assert.match(stderr, /^forewarn: scenario slow stopped by SIGINT$/m);
  assertNoStack(stderr);
});
