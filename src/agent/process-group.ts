// Exec actions run in a process group of their own, journaled before the program starts, so an
// agent killed mid-action and restarted can find the program still running and never start a
// second copy beside it. A group is signalled only while it is proven ours: a pgid outlives its
// group, so a number alone proves nothing. POSIX only: Windows has no process groups to record.
// Proof needs Linux /proc: elsewhere a journaled group is only waited for (docs/agent.md).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { groupCarries, groupMembers, HAS_PROC, LIVE_PROC, type ProcSource } from '../shared/proc.js';
import { ACTION_MARKER_VARIABLE } from './exec-env.js';
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

/**
 * What a journaled group is now. 'ours': a live member carries the run's marker. 'unproven': it
 * has live members but none is proven ours (no marker recorded, none carries it, or /proc cannot
 * be read). 'gone': no member lives.
 */
export type GroupState = 'ours' | 'unproven' | 'gone';

/** Whether `pgid` can name one process group: kill(-1) reaches every process, kill(-0) our own group. */
function validPgid(pgid: number): boolean {
  return Number.isSafeInteger(pgid) && pgid >= 2;
}

/**
 * Linux hands no pid out again while a process group of that number has a member, and every
 * descendant of the program inherits its marker: so a live member carrying the marker proves the
 * group is the one started for that run, or one its program's descendants made. A member that
 * dropped its environment (env -i, sudo) or a process /proc will not show proves nothing.
 */
export function groupState(record: Pick<ProcessRecord, 'pgid' | 'marker'>, source: ProcSource = LIVE_PROC): GroupState {
  // Names no single group, so none of ours (the journal refuses such a record anyway).
  if (!validPgid(record.pgid)) return 'gone';
  // /proc lists at least this process: an empty list means it could not be read.
  if (!HAS_PROC || source.pids().length === 0) return groupExists(record.pgid) ? 'unproven' : 'gone';
  if (record.marker === undefined) return groupMembers(record.pgid, source).length === 0 ? 'gone' : 'unproven';
  const found = groupCarries(record.pgid, { name: ACTION_MARKER_VARIABLE, value: record.marker }, source);
  return found === 'carried' ? 'ours' : found === 'not carried' ? 'unproven' : 'gone';
}

/** kill(-pgid, 0): whether any process is in the group, ours or not (EPERM: someone else's). */
function groupExists(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Sends `signal` to the whole group; false when it is gone, and always for a pgid of 1 or less or
 * not an integer (nothing is sent). Callers prove the group is theirs first (groupState).
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  if (!validPgid(pgid)) return false;
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
  /** Told when the deadline passes and the group, proven ours, is stopped. */
  onStop?: (how: 'SIGTERM' | 'SIGKILL') => void;
  /** Told once when the deadline passes with the group not proven ours: it is never signalled. */
  onUnproven?: () => void;
  /** While the group is not proven ours, waiting also ends ('aborted') when this aborts. */
  unprovenUntil?: AbortSignal;
}

/**
 * Waits for a recorded group to end: on its own until `deadline`, then, only while it is proven
 * ours, SIGTERM, then SIGKILL after the grace. A group not proven ours is only waited for.
 * Resolves 'gone' once no member is alive, or 'aborted' if `signal` (or `unprovenUntil`) aborts first.
 */
export async function settleGroup(record: Pick<ProcessRecord, 'pgid' | 'marker'>, options: SettleOptions): Promise<'gone' | 'aborted'> {
  const poll = options.pollMs ?? 200;
  const unprovenWait = options.unprovenUntil === undefined ? options.signal : AbortSignal.any([options.signal, options.unprovenUntil]);
  let sent: 'none' | 'SIGTERM' | 'SIGKILL' = 'none';
  let termAt = 0;
  let toldUnproven = false;
  for (;;) {
    const state = groupState(record);
    if (state === 'gone') return 'gone';
    const now = options.now();
    if (state === 'unproven' && now >= options.deadline && !toldUnproven) {
      toldUnproven = true;
      options.onUnproven?.();
    }
    // Proven just now: to change hands before the signal, the number would need the whole group
    // to end and the pids to wrap round in between.
    if (state === 'ours' && sent === 'none' && now >= options.deadline) {
      sent = 'SIGTERM';
      termAt = now;
      options.onStop?.('SIGTERM');
      signalGroup(record.pgid, 'SIGTERM');
    } else if (state === 'ours' && sent === 'SIGTERM' && now >= termAt + options.graceMs) {
      sent = 'SIGKILL';
      options.onStop?.('SIGKILL');
      signalGroup(record.pgid, 'SIGKILL');
    }
    const waitOn = state === 'ours' ? options.signal : unprovenWait;
    try {
      await options.sleep(poll, waitOn);
    } catch {
      return 'aborted';
    }
    if (waitOn.aborted) return 'aborted';
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
