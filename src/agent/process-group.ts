// Exec actions run in a process group of their own, journaled before the program starts, so an
// agent killed mid-action and restarted can find the program still running and never start a
// second copy beside it. POSIX only: Windows has no process groups to record (docs/agent.md).
import { accessSync, constants, readFileSync, readdirSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import type { ProcessRecord } from './types.js';

/** Whether exec actions run behind the gate and have their group recorded. */
export const GROUP_GUARD = process.platform !== 'win32';

/**
 * `/bin/sh -c GATE_SCRIPT PROGRAM ARGS…` waits for a line on fd 3, then becomes the program
 * (same pid, so the same group). Written to fd 3 only once the group is journaled; if the agent
 * dies first, fd 3 closes with nothing written and the shell exits without running anything.
 * The program and its arguments stay an argv ("$0" "$@"), never text the shell parses.
 */
export const GATE_SCRIPT = 'read -r _ <&3 || exit 125; exec 3<&-; exec "$0" "$@"';

/** A pid's start time in clock ticks since boot (field 22 of /proc/PID/stat), or null off Linux or once it is gone. */
export function processStartTime(pid: number): string | null {
  return statFields(pid)?.[19] ?? null;
}

/** Fields 3… of /proc/PID/stat (the command name, which may hold spaces or parentheses, cut off). */
function statFields(pid: number | string): string[] | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

const HAS_PROC = (() => {
  try {
    return statSync('/proc/self/stat').isFile();
  } catch {
    return false;
  }
})();

/**
 * Whether the recorded group still has a live (not zombie) member that is ours. A leader with
 * another start time means the number was reused after our group ended. Off Linux: kill(-pgid, 0).
 */
export function groupAlive(record: Pick<ProcessRecord, 'pgid' | 'startTime'>): boolean {
  if (!HAS_PROC) {
    try {
      process.kill(-record.pgid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return false;
  }
  let members = 0;
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const fields = statFields(name);
    if (fields === null || fields[0] === 'Z' || fields[0] === 'X' || Number(fields[2]) !== record.pgid) continue;
    if (Number(name) === record.pgid && record.startTime !== null && fields[19] !== record.startTime) return false;
    members++;
  }
  return members > 0;
}

/** Sends `signal` to the whole group; false when it is gone. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

export interface SettleOptions {
  /** Epoch ms by which the group should have ended on its own (the action's timeout from its start). */
  deadline: number;
  graceMs: number;
  now: () => number;
  /** Must reject when the signal aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  signal: AbortSignal;
  pollMs?: number;
  /** Told when the deadline passes and the group is stopped. */
  onStop?: (how: 'SIGTERM' | 'SIGKILL') => void;
}

/**
 * Waits for a recorded group to end: on its own until `deadline`, then SIGTERM, then SIGKILL after
 * the grace. Resolves 'gone' once no member is alive, or 'aborted' if `signal` aborts first.
 */
export async function settleGroup(record: Pick<ProcessRecord, 'pgid' | 'startTime'>, options: SettleOptions): Promise<'gone' | 'aborted'> {
  const poll = options.pollMs ?? 200;
  let sent: 'none' | 'SIGTERM' | 'SIGKILL' = 'none';
  let termAt = 0;
  for (;;) {
    if (!groupAlive(record)) return 'gone';
    const now = options.now();
    if (sent === 'none' && now >= options.deadline) {
      sent = 'SIGTERM';
      termAt = now;
      options.onStop?.('SIGTERM');
      signalGroup(record.pgid, 'SIGTERM');
    } else if (sent === 'SIGTERM' && now >= termAt + options.graceMs) {
      sent = 'SIGKILL';
      options.onStop?.('SIGKILL');
      signalGroup(record.pgid, 'SIGKILL');
    }
    try {
      await options.sleep(poll, options.signal);
    } catch {
      return 'aborted';
    }
    if (options.signal.aborted) return 'aborted';
  }
}

/**
 * Why `program` cannot be run (as spawn would say: ENOENT, EACCES), or null. Behind the gate the
 * shell's exec would fail instead, with an exit code that reads like the program's own failure.
 */
export function programProblem(program: string, cwd: string | null, path: string | undefined): 'ENOENT' | 'EACCES' | null {
  const candidates = program.includes('/')
    ? [isAbsolute(program) ? program : resolve(cwd ?? process.cwd(), program)]
    : (path ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(resolve(cwd ?? process.cwd(), dir), program));
  let found: 'ENOENT' | 'EACCES' = 'ENOENT';
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
    } catch {
      continue;
    }
    try {
      accessSync(candidate, constants.X_OK);
      return null;
    } catch {
      found = 'EACCES';
    }
  }
  return found;
}
