// The guards around every signal Forewarn sends: only pids it was given or started, never pid 1 or itself.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { refusalFor, Signaller } from '../../../src/emulator/impact/signals.js';

test('refusalFor names why pid 1, the emulator, and a missing pid may not be bound', () => {
  assert.match(refusalFor(1)!, /pid 1 is init/);
  assert.match(refusalFor(process.pid)!, /the emulator itself/);
  assert.match(refusalFor(4_194_303)!, /no process has pid 4194303/);
  assert.match(refusalFor(-5)!, /positive whole number/);
});

test('a Signaller signals only pids admitted to it, and never pid 1 or itself even if admitted', async () => {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
  try {
    await new Promise((resolve) => child.once('spawn', resolve));
    const pid = child.pid!;
    assert.equal(refusalFor(pid), undefined, 'a live child of ours may be bound');
    const signaller = new Signaller();
    const refused = signaller.send(pid, 'SIGSTOP');
    assert.equal(refused.ok, false);
    assert.match(!refused.ok ? refused.reason : '', /neither given to Forewarn nor started by it/);

    signaller.admit(pid, false);
    assert.deepEqual(signaller.send(pid, 'SIGCONT'), { ok: true, target: 'process' });
    signaller.release(pid);
    assert.equal(signaller.send(pid, 'SIGCONT').ok, false, 'released: refused again');

    for (const forbidden of [1, process.pid]) {
      signaller.admit(forbidden, false);
      assert.equal(signaller.send(forbidden, 'SIGCONT').ok, false, `pid ${forbidden} is never signalled`);
    }
  } finally {
    child.kill('SIGKILL');
  }
});
