// Linux network namespaces joined to the root namespace by veth pairs, for tests that need real source addresses.
// Everything is named `fwt<pid><letter>...` so a later run can tell its own leftovers from a crashed run's.
import { execFile } from 'node:child_process';

/** Every `ip` call and every command run inside a namespace is killed after this long. */
export const COMMAND_TIMEOUT_MS = 5_000;

const PREFIX = 'fwt';
/** A namespace `fwt<pid>-<letter>`, a host-side veth `fwt<pid><letter>h` and its peer `fwt<pid><letter>n` (at most 15 characters). */
const OURS = /^fwt(\d+)(?:-[a-z]|[a-z][hn])$/;

export interface CommandResult {
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** Runs a command with a hard timeout (SIGKILL); rejects with its stderr on failure. */
export function run(file: string, args: readonly string[], options: RunOptions = {}): Promise<CommandResult> {
  const timeout = options.timeoutMs ?? COMMAND_TIMEOUT_MS;
  const settings = { timeout, killSignal: 'SIGKILL' as const, maxBuffer: 1 << 20, env: options.env ?? process.env };
  return new Promise((resolve, reject) => {
    execFile(file, args, settings, (err, stdout, stderr) => {
      if (err) {
        const detail = stderr.trim() || err.message;
        reject(new Error(`${file} ${args.join(' ')}: ${detail}${err.killed ? ` (killed after ${timeout} ms)` : ''}`));
        return;
      }
      resolve({ stdout, stderr });
    });
  });
}

const ip = (...args: string[]) => run('ip', args);

/** Why namespaces cannot be used here, or undefined when they can (root, iproute2, and a probe namespace with a veth works). */
export async function netnsUnavailable(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `network namespaces need Linux, not ${process.platform}`;
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  try {
    await ip('-V');
  } catch {
    return "iproute2's `ip` command is not installed";
  }
  const ns = `${PREFIX}${process.pid}-z`;
  try {
    await ip('netns', 'add', ns);
    await ip('link', 'add', `${PREFIX}${process.pid}zh`, 'type', 'veth', 'peer', 'name', `${PREFIX}${process.pid}zn`, 'netns', ns);
    return undefined;
  } catch (err) {
    return `cannot create a network namespace with a veth pair: ${(err as Error).message}`;
  } finally {
    // Deleting the namespace destroys the peer inside it, and with it the host end.
    await ip('netns', 'delete', ns).catch(() => undefined);
    await ip('link', 'delete', `${PREFIX}${process.pid}zh`).catch(() => undefined);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Deletes our namespaces and veths: this process's when `stale` is false,
 * or those left by earlier runs whose process is gone when it is true.
 */
export async function removeNamespaces(stale: boolean): Promise<void> {
  const mine = (name: string) => {
    const m = OURS.exec(name);
    if (!m) return false;
    const pid = Number(m[1]);
    return stale ? pid !== process.pid && !alive(pid) : pid === process.pid;
  };
  const namespaces = (await ip('netns', 'list')).stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter(mine);
  for (const ns of namespaces) await ip('netns', 'delete', ns).catch(() => undefined);
  // A veth left in the root namespace (a run that died between creating it and moving its peer).
  const links = (await ip('-o', 'link', 'show')).stdout
    .split('\n')
    .map((line) => /^\d+:\s+([^:@\s]+)/.exec(line)?.[1] ?? '')
    .filter(mine);
  for (const link of links) await ip('link', 'delete', link).catch(() => undefined);
}

export interface Namespace {
  name: string;
  /** The root namespace's end of the veth. */
  hostAddress: string;
  /** The address inside the namespace: the source of its requests. */
  address: string;
}

/**
 * Creates one namespace per index, each joined to the root namespace by a /30 in 10.213.0.0/16:
 * `.1` on the host end and `.2` inside, with a default route through the host end, so a namespace
 * reaches any of the root namespace's addresses with its own as the source.
 * The third octet comes from the pid so two runs at once are unlikely to collide.
 */
export async function createNamespaces(count: number): Promise<Namespace[]> {
  if (count < 1 || count > 4) throw new Error('between 1 and 4 namespaces');
  const base = 10 + (process.pid % 60) * 4;
  const created: Namespace[] = [];
  for (let i = 0; i < count; i++) {
    const letter = String.fromCharCode(97 + i);
    const name = `${PREFIX}${process.pid}-${letter}`;
    const host = `${PREFIX}${process.pid}${letter}h`;
    const peer = `${PREFIX}${process.pid}${letter}n`;
    const subnet = `10.213.${base + i}`;
    await ip('netns', 'add', name);
    await ip('link', 'add', host, 'type', 'veth', 'peer', 'name', peer, 'netns', name);
    await ip('addr', 'add', `${subnet}.1/30`, 'dev', host);
    await ip('link', 'set', host, 'up');
    await ip('-n', name, 'addr', 'add', `${subnet}.2/30`, 'dev', peer);
    await ip('-n', name, 'link', 'set', peer, 'up');
    await ip('-n', name, 'link', 'set', 'lo', 'up');
    await ip('-n', name, 'route', 'add', 'default', 'via', `${subnet}.1`);
    created.push({ name, hostAddress: `${subnet}.1`, address: `${subnet}.2` });
  }
  return created;
}

/** Runs a command inside a namespace, with a hard timeout. */
export function runIn(ns: string, file: string, args: readonly string[], options: RunOptions = {}): Promise<CommandResult> {
  return run('ip', ['netns', 'exec', ns, file, ...args], options);
}
