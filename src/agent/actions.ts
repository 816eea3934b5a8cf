// Runs one configured action for an event. Never throws: every failure comes back as a result.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { monotonicMs } from '../shared/clock.js';
import { ENV_REF } from './config.js';
import { newMarker, procStat } from '../shared/proc.js';
import { ACTION_MARKER_VARIABLE, execEnvironment } from './exec-env.js';
import { GATE_SCRIPT, GROUP_GUARD, groupState, programProblem, signalGroup } from './process-group.js';
import type { Action, ActionContext, ActionLogger, ActionResult, EventFields, ExecAction, HttpAction, LogAction } from './types.js';

/** How much of a program's output, or a response body, is kept for the error message. */
export const OUTPUT_TAIL_BYTES = 4096;
/** After SIGTERM, a program gets this long before SIGKILL. */
export const KILL_GRACE_MS = 5000;

/** What an action is told about the event: stdin JSON for exec, the default body for http. */
export interface EventPayload extends EventFields {
  eventId: string;
  vmName: string;
  phase: string;
  idempotencyKey: string;
}

export function eventPayload(ctx: ActionContext): EventPayload {
  const e = ctx.event;
  return {
    eventId: e.id,
    type: e.type,
    status: e.status,
    source: e.source,
    resources: [...e.resources],
    notBefore: isoOrNull(e.notBefore),
    description: e.description,
    durationInSeconds: e.durationInSeconds,
    vmName: ctx.vmName,
    phase: ctx.phase,
    idempotencyKey: ctx.idempotencyKey,
  };
}

