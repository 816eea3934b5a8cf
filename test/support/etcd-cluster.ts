// A real etcd cluster for tests: three members on loopback, each a child process with its own data
// dir, short heartbeats so an election after a kill takes about a second. Members can be killed,
// restarted on the same data, or all stopped (a store outage) and started again.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { delay } from './wait.js';

export interface EtcdCluster {
  /** Client URLs, http://127.0.0.1:PORT, one per member, in member order. */
  readonly endpoints: string[];
  /** Index of the member that leads now (waits for an election to settle). */
  leader(): Promise<number>;
  /** Signals member `i` and waits for it to exit; SIGSTOP freezes it (a member that hangs) and SIGCONT thaws it, without waiting. */
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  /** Starts member `i` again on its data dir and waits until it is healthy. */
  restart(i: number): Promise<void>;
  /** Every member down: the store is out. */
  stopAll(signal?: NodeJS.Signals): Promise<void>;
  /** Every stopped member up again, healthy with a leader. */
  startAll(): Promise<void>;
  /** Kills everything and removes the data. */
  close(): Promise<void>;
}

export interface EtcdClusterOptions {
  members?: number;
}

const INSTALL_HINT = 'apt-get install etcd-server etcd-client';

/** The etcd binary on PATH (or /usr/bin), or null. */
export function etcdBinary(): string | null {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/local/bin'].filter(Boolean);
  for (const dir of dirs) {
    const path = join(dir, 'etcd');
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * Why the etcd tests skip, or false to run them. CI sets FOREWARN_REQUIRE_ETCD=1 so a runner without
 * etcd fails (startEtcdCluster throws) instead of passing by skipping.
 */
export function etcdSkipReason(): string | false {
  if (etcdBinary() !== null || process.env.FOREWARN_REQUIRE_ETCD === '1') return false;
  return `etcd is not installed (${INSTALL_HINT}); set FOREWARN_REQUIRE_ETCD=1 to fail instead of skipping`;
}

// Members must never outlive the test process: killed on any exit here, and (where setpriv exists)
// by the kernel when this process dies without running exit handlers.
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

function setprivPath(): string | null {
  try {
    accessSync('/usr/bin/setpriv', constants.X_OK);
    return '/usr/bin/setpriv';
  } catch {
    return null;
  }
}

async function freePorts(count: number): Promise<number[]> {
  // All held open at once so no port is handed out twice.
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return servers.map((s) => {
      const address = s.address();
      if (address === null || typeof address === 'string') throw new Error('no port');
      return address.port;
    });
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

/** A loopback port nothing listens on (just freed): an endpoint that refuses every connection. */
export async function unusedPort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

interface MemberSpec {
  name: string;
  dataDir: string;
  log: string;
  clientUrl: string;
  peerUrl: string;
}

async function getJson(url: string, body?: unknown, timeoutMs = 1_000): Promise<unknown> {
  const response = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.json();
}

async function healthy(clientUrl: string): Promise<boolean> {
  try {
    const body = (await getJson(`${clientUrl}/health`)) as { health?: string };
    return body.health === 'true';
  } catch {
    return false;
  }
}

export async function startEtcdCluster(options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
  const etcd = etcdBinary();
  if (etcd === null) throw new Error(`etcd is not installed: ${INSTALL_HINT} (FOREWARN_REQUIRE_ETCD=1 requires it)`);
  installExitHook();
  // Once more on fresh ports: a port freed for a member can be taken by another process first.
  try {
    return await launch(etcd, options.members ?? 3);
  } catch {
    return await launch(etcd, options.members ?? 3);
  }
}

async function launch(etcd: string, count: number): Promise<EtcdCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'forewarn-etcd-'));
  const ports = await freePorts(count * 2);
  const token = `forewarn-test-${process.pid}-${randomBytes(6).toString('hex')}`;
  const specs: MemberSpec[] = Array.from({ length: count }, (_, i) => ({
    name: `m${i}`,
    dataDir: join(dir, `m${i}`),
    log: join(dir, `m${i}.log`),
    clientUrl: `http://127.0.0.1:${ports[2 * i]}`,
    peerUrl: `http://127.0.0.1:${ports[2 * i + 1]}`,
  }));
  const initialCluster = specs.map((s) => `${s.name}=${s.peerUrl}`).join(',');
  const procs: (ChildProcess | null)[] = specs.map(() => null);
  const exits: (Promise<void> | null)[] = specs.map(() => null);
  const setpriv = setprivPath();
  let closed = false;

  function start(i: number, state: 'new' | 'existing'): void {
    const s = specs[i]!;
    // [choice] 50/500 ms: an election after the leader dies settles in about a second.
    const args = [
      '--name', s.name,
      '--data-dir', s.dataDir,
      '--listen-client-urls', s.clientUrl,
      '--advertise-client-urls', s.clientUrl,
      '--listen-peer-urls', s.peerUrl,
      '--initial-advertise-peer-urls', s.peerUrl,
      '--initial-cluster', initialCluster,
      '--initial-cluster-state', state,
      '--initial-cluster-token', token,
      '--heartbeat-interval', '50',
      '--election-timeout', '500',
      '--logger', 'zap',
      '--log-level', 'warn',
    ]; // prettier-ignore
    const fd = openSync(s.log, 'a');
    // setpriv execs etcd in place (same pid), asking the kernel to kill it if this process dies.
    const child = setpriv
      ? spawn(setpriv, ['--pdeathsig', 'KILL', '--', etcd, ...args], { stdio: ['ignore', fd, fd] })
      : spawn(etcd, args, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    live.add(child);
    procs[i] = child;
    exits[i] = new Promise((resolve) => {
      child.once('exit', () => {
        live.delete(child);
        if (procs[i] === child) procs[i] = null;
        resolve();
      });
      child.once('error', () => resolve());
    });
  }

  function logTail(i: number): string {
    try {
      return readFileSync(specs[i]!.log, 'utf8').split('\n').slice(-15).join('\n');
    } catch {
      return '(no log)';
    }
  }

  async function waitHealthy(indices: number[], timeoutMs = 20_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const dead = indices.filter((i) => procs[i] === null);
      if (dead.length > 0) throw new Error(`etcd member m${dead[0]} exited while starting:\n${logTail(dead[0]!)}`);
      const states = await Promise.all(indices.map((i) => healthy(specs[i]!.clientUrl)));
      if (states.every(Boolean)) return;
      if (Date.now() > end) {
        const sick = indices.filter((_, k) => !states[k]);
        throw new Error(`etcd members ${sick.map((i) => `m${i}`).join(', ')} not healthy after ${timeoutMs} ms:\n${logTail(sick[0]!)}`);
      }
      await delay(100);
    }
  }

  async function stop(i: number, signal: NodeJS.Signals): Promise<void> {
    const child = procs[i];
    if (!child) return;
    child.kill(signal);
    if (signal === 'SIGSTOP' || signal === 'SIGCONT') return;
    await exits[i];
  }

  const running = (): number[] => specs.map((_, i) => i).filter((i) => procs[i] !== null);

  const cluster: EtcdCluster = {
    endpoints: specs.map((s) => s.clientUrl),

    async leader(): Promise<number> {
      const end = Date.now() + 15_000;
      for (;;) {
        const statuses = await Promise.all(
          running().map(async (i) => {
            try {
              const body = (await getJson(`${specs[i]!.clientUrl}/v3/maintenance/status`, {})) as {
                header?: { member_id?: string };
                leader?: string;
              };
              return { i, id: body.header?.member_id, leader: body.leader };
            } catch {
              return { i, id: undefined, leader: undefined };
            }
          }),
        );
        // The leader as the running members agree on it, and the leader itself answering.
        const claimed = new Set(statuses.map((s) => s.leader).filter((l) => l !== undefined && l !== '0'));
        if (claimed.size === 1) {
          const [id] = claimed;
          const found = statuses.find((s) => s.id === id);
          if (found) return found.i;
        }
        if (Date.now() > end) throw new Error(`no etcd leader agreed on: ${JSON.stringify(statuses)}`);
        await delay(100);
      }
    },

    async kill(i: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
      await stop(i, signal);
    },

    async restart(i: number): Promise<void> {
      if (procs[i] !== null) throw new Error(`etcd member m${i} is running`);
      start(i, 'existing');
      await waitHealthy([i]);
    },

    async stopAll(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
      await Promise.all(specs.map((_, i) => stop(i, signal)));
    },

    async startAll(): Promise<void> {
      const stopped = specs.map((_, i) => i).filter((i) => procs[i] === null);
      for (const i of stopped) start(i, 'existing');
      await waitHealthy(specs.map((_, i) => i));
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.all(specs.map((_, i) => stop(i, 'SIGKILL')));
      rmSync(dir, { recursive: true, force: true });
    },
  };

  try {
    for (let i = 0; i < count; i++) start(i, 'new');
    await waitHealthy(specs.map((_, i) => i));
    return cluster;
  } catch (err) {
    await cluster.close();
    throw err;
  }
}
