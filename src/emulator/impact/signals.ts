// The only place in the emulator that sends a signal (process.kill), and the proof it asks for first:
// a bound pid only while it is the very process that was bound (its start time), an owned command's
// processes only while they carry the marker Forewarn gave it. Never pid 1, the emulator, its group or
// its ancestors.
import { ancestorPids, HAS_PROC, isEnded, markedProcesses, procStat, procUid, type ProcessMarker } from '../../shared/proc.js';

/** The only signals real impact sends. */
export const IMPACT_SIGNALS = ['SIGSTOP', 'SIGCONT', 'SIGTERM', 'SIGKILL'] as const;
export type ImpactSignal = (typeof IMPACT_SIGNALS)[number];

/** The largest pid Linux can give (PID_MAX_LIMIT is 2^22; pid_t is 32-bit). */
const MAX_PID = 2 ** 31 - 1;

/** The emulator's own process group, which no signal may reach; undefined without /proc. */
const OWN_GROUP = procStat('self')?.pgid;

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/**
 * Why `pid` may not be bound, or undefined when it may: it must be a live process this user may
 * signal, and none of pid 1, the emulator, the leader of its group, or any of its ancestors (the
 * shell, the test runner or the container's init that started it). `subject` names the pid in the
 * reason: a pid read from a file is not echoed, as nothing a file holds is.
 */
export function refusalFor(pid: number, subject = `pid ${pid}`): string | undefined {
  if (!Number.isSafeInteger(pid) || pid < 1 || pid > MAX_PID) return `${subject} is not a whole number from 1 to ${MAX_PID}`;
  if (pid === 1) return `${subject} is init (or a container’s first process); Forewarn never signals it`;
  if (!HAS_PROC) return 'real impact needs Linux’s /proc to prove which process a pid is; this machine has none';
  if (pid === process.pid) return `${subject} is the emulator itself; Forewarn never signals it`;
  if (OWN_GROUP !== undefined && pid === OWN_GROUP) return `${subject} leads the emulator’s own process group; Forewarn never signals it`;
  if (ancestorPids().includes(pid))
    return `${subject} is an ancestor of the emulator (it started it, or started what did); Forewarn never signals it`;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if (errorCode(err) === 'ESRCH') return `no process has ${subject}`;
    if (errorCode(err) === 'EPERM') return `${subject} belongs to another user; the emulator may not signal it`;
    return `${subject} cannot be signalled (${errorCode(err) ?? 'error'})`;
  }
  if (isEnded(procStat(pid))) return `${subject} has exited`;
  return undefined;
}

/** Which process a pid is: with its start time it names one process across pid reuse. */
export interface ProcessIdentity {
  pid: number;
  startTime: string;
  uid: number;
}

/** The identity of a live process, or undefined when /proc cannot say (it has gone, or there is no /proc). */
export function identify(pid: number): ProcessIdentity | undefined {
  const stat = procStat(pid);
  const uid = procUid(pid);
  if (isEnded(stat) || uid === undefined) return undefined;
  return { pid, startTime: stat!.startTime, uid };
}

/** Whether the process `who` names still runs (not a zombie), and is still that process. */
export function isSameAlive(who: ProcessIdentity): boolean {
  const stat = procStat(who.pid);
  return !isEnded(stat) && stat!.startTime === who.startTime;
}

/** Whether any process that carries `marker` still runs. */
export function markedAlive(marker: ProcessMarker): boolean {
  return markedProcesses(marker).length > 0;
}

export type SignalResult = { ok: true; target: 'group' | 'process' | 'processes' } | { ok: false; reason: string };

function kill(target: number, signal: ImpactSignal): string | undefined {
  // Never pid 0 or -1 (every process this user may signal), never the emulator's group or itself.
  if (Math.abs(target) <= 1 || target === process.pid || (OWN_GROUP !== undefined && target === -OWN_GROUP)) {
    return `${target} is never signalled`;
  }
  try {
    process.kill(target, signal);
    return undefined;
  } catch (err) {
    const code = errorCode(err);
    return code === 'ESRCH' ? 'no such process (it has exited)' : `${code ?? 'error'}: ${(err as Error).message}`;
  }
}

/**
 * Signals the process that was bound, proven by its start time: alone, or with its group when it
 * leads one (a group cannot be taken over while its leader lives). A pid that now names another
 * process is refused.
 */
export function signalBound(who: ProcessIdentity, signal: ImpactSignal): SignalResult {
  const stat = procStat(who.pid);
  if (isEnded(stat)) return { ok: false, reason: 'no such process (it has exited)' };
  if (stat!.startTime !== who.startTime)
    return { ok: false, reason: `pid ${who.pid} has exited and its number now belongs to another process` };
  const group = stat!.pgid === who.pid;
  const failed = kill(group ? -who.pid : who.pid, signal);
  return failed === undefined ? { ok: true, target: group ? 'group' : 'process' } : { ok: false, reason: failed };
}

/**
 * Signals every process of an owned command: each process group one of its marked processes is in
 * (Linux gives a group's number to no one else while a member lives, and only its descendants share
 * its sessions), so members that dropped the marker go too. None left: refused, nothing sent.
 */
export function signalMarked(marker: ProcessMarker, signal: ImpactSignal): SignalResult {
  const groups = new Set(markedProcesses(marker).map((p) => p.pgid));
  if (groups.size === 0) return { ok: false, reason: 'none of its processes runs' };
  const failures: string[] = [];
  for (const pgid of groups) {
    const failed = kill(-pgid, signal);
    if (failed !== undefined) failures.push(`group ${pgid}: ${failed}`);
  }
  if (failures.length === groups.size) return { ok: false, reason: failures.join('; ') };
  return { ok: true, target: groups.size === 1 ? 'group' : 'processes' };
}
