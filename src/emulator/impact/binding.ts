// What an emulated VM may be bound to: a pid, a pidfile, or a command Forewarn starts and owns; and the checks on each.
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { invalid } from '../engine/errors.js';
import { identify, refusalFor, type ProcessIdentity } from './signals.js';

/** [choice] Seconds between SIGTERM and SIGKILL when a VM reboots or goes away: long enough for a graceful shutdown. */
export const DEFAULT_GRACE_SECONDS = 10;
/** [choice] The longest grace; longer would hold a reboot up for ages. */
export const MAX_GRACE_SECONDS = 600;
/** [choice] A pidfile is a number and a line break; anything much bigger is not a pidfile. */
const MAX_PIDFILE_BYTES = 64;

/** What a VM may be bound to. */
export const PROCESS_KINDS = ['pid', 'pidfile', 'command'] as const;

/** Exactly one of pid, pidfile or command, as the control API's body has it. */
export type ProcessTarget =
  { kind: 'pid'; pid: number } | { kind: 'pidfile'; pidfile: string } | { kind: 'command'; command: string[]; cwd?: string };

export type ProcessSpec = ProcessTarget & { graceSeconds: number };

/** The request body, checked by its zod schema already: which of the three it names. */
export function specOf(body: { pid?: number; pidfile?: string; command?: string[]; cwd?: string; graceSeconds?: number }): ProcessSpec {
  const graceSeconds = body.graceSeconds ?? DEFAULT_GRACE_SECONDS;
  const given = (['pid', 'pidfile', 'command'] as const).filter((k) => body[k] !== undefined);
  if (given.length !== 1) {
    throw invalid(
      given.length === 0 ? 'give one of pid, pidfile or command' : `give only one of pid, pidfile or command, not ${given.join(' and ')}`,
    );
  }
  if (body.cwd !== undefined && body.command === undefined) throw invalid('cwd: only a command has a working directory', 'cwd');
  if (body.pid !== undefined) return { kind: 'pid', pid: body.pid, graceSeconds };
  if (body.pidfile !== undefined) return { kind: 'pidfile', pidfile: body.pidfile, graceSeconds };
  return { kind: 'command', command: body.command!, ...(body.cwd !== undefined ? { cwd: body.cwd } : {}), graceSeconds };
}

/** Throws a 400 naming `field` unless `pid` may be bound; `subject` names the pid in the message. */
export function checkPid(pid: number, field: string, subject?: string): void {
  const refusal = refusalFor(pid, subject);
  if (refusal !== undefined) throw invalid(`${field}: ${refusal}`, field);
}

/** The identity of `pid` now, checked as `checkPid` does: a 400 naming `field` when it may not be bound. */
export function identifyBindable(pid: number, field: string, subject?: string): ProcessIdentity {
  checkPid(pid, field, subject);
  const who = identify(pid);
  if (who === undefined) throw invalid(`${field}: ${subject ?? `pid ${pid}`} has exited`, field);
  return who;
}

/**
 * Why a pidfile may not be trusted, or undefined: it must be a regular file (not a FIFO that would
 * block, nor a device with no end), owned by the emulator's user or root, and writable by no one else,
 * or whoever may write it could aim the emulator's signals at any process of that user.
 */
function pidfileRefusal(stat: { isFile(): boolean; uid: number; mode: number }, path: string): string | undefined {
  if (!stat.isFile()) return `${path} is not a regular file`;
  const self = process.geteuid?.() ?? 0;
  if (stat.uid !== self && stat.uid !== 0) return `${path} is owned by user ${stat.uid}, not by the emulator's user (${self}) or root`;
  if ((stat.mode & 0o022) !== 0) return `${path} is writable by its group or by others (mode ${(stat.mode & 0o777).toString(8)})`;
  return undefined;
}

/**
 * The pid a pidfile holds, read safely: never following a symbolic link, never waiting on a FIFO,
 * never reading more than a pidfile's size. Errors name the file and what is wrong with it, never
 * what it holds: it may be a secret only the emulator's user could read.
 */
export function readPidfile(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw invalid(`pidfile: ${path} is a symbolic link; give the file it points to`, 'pidfile');
    throw invalid(`pidfile: cannot open ${path} (${code ?? 'error'})`, 'pidfile');
  }
  let text: string;
  try {
    const stat = fstatSync(fd);
    const refusal = pidfileRefusal(stat, path);
    if (refusal !== undefined) throw invalid(`pidfile: ${refusal}`, 'pidfile');
    if (stat.size > MAX_PIDFILE_BYTES) throw invalid(`pidfile: ${path} is larger than a pidfile (${MAX_PIDFILE_BYTES} bytes)`, 'pidfile');
    const buffer = Buffer.alloc(MAX_PIDFILE_BYTES + 1);
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    if (read > MAX_PIDFILE_BYTES) throw invalid(`pidfile: ${path} is larger than a pidfile (${MAX_PIDFILE_BYTES} bytes)`, 'pidfile');
    text = buffer.subarray(0, read).toString('latin1');
  } finally {
    closeSync(fd);
  }
  const trimmed = text.trim();
  if (!/^\d{1,10}$/.test(trimmed)) throw invalid(`pidfile: ${path} does not hold a pid (a whole number and a line break)`, 'pidfile');
  return Number(trimmed);
}

/** A command's working directory must be a directory; spawn would only say ENOENT, which reads as a missing program. */
export function checkCwd(cwd: string | undefined): void {
  if (cwd === undefined) return;
  let isDir: boolean;
  try {
    isDir = statSync(cwd).isDirectory();
  } catch (err) {
    throw invalid(`cwd: cannot use ${cwd}: ${(err as Error).message}`, 'cwd');
  }
  if (!isDir) throw invalid(`cwd: ${cwd} is not a directory`, 'cwd');
}
