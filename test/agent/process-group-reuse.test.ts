// A journaled group number reused for real by an unrelated daemon after the action's group ended
// (security review, row 5): a restarted agent may wait for it and log, never signal it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { groupState, settleGroup } from '../../src/agent/process-group.js';
import { procStat } from '../../src/shared/proc.js';
import { daemonOnGroup, finishedActionGroup as journaledAction, requirePidReuse, type Recorded } from './pid-reuse.js';
import { abortableDelay } from '../support/wait.js';

const sleep = abortableDelay;

/** The restarted agent's settle path, past the action's deadline, for `ms` of real time. */
async function settleFor(record: Recorded, ms: number) {
  const stops: string[] = [];
  let unproven = 0;
  const result = await settleGroup(record, {
    deadline: Date.now() - 60_000,
    graceMs: 100,
    now: Date.now,
    sleep,
    signal: AbortSignal.timeout(ms),
    pollMs: 50,
    onStop: (how) => stops.push(how),
    onUnproven: () => unproven++,
  });
  return { result, stops, unproven };
}

describe('a reused process group number', { skip: process.platform !== 'linux' && 'pid reuse is forced through Linux /proc' }, () => {
  it('a double-forking daemon on a finished action group number is waited for, never signalled', async () => {
    requirePidReuse();
    const record = await journaledAction();
    const daemon = await daemonOnGroup(record.pgid);
    assert.equal(procStat(record.pgid), undefined, 'the group has no leader: only the grandchild lives in it');
    assert.match(record.marker ?? '', /^[0-9a-f-]{36}$/, 'the action journaled its marker');
    assert.equal(groupState(record), 'unproven');
    const { result, stops, unproven } = await settleFor(record, 1000);
    assert.deepEqual(stops, [], 'no signal was sent');
    assert.ok(daemon.alive(), 'the unrelated daemon lives on');
    assert.equal(result, 'aborted', 'still waiting for it when the wait was called off');
    assert.equal(unproven, 1, 'told once that it is past the deadline and not signalled');
  });

  it('a group recorded without a marker (an older journal) is never signalled, even with its leader alive', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { detached: true, stdio: 'ignore' });
    try {
      const pgid = child.pid!;
      const { result, stops } = await settleFor({ pgid, startTime: procStat(pgid)?.startTime ?? null }, 500);
      assert.deepEqual(stops, []);
      assert.equal(result, 'aborted');
      assert.equal(child.exitCode, null);
      assert.equal(child.signalCode, null);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
