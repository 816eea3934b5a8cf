// The only place in Forewarn that sends a signal (process.kill), and the guards around it: a signal
// reaches only a process the user gave or Forewarn started, never pid 1, the emulator or its own group.
import { readFileSync } from 'node:fs';

/** The only signals real impact sends. */
export const IMPACT_SIGNALS = ['SIGSTOP', 'SIGCONT', 'SIGTERM', 'SIGKILL'] as const;
export type ImpactSignal = (typeof IMPACT_SIGNALS)[number];

/** What /proc says of a process (Linux); undefined where there is no /proc or no such process. */
interface ProcStat {
  state: string;
  pgid: number;
  /** Clock ticks after boot; with the pid, it names one process across pid reuse. */
  startTime: string;
}

function procStat(pid: number | 'self'): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const pgid = Number(fields[2]);
  if (fields[0] === undefined || !Number.isInteger(pgid) || fields[19] === undefined) return undefined;
  return { state: fields[0], pgid, startTime: fields[19] };
}

/** The emulator's own process group, which no signal may reach; undefined without /proc. */
const OWN_GROUP = procStat('self')?.pgid;

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/**
 * Why `pid` may not be bound, or undefined when it may: it must be a live process this user may
 * signal, and none of pid 1, the emulator itself, or the leader of the emulator's own group.
 */
export function refusalFor(pid: number): string | undefined {
  if (!Number.isSafeInteger(pid) || pid < 1) return `pid must be a positive whole number, got ${pid}`;
  if (pid === 1) return 'pid 1 is init (or a container’s first process); Forewarn never signals it';
  if (pid === process.pid) return `pid ${pid} is the emulator itself; Forewarn never signals it`;
  if (OWN_GROUP !== undefined && pid === OWN_GROUP) return `pid ${pid} leads the emulator’s own process group; Forewarn never signals it`;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if (errorCode(err) === 'ESRCH') return `no process has pid ${pid}`;
    if (errorCode(err) === 'EPERM') return `pid ${pid} belongs to another user; the emulator may not signal it`;
    return `pid ${pid} cannot be signalled: ${(err as Error).message}`;
  }
  if (procStat(pid)?.state === 'Z') return `pid ${pid} has exited (a zombie its parent has not reaped)`;
  return undefined;
}

/** Whether `pid` still runs (a zombie does not). */
export function isAlive(pid: number): boolean {
  if (pid <= 1) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists, though it is no longer ours to signal.
    return errorCode(err) === 'EPERM';
  }
  return procStat(pid)?.state !== 'Z';
}

export type SignalResult = { ok: true; target: 'group' | 'process' } | { ok: false; reason: string };

interface Admitted {
  /** Forewarn started it detached, so it leads a process group of its own. */
  owned: boolean;
  startTime: string | undefined;
}

/** The pids Forewarn was given or started, and the one way to signal them. */
export class Signaller {
  readonly #admitted = new Map<number, Admitted>();

  /** Makes `pid` signallable; call only once refusalFor(pid) found nothing (or Forewarn spawned it). */
  admit(pid: number, owned: boolean): void {
    this.#admitted.set(pid, { owned, startTime: procStat(pid)?.startTime });
  }

  release(pid: number): void {
    this.#admitted.delete(pid);
  }

  /**
   * Sends `signal`: to the process group when Forewarn started the command or the pid leads its
   * own group, else to the pid alone. Refuses anything not admitted, and a pid now worn by another process.
   */
  send(pid: number, signal: ImpactSignal): SignalResult {
    const admitted = this.#admitted.get(pid);
    if (!admitted) return { ok: false, reason: `pid ${pid} was neither given to Forewarn nor started by it` };
    if (pid <= 1 || pid === process.pid) return { ok: false, reason: `pid ${pid} is never signalled` };
    const stat = procStat(pid);
    if (stat && admitted.startTime !== undefined && stat.startTime !== admitted.startTime) {
      this.#admitted.delete(pid);
      return { ok: false, reason: `pid ${pid} has exited and its number now belongs to another process` };
    }
    // A spawned leader that has exited may leave its group behind: the group is still ours to end.
    const group = admitted.owned || stat?.pgid === pid;
    if (group && OWN_GROUP !== undefined && pid === OWN_GROUP)
      return { ok: false, reason: `pid ${pid} leads the emulator’s own process group` };
    try {
      process.kill(group ? -pid : pid, signal);
    } catch (err) {
      const code = errorCode(err);
      return { ok: false, reason: code === 'ESRCH' ? 'no such process (it has exited)' : `${code ?? 'error'}: ${(err as Error).message}` };
    }
    return { ok: true, target: group ? 'group' : 'process' };
  }
}
