// Finding and stopping an exec action's process group after a restart (POSIX).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { groupAlive, processStartTime, programProblem, settleGroup } from '../../src/agent/process-group.js';

const dir = mkdtempSync(join(tmpdir(), 'forewarn-pgroup-'));
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** A node program leading a group of its own, as the agent's exec actions do. */
function leader(code: string): { child: ChildProcess; exited: Promise<NodeJS.Signals | number | null> } {
  const child = spawn(process.execPath, ['-e', code], { detached: true, stdio: 'ignore' });
  children.push(child);
  const exited = new Promise<NodeJS.Signals | number | null>((r) => child.on('exit', (c, s) => r(s ?? c)));
  return { child, exited };
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(new Error('aborted'));
    });
  });

/** settleGroup on the child's group in real time, polling every 50 ms, each signal it sends noted in `stops`. */
function settle(child: ChildProcess, stops: string[], when: { deadline: number; graceMs: number }) {
  const group = { pgid: child.pid!, startTime: processStartTime(child.pid!) };
  return settleGroup(group, {
    ...when,
    now: Date.now,
    sleep,
    signal: new AbortController().signal,
    pollMs: 50,
    onStop: (s) => stops.push(s),
  });
}

describe('process groups', { skip: process.platform === 'win32' && 'POSIX only' }, () => {
  it('finds a live group, and not one whose leader pid was reused', () => {
    const { child } = leader('setTimeout(() => {}, 30000)');
    const pgid = child.pid!;
    const startTime = processStartTime(pgid);
    assert.equal(groupAlive({ pgid, startTime }), true);
    if (process.platform === 'linux') assert.equal(groupAlive({ pgid, startTime: `${startTime}0` }), false);
    child.kill('SIGKILL');
  });

  it('waits for a group that ends on its own before the deadline, sending nothing', async () => {
    const { child, exited } = leader('setTimeout(() => {}, 300)');
    const stops: string[] = [];
    const result = await settle(child, stops, { deadline: Date.now() + 10_000, graceMs: 1000 });
    assert.equal(result, 'gone');
    assert.equal(await exited, 0);
    assert.deepEqual(stops, []);
  });

  it('past the deadline: SIGTERM, then SIGKILL after the grace when SIGTERM is ignored', async () => {
    const { child, exited } = leader(`process.on('SIGTERM', () => {}); setTimeout(() => {}, 30000)`);
    await sleep(300); // let it install the handler
    const stops: string[] = [];
    const t0 = Date.now();
    const result = await settle(child, stops, { deadline: Date.now(), graceMs: 400 });
    assert.equal(result, 'gone');
    assert.deepEqual(stops, ['SIGTERM', 'SIGKILL']);
    assert.equal(await exited, 'SIGKILL');
    assert.ok(Date.now() - t0 >= 400);
  });

  it('stops waiting when the signal aborts', async () => {
    const { child } = leader('setTimeout(() => {}, 30000)');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const result = await settleGroup(
      { pgid: child.pid!, startTime: null },
      { deadline: Date.now() + 60_000, graceMs: 1000, now: Date.now, sleep, signal: controller.signal, pollMs: 20 },
    );
    assert.equal(result, 'aborted');
    assert.equal(groupAlive({ pgid: child.pid!, startTime: null }), true);
    child.kill('SIGKILL');
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
