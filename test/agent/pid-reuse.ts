// Puts an unrelated double-forking daemon on a chosen process group number, for real: the reuse a
// restarted agent must never take for its own group. Linux hands out pid (ns_last_pid + 1) next
// when it is free, and root may write ns_last_pid, so the daemon's first child gets the number.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { after } from 'node:test';
import { runAction } from '../../src/agent/actions.js';
import type { ActionContext, ExecAction, ProcessRecord } from '../../src/agent/types.js';
import { groupMembers, isEnded, procStat } from '../../src/shared/proc.js';
import { scheduledEvent } from '../support/fixtures.js';

const NS_LAST_PID = '/proc/sys/kernel/ns_last_pid';

/**
 * These tests must run, not skip, wherever CI runs them (Linux, as root): anywhere else on Linux
 * they fail saying why. Call it first in the test.
 */
export function requirePidReuse(): void {
  if (process.getuid?.() !== 0) {
    throw new Error(`this test reuses a pid for real: it must run as root, to write ${NS_LAST_PID} (CI runs it as root)`);
  }
}

export interface Daemon {
  /** The group's number: the pid of the daemon's first child, which called setsid and exited. */
  pgid: number;
  /** The grandchild living on in the group, which has no leader any more. */
  pid: number;
  startTime: string;
  /** Whether the grandchild is still this very process and alive. */
  alive(): boolean;
  /** SIGKILL to the grandchild, by pid and only while its start time still names it. */
  stop(): void;
}

const daemons: Daemon[] = [];
after(() => {
  for (const d of daemons) d.stop();
});

function daemon(pgid: number, pid: number): Daemon {
  const startTime = procStat(pid)?.startTime;
  if (startTime === undefined) throw new Error(`the daemon's grandchild ${pid} is already gone`);
  const self: Daemon = {
    pgid,
    pid,
    startTime,
    alive: () => {
      const stat = procStat(pid);
      return !isEnded(stat) && stat!.startTime === startTime;
    },
    stop: () => {
      if (self.alive()) process.kill(pid, 'SIGKILL');
    },
  };
  daemons.push(self);
  return self;
}

/**
 * Starts `setsid sh -c 'sleep 300 & echo $!'` with its pid (so its session and group) numbered
 * `target`: the intermediate exits, and group `target` is left with the sleeping grandchild alone,
 * carrying no marker of Forewarn's. `target` must be free (its group ended). Other processes fork
 * too, so a miss is stopped and tried again.
 */
export async function daemonOnGroup(target: number, attempts = 50): Promise<Daemon> {
  const missed: number[] = [];
  for (let n = 0; n < attempts; n++) {
    writeFileSync(NS_LAST_PID, String(target - 1));
    // detached: the child calls setsid() before it runs sh, as a daemon's first child does.
    const first = spawn('/bin/sh', ['-c', 'sleep 300 </dev/null >/dev/null 2>&1 & echo $!'], {
      detached: true,
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    let out = '';
    first.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await once(first, 'close');
    const grandchild = daemon(first.pid!, Number(out.trim()));
    if (first.pid === target) {
      const members = groupMembers(target);
      if (procStat(grandchild.pid)?.pgid !== target || members.length !== 1 || members[0] !== grandchild.pid) {
        throw new Error(`group ${target} should hold the daemon's grandchild ${grandchild.pid} alone, not ${members.join(', ')}`);
      }
      return grandchild;
    }
    missed.push(first.pid!);
    grandchild.stop();
  }
  throw new Error(`could not start a daemon as pid ${target} in ${attempts} tries (got ${missed.join(', ')})`);
}

export type Recorded = Omit<ProcessRecord, 'startedAt'>;

/** Runs `/bin/true` as the agent runs an exec action, and gives back the group it journaled, now ended. */
export async function finishedActionGroup(): Promise<Recorded> {
  let recorded: Recorded | undefined;
  const event = scheduledEvent({ id: 'EVT-1' });
  const noop = () => {};
  const ctx: ActionContext = {
    event,
    vmName: 'vm0',
    phase: 'prepare',
    idempotencyKey: event.id,
    signal: new AbortController().signal,
    dryRun: false,
    logger: { info: noop, warn: noop, error: noop },
    recordProcess: async (group) => {
      recorded = group;
    },
  };
  const action: ExecAction = {
    type: 'exec',
    name: 'a',
    argv: ['/bin/true'],
    timeoutSeconds: 20,
    retries: 0,
    cwd: null,
    env: {},
    passEnv: [],
  };
  const result = await runAction(action, ctx);
  assert.equal(result.ok, true, result.error ?? '');
  assert.ok(recorded !== undefined);
  assert.deepEqual(groupMembers(recorded.pgid), [], 'the action and its group have ended');
  return recorded;
}