function isoOrNull(d: Date | null): string | null {
  return d === null || Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** One attempt's outcome; `retry: false` for failures another attempt cannot fix. */
interface Attempt {
  ok: boolean;
  error: string | null;
  retry: boolean;
}

/** The fields a logger does not already bind (pino's child loggers): pino would write a bound key twice. */
function unbound<T extends Record<string, unknown>>(logger: ActionLogger, fields: T): Partial<T> {
  const bindings = (logger as { bindings?: () => Record<string, unknown> }).bindings?.() ?? {};
  return Object.fromEntries(Object.entries(fields).filter(([key]) => !(key in bindings))) as Partial<T>;
}

export async function runAction(action: Action, ctx: ActionContext): Promise<ActionResult> {
  const started = monotonicMs();
  const done = (ok: boolean, attempts: number, error: string | null): ActionResult => ({
    ok,
    attempts,
    error,
    durationMs: Math.round(monotonicMs() - started),
  });
  const fields = unbound(ctx.logger, { action: action.name, type: action.type, eventId: ctx.event.id, phase: ctx.phase });
  try {
    if (ctx.dryRun) {
      ctx.logger.info({ ...fields, wouldRun: describe(action) }, `dry run: would run ${action.type} action ${action.name}`);
      return done(true, 0, null);
    }
    if (action.type === 'log') {
      runLog(action, ctx);
      return done(true, 1, null);
    }
    if (action.type === 'kubernetes') {
      // It retries inside, against its own deadline: API calls, budget waits and PDB backoff.
      if (ctx.kubernetes === undefined) return done(false, 0, 'no Kubernetes connection: this agent was started without one');
      const result = await ctx.kubernetes(action, ctx);
      return done(result.ok, 1, result.error);
    }
    const retries = action.retries;
    let last: Attempt = { ok: false, error: 'not run', retry: false };
    let attempts = 0;
    for (let n = 0; n <= retries; n++) {
      if (ctx.signal.aborted) return done(false, attempts, withPrevious('aborted before it could run', attempts, last));
      if (n > 0 && action.type === 'http' && action.backoffSeconds > 0) {
        try {
          await sleep(action.backoffSeconds * 1000 * 2 ** (n - 1), undefined, { signal: ctx.signal });
        } catch {
          return done(false, attempts, withPrevious('aborted while waiting to retry', attempts, last));
        }
      }
      attempts++;
      last = action.type === 'exec' ? await runExec(action, ctx) : await runHttp(action, ctx);
      if (last.ok) return done(true, attempts, null);
      const more = last.retry && n < retries && !ctx.signal.aborted;
      ctx.logger.warn(
        { ...fields, attempt: attempts, error: last.error },
        `${action.type} action ${action.name} failed${more ? '; retrying' : ''}`,
      );
      if (!last.retry) break;
    }
    return done(false, attempts, last.error);
  } catch (err) {
    // A bug here must not take the agent down with it.
    return done(false, 1, `unexpected error: ${(err as Error).message}`);
  }
}

function withPrevious(reason: string, attempts: number, last: Attempt): string {
  return attempts > 0 && last.error ? `${reason} (last attempt: ${last.error})` : reason;
}

function describe(action: Action): object {
  switch (action.type) {
    case 'exec':
      return { argv: action.argv, cwd: action.cwd, timeoutSeconds: action.timeoutSeconds };
    case 'http':
      // As written: `${env:...}` stays unresolved, so a dry run never logs a secret.
      return { method: action.method, url: action.url, headers: Object.keys(action.headers) };
    case 'log':
      return { level: action.level, message: action.message };
    case 'kubernetes':
      return { drain: action.drain, timeoutSeconds: action.timeoutSeconds };
  }
}

function runLog(action: LogAction, ctx: ActionContext): void {
  const payload = eventPayload(ctx);
  ctx.logger[action.level](
    { action: action.name, event: payload },
    action.message || `event ${payload.eventId}: ${payload.type} ${payload.status}`,
  );
}

/** Keeps the last `limit` bytes of a stream. */
class Tail {
  #chunks: Buffer[] = [];
  #size = 0;
  constructor(private readonly limit: number) {}
  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    while (this.#size - this.#chunks[0]!.length >= this.limit) this.#size -= this.#chunks.shift()!.length;
  }
  text(): string {
    const all = Buffer.concat(this.#chunks);
    const cut = all.length > this.limit;
    const s = all
      .subarray(Math.max(0, all.length - this.limit))
      .toString('utf8')
      .trim();
    return cut ? `…${s}` : s;
  }
}

function runExec(action: ExecAction, ctx: ActionContext): Promise<Attempt> {
  const payload = eventPayload(ctx);
  // POSIX: the program leads a process group, so a timeout also stops whatever it started, and
  // it waits behind a gate until that group is journaled (process-group.ts). The marker, new for
  // each run, is what later proves a member of that group is this run's.
  const group = GROUP_GUARD;
  const marker = group ? newMarker(ACTION_MARKER_VARIABLE).value : undefined;
  const env = execEnvironment(action, payload, process.env, marker);
  const [program, ...args] = action.argv;
  if (group) {
    // The gate's shell would report these as exit codes; say what spawn would have said.
    const problem = action.cwd !== null && !existsSync(action.cwd) ? 'ENOENT' : programProblem(program!, action.cwd, env.PATH);
    if (problem !== null)
      return Promise.resolve({
        ok: false,
        error: spawnError(Object.assign(new Error(problem), { code: problem }), program!, action.cwd),
        retry: false,
      });
  }

  return new Promise<Attempt>((resolve) => {
    const stdout = new Tail(OUTPUT_TAIL_BYTES);
    const stderr = new Tail(OUTPUT_TAIL_BYTES);
    let killedFor: string | null = null;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;
    let exitTimer: NodeJS.Timeout | undefined;
    let timeout: NodeJS.Timeout | undefined;
    /** Why the gate was never opened, or null. */
    let notReleased: string | null = null;

    const options = { shell: false, cwd: action.cwd ?? undefined, env, detached: group, windowsHide: true } as const;
    const child = group
      ? spawn('/bin/sh', ['-c', GATE_SCRIPT, program!, ...args], { ...options, stdio: ['pipe', 'pipe', 'pipe', 'pipe'] })
      : spawn(program!, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] });

    const finish = (attempt: Attempt) => {
      if (settled) return;
      settled = true;
      clearTimeout(timeout);
      clearTimeout(killTimer);
      clearTimeout(exitTimer);
      ctx.signal.removeEventListener('abort', onAbort);
      resolve(attempt);
    };
    const signal = (sig: NodeJS.Signals) => {
      if (!group || child.pid === undefined) {
        child.kill(sig);
        return;
      }
      // Until it is reaped (Node marks it exited as it reaps it), the leader holds its number, so the
      // group can only be ours. Once reaped, the number may pass to another group when ours ends:
      // only the marker proves it then.
      const leaderHeld = child.exitCode === null && child.signalCode === null;
      const state = leaderHeld ? 'ours' : groupState({ pgid: child.pid, marker });
      if (state === 'ours') signalGroup(child.pid, sig);
      else if (state === 'unproven') {
        ctx.logger.warn(
          { ...unbound(ctx.logger, { action: action.name }), pgid: child.pid, signal: sig },
          'not signalling the process group: its leader has exited and no live member can be proven to be this run',
        );
      }
    };
    const kill = (why: string) => {
      if (killedFor !== null) return;
      killedFor = why;
      signal('SIGTERM');
      killTimer = setTimeout(() => signal('SIGKILL'), KILL_GRACE_MS);
      killTimer.unref();
    };
    const onAbort = () => kill('aborted');
    // The timeout counts from the moment the program may run, not from the wait for the journal.
    const startTimeout = () => {
      timeout = setTimeout(() => kill(`timed out after ${action.timeoutSeconds} s`), action.timeoutSeconds * 1000);
    };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    if (ctx.signal.aborted) onAbort();
    if (group && child.pid !== undefined) {
      const gate = child.stdio[3] as Writable;
      gate.on('error', () => {});
      const pgid = child.pid;
      const recorded = ctx.recordProcess?.({ pgid, startTime: procStat(pgid)?.startTime ?? null, marker }) ?? Promise.resolve();
      recorded.then(
        () => {
          if (settled || killedFor !== null) return gate.destroy();
          startTimeout();
          gate.end('go\n');
        },
        (err: Error) => {
          notReleased = err.message;
          gate.destroy();
        },
      );
    } else {
      startTimeout();
    }

    child.stdout.on('data', (c: Buffer) => stdout.push(c));
    child.stderr.on('data', (c: Buffer) => stderr.push(c));
    // A program that exits without reading stdin closes the pipe under us; that is its business.
    child.stdin.on('error', () => {});
    child.stdin.end(`${JSON.stringify(payload)}\n`);

    child.on('error', (err: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return; // Errors after spawn (e.g. a failed kill) are followed by 'close'.
      finish({ ok: false, error: spawnError(err, program!, action.cwd), retry: err.code !== 'ENOENT' && err.code !== 'EACCES' });
    });
    const onEnd = (code: number | null, sig: NodeJS.Signals | null) => {
      if (notReleased !== null) {
        finish({ ok: false, error: `not run: ${notReleased}`, retry: false });
      } else if (killedFor !== null) {
        finish({ ok: false, error: withOutput(killedFor, stdout, stderr), retry: killedFor !== 'aborted' });
      } else if (code === 0) {
        finish({ ok: true, error: null, retry: false });
      } else {
        finish({ ok: false, error: withOutput(code !== null ? `exit code ${code}` : `killed by ${sig}`, stdout, stderr), retry: true });
      }
    };
    child.on('close', onEnd);
    // 'close' waits for stdout and stderr; a background process that inherited them could hold them open forever.
    child.on('exit', (code, sig) => {
      exitTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        onEnd(code, sig);
      }, 1000);
      exitTimer.unref();
    });
  });
}

