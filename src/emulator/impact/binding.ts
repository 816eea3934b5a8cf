// What an emulated VM may be bound to: a pid, a pidfile, or a command Forewarn starts and owns; and the checks on each.
import { readFileSync, statSync } from 'node:fs';
import { invalid } from '../engine/errors.js';
import { refusalFor } from './signals.js';

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

/** Throws a 400 naming `field` unless `pid` may be bound. */
export function checkPid(pid: number, field: string, source = `pid ${pid}`): void {
  const refusal = refusalFor(pid);
  if (refusal !== undefined)
    throw invalid(`${field}: ${source === `pid ${pid}` ? refusal : `${source} holds pid ${pid}, but ${refusal}`}`, field);
}

/** The pid a pidfile holds, checked: a 400 naming the file and what is wrong with it. */
export function readPidfile(path: string): number {
  let text: string;
  let size: number;
  try {
    size = statSync(path).size;
    text = size > MAX_PIDFILE_BYTES ? '' : readFileSync(path, 'utf8');
  } catch (err) {
    throw invalid(`pidfile: cannot read ${path}: ${(err as Error).message}`, 'pidfile');
  }
  if (size > MAX_PIDFILE_BYTES) throw invalid(`pidfile: ${path} is larger than a pidfile (${MAX_PIDFILE_BYTES} bytes)`, 'pidfile');
  const trimmed = text.trim();
  if (!/^\d{1,10}$/.test(trimmed)) throw invalid(`pidfile: ${path} holds ${JSON.stringify(trimmed.slice(0, 20))}, not a pid`, 'pidfile');
  const pid = Number(trimmed);
  checkPid(pid, 'pidfile', path);
  return pid;
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
