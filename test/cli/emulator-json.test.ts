// `forewarn emulator --json`: one machine-readable line on stdout once both servers listen, nothing else there.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { repo } from '../support/cli.js';
import { spawnEmulator } from './spawn-emulator.js';

const { version } = JSON.parse(readFileSync(`${repo}package.json`, 'utf8')) as { version: string };

test('--json prints exactly one ready line with both URLs, and the banner on stderr', { timeout: 60_000 }, async () => {
  const emulator = await spawnEmulator(['--clock', 'manual']);
  let code: number | null | undefined;
  try {
    const { ready } = emulator;
    assert.deepEqual(Object.keys(ready).sort(), ['controlUrl', 'dashboardUrl', 'event', 'imdsUrl', 'pid', 'version']);
    assert.equal(ready.event, 'ready');
    assert.equal(ready.pid, emulator.child.pid);
    assert.equal(ready.version, version);
    assert.match(ready.imdsUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.doesNotMatch(ready.imdsUrl, /:0$/, 'the ready line names the bound port, not 0');
    assert.equal(ready.dashboardUrl, `${ready.controlUrl}/`);
    // Both listen by the time the line is out.
    const doc = await fetch(`${ready.imdsUrl}/metadata/scheduledevents?api-version=2020-07-01`, { headers: { Metadata: 'true' } });
    assert.equal(doc.status, 200);
    assert.equal((await fetch(`${ready.controlUrl}/v1/clock`)).status, 200);
    assert.match(emulator.stderr(), /^IMDS:\s+http:\/\/127\.0\.0\.1:\d+$/m, 'the human banner goes to stderr');
  } finally {
    code = await emulator.stop('SIGINT');
  }
  assert.equal(code, 0, emulator.stderr());
  assert.equal(emulator.stdout(), `${JSON.stringify(emulator.ready)}\n`, 'nothing but the ready line on stdout, even after stopping');
});

test('--pidfile holds the emulator’s own pid once it listens, and goes when it stops', { timeout: 60_000 }, async () => {
  const { existsSync, mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'forewarn-pidfile-'));
  const pidfile = join(dir, 'emulator.pid');
  const emulator = await spawnEmulator(['--clock', 'manual', '--pidfile', pidfile]);
  try {
    // Written before the ready line: a script that saw the line can read the file.
    assert.equal(readFileSync(pidfile, 'utf8'), `${emulator.ready.pid}\n`);
    assert.equal(emulator.ready.pid, emulator.child.pid);
  } finally {
    assert.equal(await emulator.stop('SIGTERM'), 0, emulator.stderr());
  }
  assert.equal(existsSync(pidfile), false, 'removed at a clean stop');
  const bad = await spawnEmulator(['--pidfile', join(dir, 'no', 'such', 'dir', 'e.pid')]).catch((err: Error) => err);
  assert.ok(bad instanceof Error, 'an unwritable pidfile stops the start');
  assert.match(bad.message, /--pidfile .*e\.pid: /);
  rmSync(dir, { recursive: true, force: true });
});
