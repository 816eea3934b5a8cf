// Finding and stopping an exec action's process group after a restart (POSIX).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it, mock } from 'node:test';
import { ACTION_MARKER_VARIABLE } from '../../src/agent/exec-env.js';
import { groupState, programProblem, settleGroup, signalGroup } from '../../src/agent/process-group.js';
import { HAS_PROC, newMarker } from '../../src/shared/proc.js';
import { abortableDelay } from '../support/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'forewarn-pgroup-'));
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** A node program leading a group of its own with a marker in its environment, as the agent's exec actions do. */
function leader(code: string): { child: ChildProcess; marker: string; exited: Promise<NodeJS.Signals | number | null> } {
  const marker = newMarker(ACTION_MARKER_VARIABLE).value;
  const env = { PATH: process.env.PATH, [ACTION_MARKER_VARIABLE]: marker };
  const child = spawn(process.execPath, ['-e', code], { detached: true, stdio: 'ignore', env });
  children.push(child);
  const exited = new Promise<NodeJS.Signals | number | null>((r) => child.on('exit', (c, s) => r(s ?? c)));
  return { child, marker, exited };
}

const sleep = abortableDelay;

/** settleGroup on the child's group in real time, polling every 50 ms, each signal it sends noted in `stops`. */
function settle({ child, marker }: { child: ChildProcess; marker: string }, stops: string[], when: { deadline: number; graceMs: number }) {
  return settleGroup(
    { pgid: child.pid!, marker },
    {
      ...when,
      now: Date.now,
      sleep,
      signal: new AbortController().signal,
      pollMs: 50,
      onStop: (s) => stops.push(s),
    },
  );
}

describe('process groups', { skip: process.platform === 'win32' && 'POSIX only' }, () => {
  it(
    'proves a live group ours by its marker; another marker, or none, proves nothing',
    { skip: !HAS_PROC && 'needs Linux /proc' },
    async () => {
      const { child, marker, exited } = leader('setTimeout(() => {}, 30000)');
      const pgid = child.pid!;
      assert.equal(groupState({ pgid, marker }), 'ours');
      assert.equal(groupState({ pgid, marker: newMarker(ACTION_MARKER_VARIABLE).value }), 'unproven', 'a reused number');
      assert.equal(groupState({ pgid }), 'unproven', 'an older journal record, without a marker');
      child.kill('SIGKILL');
      await exited;
      assert.equal(groupState({ pgid, marker }), 'gone');
    },
  );

  it(
    'proves the group ours by a member carrying the marker once the leader has exited',
    { skip: !HAS_PROC && 'needs Linux /proc' },
    async () => {
      // The leader starts a child in its group, then exits: the group lives on without a leader.
      const { child, marker, exited } = leader(
        `const c = require('node:child_process').spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
       console.log(c.pid); process.exit(0);`,
      );
      await exited;
      const pgid = child.pid!;
      await sleep(100);
      assert.equal(groupState({ pgid, marker }), 'ours');
      assert.equal(signalGroup(pgid, 'SIGKILL'), true);
      await sleep(100);
      assert.equal(groupState({ pgid, marker }), 'gone');
    },
  );

  it('waits for a group that ends on its own before the deadline, sending nothing', async () => {
    const { child, marker, exited } = leader('setTimeout(() => {}, 300)');
    const stops: string[] = [];
    const result = await settle({ child, marker }, stops, { deadline: Date.now() + 10_000, graceMs: 1000 });
    assert.equal(result, 'gone');
    assert.equal(await exited, 0);
    assert.deepEqual(stops, []);
  });

  it(
    'past the deadline: SIGTERM, then SIGKILL after the grace when SIGTERM is ignored',
    { skip: !HAS_PROC && 'nothing is proven ours without /proc' },
    async () => {
      const { child, marker, exited } = leader(`process.on('SIGTERM', () => {}); setTimeout(() => {}, 30000)`);
      await sleep(300); // let it install the handler
      const stops: string[] = [];
      const t0 = Date.now();
      const result = await settle({ child, marker }, stops, { deadline: Date.now(), graceMs: 400 });
      assert.equal(result, 'gone');
      assert.deepEqual(stops, ['SIGTERM', 'SIGKILL']);
      assert.equal(await exited, 'SIGKILL');
      assert.ok(Date.now() - t0 >= 400);
    },
  );

  it('stops waiting when the signal aborts', async () => {
    const { child } = leader('setTimeout(() => {}, 30000)');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const result = await settleGroup(
      { pgid: child.pid!, marker: undefined },
      { deadline: Date.now() + 60_000, graceMs: 1000, now: Date.now, sleep, signal: controller.signal, pollMs: 20 },
    );
    assert.equal(result, 'aborted');
    assert.notEqual(groupState({ pgid: child.pid! }), 'gone');
    child.kill('SIGKILL');
  });

  it(
    'waits for a group not proven ours only until `unprovenUntil` aborts; a proven one past it',
    { skip: !HAS_PROC && 'needs Linux /proc' },
    async () => {
      const { child, marker, exited } = leader('setTimeout(() => {}, 400)');
      const options = { deadline: Date.now() + 60_000, graceMs: 1000, now: Date.now, sleep, pollMs: 20 };
      const unprovenUntil = AbortSignal.abort();
      const signal = new AbortController().signal;
      assert.equal(await settleGroup({ pgid: child.pid! }, { ...options, signal, unprovenUntil }), 'aborted');
      assert.equal(await settleGroup({ pgid: child.pid!, marker }, { ...options, signal, unprovenUntil }), 'gone');
      assert.equal(await exited, 0);
    },
  );

  it('refuses to signal a group id of 1 or less, or not an integer, sending nothing (kill(-1) signals every process)', () => {
    // A stand-in for process.kill: nothing here may reach the real one.
    const kill = mock.method(process, 'kill', () => true);
    try {
      for (const pgid of [1, 0, -1, -4242, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
        assert.equal(signalGroup(pgid, 'SIGTERM'), false, `pgid ${pgid}`);
      }
      assert.equal(kill.mock.callCount(), 0);
    } finally {
      kill.mock.restore();
    }
  });

  it('says why a program cannot run, as spawn would', () => {
    const plain = join(dir, 'plain');
    writeFileSync(plain, '#!/bin/sh\n');
    chmodSync(plain, 0o644);
    assert.equal(programProblem('/nonexistent/prog', null, process.env.PATH), 'ENOENT');
    assert.equal(programProblem(plain, null, process.env.PATH), 'EACCES');
    assert.equal(programProblem('./plain', dir, process.env.PATH), 'EACCES');
    assert.equal(programProblem('sh', null, process.env.PATH), null);
    assert.equal(programProblem('no-such-program-forewarn', null, process.env.PATH), 'ENOENT');
    assert.equal(programProblem('sh', null, ''), 'ENOENT');
  });
});