function spawnError(err: NodeJS.ErrnoException, program: string, cwd: string | null): string {
  if (err.code === 'ENOENT') {
    if (cwd !== null && !existsSync(cwd)) return `cannot run ${program}: the working directory ${cwd} does not exist`;
    return `cannot run ${program}: no such executable (argv[0] must be a path or a program on PATH)`;
  }
  if (err.code === 'EACCES') return `cannot run ${program}: permission denied (is it executable?)`;
  return `cannot run ${program}: ${err.message}`;
}

function withOutput(reason: string, stdout: Tail, stderr: Tail): string {
  const parts = [reason];
  const err = stderr.text();
  const out = stdout.text();
  if (err) parts.push(`stderr: ${err}`);
  if (out) parts.push(`stdout: ${out}`);
  return parts.join('; ');
}

/** Replaces `${env:NAME}` from the environment; a missing or empty variable is an error, never an empty value. */
export function resolveEnvRefs(value: string, where: string, env: NodeJS.ProcessEnv = process.env): string {
  return value.replace(ENV_REF, (_, name: string) => {
    const v = env[name];
    if (v === undefined || v === '') throw new MissingVariable(`environment variable ${name} is not set (needed by ${where})`);
    return v;
  });
}

class MissingVariable extends Error {}

async function runHttp(action: HttpAction, ctx: ActionContext): Promise<Attempt> {
  let url: URL;
  // Null prototype: a header named __proto__ is a key like any other.
  const headers = Object.create(null) as Record<string, string>;
  try {
    url = new URL(resolveEnvRefs(action.url, 'url'));
    for (const [name, value] of Object.entries(action.headers)) headers[name] = resolveEnvRefs(value, `header ${name}`);
  } catch (err) {
    // Configuration problems: another attempt would fail the same way.
    const message = err instanceof MissingVariable ? err.message : `the url is not a valid URL: ${(err as Error).message}`;
    return { ok: false, error: message, retry: false };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { ok: false, error: `the url must be http:// or https://, not ${url.protocol}`, retry: false };
  }
  const has = (name: string) => Object.keys(headers).some((h) => h.toLowerCase() === name);
  for (const h of Object.keys(headers)) if (h.toLowerCase() === 'idempotency-key') delete headers[h];
  headers['Idempotency-Key'] = ctx.idempotencyKey;
  let body: string | undefined;
  if (action.method !== 'GET') {
    body = JSON.stringify(action.body === undefined ? eventPayload(ctx) : action.body);
    if (!has('content-type')) headers['Content-Type'] = 'application/json';
  }
  if (!has('user-agent')) headers['User-Agent'] = 'forewarn-agent';

  // Not AbortSignal.any([ctx.signal, AbortSignal.timeout()]): on Node 20 a GC can collect the
  // timeout signal, and the call then hangs (nodejs/node#55428). A timer holding its controller cannot.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException('timed out', 'TimeoutError')), action.timeoutSeconds * 1000);
  const onAbort = () => controller.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  if (ctx.signal.aborted) onAbort();
  const signal = controller.signal;
  try {
    const response = await fetch(url, { method: action.method, headers, body, signal, redirect: 'manual' });
    const text = await response.text();
    if (response.status >= 200 && response.status < 300) return { ok: true, error: null, retry: false };
    const tail = Buffer.from(text).subarray(-OUTPUT_TAIL_BYTES).toString('utf8').trim();
    const retry = response.status >= 500 || response.status === 408 || response.status === 425 || response.status === 429;
    return { ok: false, error: `HTTP ${response.status}${tail ? `: ${tail}` : ''}`, retry };
  } catch (err) {
    if (ctx.signal.aborted) return { ok: false, error: 'aborted', retry: false };
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError')
      return { ok: false, error: `timed out after ${action.timeoutSeconds} s`, retry: true };
    const cause = e.cause?.code ?? e.cause?.message;
    return { ok: false, error: `request failed: ${e.message}${cause ? ` (${cause})` : ''}`, retry: true };
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onAbort);
  }
}
