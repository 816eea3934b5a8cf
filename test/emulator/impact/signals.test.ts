// The guards around every signal the emulator sends: only the process bound (proven by its start time) or
// an owned command's marked processes, never pid 1, the emulator, its group or its ancestors.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { identify, refusalFor, signalBound, signalMarked } from '../../../src/emulator/impact/signals.js';
import { newMarker } from '../../../src/shared/proc.js';
import { waitFor } from '../../support/wait.js';

test('refusalFor names why pid 1, the emulator, its parent, and a missing pid may not be bound', () => {
  assert.match(refusalFor(1)!, /pid 1 is init/);
  assert.match(refusalFor(process.pid)!, /the emulator itself/);
  assert.match(refusalFor(process.ppid)!, /ancestor of the emulator/);
  assert.match(refusalFor(4_194_303)!, /no process has pid 4194303/);
  assert.match(refusalFor(-5)!, /whole number from 1 to 2147483647/);
  assert.match(refusalFor(2 ** 31)!, /whole number from 1 to 2147483647/);
  assert.match(
    refusalFor(4_194_303, 'the pid in /run/x.pid')!,
    /^no process has the pid in \/run\/x\.pid$/,
    'a pid read from a file is not echoed',
  );
});

test('signalBound signals the process bound, and refuses once its number names another process', async () => {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
  try {
    await new Promise((resolve) => child.once('spawn', resolve));
    const who = identify(child.pid!)!;
    assert.equal(refusalFor(who.pid), undefined, 'a live child of ours may be bound');
    assert.deepEqual(signalBound(who, 'SIGCONT'), { ok: true, target: 'process' });
    const reused = signalBound({ ...who, startTime: `${Number(who.startTime) + 1}` }, 'SIGTERM');
    assert.equal(reused.ok, false);
    assert.match(!reused.ok ? reused.reason : '', /now belongs to another process/);
    assert.equal(child.exitCode, null, 'nothing was sent to the process that does not match');
  } finally {
    child.kill('SIGKILL');
  }
});

test('signalMarked reaches every marked process, and sends nothing once none runs', async () => {
  const marker = newMarker('FOREWARN_TEST_MARKER');
  assert.deepEqual(signalMarked(marker, 'SIGTERM'), { ok: false, reason: 'none of its processes runs' });
  const child = spawn('/bin/sh', ['-c', 'sleep 300 & sleep 300 & wait'], {
    detached: true,
    stdio: 'ignore',
    env: { PATH: process.env.PATH, [marker.name]: marker.value },
  });
  try {
    await new Promise((resolve) => child.once('spawn', resolve));
    const result = signalMarked(marker, 'SIGKILL');
    assert.deepEqual(result, { ok: true, target: 'group' });
    await waitFor('the marked group to end', () => child.exitCode !== null || child.signalCode !== null);
  } finally {
    child.kill('SIGKILL');
  }
});
