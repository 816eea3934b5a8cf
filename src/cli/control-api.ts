// How CLI commands talk to a running emulator's control API: one place for timeouts,
// connection problems and the API's {"error"} answers.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { controlErrorOf } from '../protocol/control.js';
import { readJsonBody } from '../control/client.js';
import { CliError, UsageError } from './errors.js';

export interface ControlCall {
  method: 'GET' | 'POST';
  /** Absolute URL of the route. */
  url: string;
  /** The control API's base URL, for messages. */
  controlUrl: string;
  body?: unknown;
  token?: string | undefined;
  timeoutMs: number;
  /** Answers the caller treats as its user's mistake (exit 2) rather than a failure (exit 1). */
  usageStatuses?: readonly number[];
}

/** Calls the route and returns its JSON; every failure is a CliError or UsageError with a clear message. */
export async function callControl(call: ControlCall, fetchImpl: typeof fetch = fetch): Promise<{ data: unknown; text: string }> {
  let response: Response;
  try {
    response = await fetchImpl(call.url, {
      method: call.method,
      headers: {
        ...(call.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(call.token !== undefined ? { authorization: `Bearer ${call.token}` } : {}),
      },
      ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
      signal: AbortSignal.timeout(call.timeoutMs),
    });
  } catch (err) {
    throw new CliError(connectionProblem(err, call.controlUrl, call.timeoutMs));
  }
  const { text, data } = await readJsonBody(response);
  if (!response.ok) {
    const why = `the control API refused: ${response.status} ${controlErrorOf(data)?.error ?? (response.statusText || text)}`;
    throw call.usageStatuses?.includes(response.status) ? new UsageError(why) : new CliError(why);
  }
  return { data, text };
}

function connectionProblem(err: unknown, controlUrl: string, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') {
    return `no answer from the control API at ${controlUrl} within ${timeoutMs / 1000} s`;
  }
  const code = e.cause?.code;
  if (code === 'ECONNREFUSED')
    return `cannot reach the control API at ${controlUrl}: connection refused (is \`forewarn emulator\` running?)`;
  if (code === 'ENOTFOUND') return `cannot reach the control API at ${controlUrl}: unknown host`;
  return `cannot reach the control API at ${controlUrl}: ${e.cause?.message ?? e.message}`;
}

/** Where a command's bearer token may come from. */
export interface TokenFlags {
  token?: string | undefined;
  tokenFile?: string | undefined;
}

/** [choice] A token file holds one token; anything bigger is the wrong file (or /dev/zero). */
const MAX_TOKEN_FILE_BYTES = 64 * 1024;

/**
 * The token from --token, --token-file or env FOREWARN_TOKEN (an empty one means unset), with
 * warnings for the user. A token is one word: the Authorization header cannot carry spaces in it.
 */
export function resolveToken(
  flags: TokenFlags,
  env: Record<string, string | undefined>,
): { token: string | undefined; warnings: string[] } {
  if (flags.token !== undefined && flags.tokenFile !== undefined)
    throw new UsageError('give the token with --token or with --token-file, not both');
  if (flags.tokenFile !== undefined) return readTokenFile(flags.tokenFile);
  if (flags.token !== undefined) {
    if (flags.token.trim() === '') throw new UsageError('--token must not be empty');
    checkTokenWord(flags.token, '--token');
    return {
      token: flags.token,
      warnings: [
        '--token puts the token on the command line, where `ps` shows it to every user of this machine; use env FOREWARN_TOKEN or --token-file FILE instead',
      ],
    };
  }
  const fromEnv = env.FOREWARN_TOKEN || undefined;
  if (fromEnv !== undefined) checkTokenWord(fromEnv, 'FOREWARN_TOKEN');
  return { token: fromEnv, warnings: [] };
}

function checkTokenWord(token: string, where: string): void {
  if (/\s/.test(token)) throw new UsageError(`${where}: the token must be one word, without spaces or line breaks`);
}

/** Reads --token-file: the token, trimmed; a pipe (`--token-file <(pass show x)`) works as well as a file. */
export function readTokenFile(path: string): { token: string; warnings: string[] } {
  const where = `--token-file ${path}`;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw new UsageError(`${where}: cannot read it: ${describeFsError(err)}`);
  }
  const warnings: string[] = [];
  let text: string;
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw new UsageError(`${where}: is a directory, not a file`);
    // Mode bits say nothing on Windows.
    if (stat.isFile() && process.platform !== 'win32' && (stat.mode & 0o044) !== 0) {
      const who = [(stat.mode & 0o040) !== 0 ? 'its group' : '', (stat.mode & 0o004) !== 0 ? 'other users' : '']
        .filter(Boolean)
        .join(' and ');
      const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
      warnings.push(`${path} is readable by ${who} (mode ${mode}), who can then drive the control API; run: chmod 600 ${path}`);
    }
    text = readCapped(fd, where);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`${where}: cannot read it: ${describeFsError(err)}`);
  } finally {
    closeSync(fd);
  }
  const token = text.trim();
  if (token === '') throw new UsageError(`${where}: the file is empty; it should hold the token`);
  checkTokenWord(token, where);
  return { token, warnings };
}

function readCapped(fd: number, where: string): string {
  const buffer = Buffer.alloc(MAX_TOKEN_FILE_BYTES + 1);
  let length = 0;
  for (;;) {
    const n = readSync(fd, buffer, length, buffer.length - length, null);
    if (n === 0) break;
    length += n;
    if (length > MAX_TOKEN_FILE_BYTES)
      throw new UsageError(`${where}: larger than ${MAX_TOKEN_FILE_BYTES / 1024} KiB; a token file holds just the token`);
  }
  return buffer.toString('utf8', 0, length);
}

function describeFsError(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') return 'no such file';
  if (e.code === 'EACCES' || e.code === 'EPERM') return 'permission denied';
  if (e.code === 'EISDIR') return 'is a directory, not a file';
  return e.code ?? e.message;
}
