// What Linux's /proc says of processes, read in one place: who a pid is (its start time), its group,
// parent and user, and which processes carry a marker in their environment. Forewarn signals only
// processes it can prove are the ones it was given or started, and these readings are the proof.
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';

/** Whether this machine has a Linux /proc to read (not macOS, not Windows). */
export const HAS_PROC: boolean = (() => {
  try {
    return statSync('/proc/self/stat').isFile();
  } catch {
    return false;
  }
})();

export interface ProcStat {
  /** R, S, D, T, Z, X…: Z and X are processes that have ended. */
  state: string;
  ppid: number;
  pgid: number;
  /** Clock ticks after boot (field 22): with the pid, it names one process across pid reuse. */
  startTime: string;
  /**
   * The kernel's PF_EXITING flag (field 9): the process has begun to exit. It releases its memory,
   * so /proc/PID/environ reads empty, before its state turns Z.
   */
  exiting: boolean;
}

/** PF_EXITING in include/linux/sched.h: set by do_exit() before the process lets go of its memory. */
const PF_EXITING = 0x4;

/** /proc/PID/stat, parsed; undefined without /proc or once the process is gone. */
export function procStat(pid: number | 'self'): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  return parseProcStat(text);
}

/**
 * The three readings of /proc that prove a group is ours. Each reads the kernel afresh, so a
 * process may change between two of them: tests stage such races through a source of their own.
 */
export interface ProcSource {
  pids(): number[];
  stat(pid: number): ProcStat | undefined;
  /** /proc/PID/environ; undefined when it cannot be read. */
  environ(pid: number): Buffer | undefined;
}

export const LIVE_PROC: ProcSource = {
  pids: () => allPids(),
  stat: (pid) => procStat(pid),
  environ: (pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`);
    } catch {
      return undefined;
    }
  },
};

/** One /proc/PID/stat line, or undefined if it is not one. */
export function parseProcStat(text: string): ProcStat | undefined {
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).split(' ');
  const ppid = Number(fields[1]);
  const pgid = Number(fields[2]);
  const flags = Number(fields[6]);
  if (fields[0] === undefined || !Number.isInteger(ppid) || !Number.isInteger(pgid) || !Number.isInteger(flags) || fields[19] === undefined)
    return undefined;
  return { state: fields[0], ppid, pgid, startTime: fields[19].trim(), exiting: (flags & PF_EXITING) !== 0 };
}

/** Whether a process has ended: gone, a zombie not yet reaped, dead, or on its way out (PF_EXITING). */
export function isEnded(stat: ProcStat | undefined): boolean {
  return stat === undefined || stat.state === 'Z' || stat.state === 'X' || stat.exiting;
}

/** The real user id a process runs as; undefined without /proc or once it is gone. */
export function procUid(pid: number | 'self'): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const m = /^Uid:\s+(\d+)/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** Every pid /proc lists now. */
export function allPids(): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const name of names) if (/^\d+$/.test(name)) pids.push(Number(name));
  return pids;
}

/** The emulator's (or agent's) ancestors, parent first, up to and including pid 1. */
export function ancestorPids(pid: number | 'self' = 'self'): number[] {
  const seen: number[] = [];
  let stat = procStat(pid);
  while (stat !== undefined && stat.ppid > 0 && !seen.includes(stat.ppid)) {
    seen.push(stat.ppid);
    stat = procStat(stat.ppid);
  }
  return seen;
}

/**
 * A marker is an environment variable, `NAME=VALUE`, with a value no other process has: every
 * process started from one that carries it inherits it, whatever group or session it moves to.
 */
export interface ProcessMarker {
  name: string;
  value: string;
}

export function newMarker(name: string): ProcessMarker {
  return { name, value: randomUUID() };
}

/**
 * Whether `pid` started with the marker in its environment. /proc/PID/environ is readable only by
 * its user (or root): a process that is not readable is not proven, so it is not ours.
 */
export function carriesMarker(pid: number, marker: ProcessMarker, source: ProcSource = LIVE_PROC): boolean {
  const environ = source.environ(pid);
  if (environ === undefined) return false;
  const entry = Buffer.from(`${marker.name}=${marker.value}\0`);
  return environ.subarray(0, entry.length).equals(entry) || environ.includes(Buffer.concat([Buffer.from([0]), entry]));
}

/** A live process that carries a marker, with its group. */
export interface MarkedProcess {
  pid: number;
  pgid: number;
}

/** Every live (not ended) process that carries the marker: those Forewarn started and their descendants. */
export function markedProcesses(marker: ProcessMarker): MarkedProcess[] {
  const found: MarkedProcess[] = [];
  for (const pid of allPids()) {
    const stat = procStat(pid);
    if (isEnded(stat) || !carriesMarker(pid, marker)) continue;
    found.push({ pid, pgid: stat!.pgid });
  }
  return found;
}

/**
 * Whether a live member of group `pgid` carries the marker. A member can begin to exit between the
 * reading of its stat (alive) and of its environment (empty once its memory is released), so a
 * member without the marker is read again after: one that has ended by then was no member.
 */
export function groupCarries(
  pgid: number,
  marker: ProcessMarker,
  source: ProcSource = LIVE_PROC,
): 'carried' | 'not carried' | 'no members' {
  let unproven = 0;
  for (const pid of source.pids()) {
    const stat = source.stat(pid);
    if (isEnded(stat) || stat!.pgid !== pgid) continue;
    if (carriesMarker(pid, marker, source)) return 'carried';
    const again = source.stat(pid);
    if (!isEnded(again) && again!.pgid === pgid) unproven += 1;
  }
  return unproven > 0 ? 'not carried' : 'no members';
}

/** Live members of process group `pgid`. */
export function groupMembers(pgid: number, source: ProcSource = LIVE_PROC): number[] {
  const found: number[] = [];
  for (const pid of source.pids()) {
    const stat = source.stat(pid);
    if (!isEnded(stat) && stat!.pgid === pgid) found.push(pid);
  }
  return found;
}
