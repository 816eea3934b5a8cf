// The fleet budget's cost outside Kubernetes, per backend (etcd: a real three-member cluster; azure-blob:
// a real Azurite), for N agents simulated in this process: each a real FleetCoordinator over its own
// store instance (one client each, as separate VMs have), built by createStore as the agent builds it
// (the default request timeout, leaseSeconds 900 unless stated).
//  1. Slot hand-over latency with `slots: 1`, in rounds: each agent of a group gets an event at a
//     random moment, acquires, "prepares" PREPARE_MS, marks itself prepared and recovers; latency =
//     a waiting agent's successful acquire minus the previous holder's release. Waiters poll every
//     SLOT_POLL_MS, so the figure is about that by design. Small N runs several groups side by side.
//  2. Store requests per agent per minute, counted at the server: etcd's grpc_server_msg_received_total
//     (each unary request and each message on a stream, so lease keep-alives count) summed over every
//     member's /metrics, Azurite through a counting HTTP proxy. States, one window each: idle, idle
//     after an event with a short lease (etcd's session lease keep-alive), holding a slot (its renew
//     loop), at the barrier, and waiting/handing over (the run of 1).
//  3. The same run's baseline: the same N agents with no budget prepare at once (the coordinator-free
//     path, timed from "event seen" to "preparation starts"), 0 store requests; beside it the agent's
//     own IMDS polling at 1 Hz, 60 requests per agent per minute.
// Each window's "expected" is what the store calls the agents made imply (counted client side, costs
// from the backends' sources), and "by the code's intervals" what renewing every min(leaseSeconds/3,
// 15 s), polling for a slot every 2 s and reading the barrier every 1 s imply: a measured figure far
// from them is a finding.
// Run with `npm run bench:coordination`. Env: COORD_AGENTS (3,30), COORD_BACKENDS (etcd,azure-blob),
// COORD_IDLE_SECONDS (10), COORD_IDLE_LEASE_SECONDS (15), COORD_HOLD_SECONDS (30, a multiple of the
// renew interval so the count is exact), COORD_BARRIER_SECONDS (10), COORD_HANDOVERS (40, at least),
// COORD_HANDOVER_AGENTS (30: agents side by side in the hand-over run, in groups of N),
// COORD_PREPARE_MS (300), COORD_LEASE_SECONDS (900).
import { execFileSync } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { ScheduledEvent } from '../src/client/index.js';
import { BARRIER_POLL_MS, FleetCoordinator, RENEW_MAX_MS, type FleetStep } from '../src/agent/coordination/coordinator.js';
import { createStore, STORE_REQUEST_TIMEOUT_MS } from '../src/agent/coordination/open-store.js';
import { SLOT_POLL_MS } from '../src/agent/coordination/slot-wait.js';
import type { Claim, FleetStore, Member, StoreBackend, StoreOptions } from '../src/agent/coordination/store.js';
import { AgentMetrics } from '../src/agent/metrics.js';
import type { ActionLogger, BudgetRecord, FleetBudgetConfig } from '../src/agent/types.js';
import { startAzurite, type Azurite } from '../test/support/azurite.js';
import { etcdBinary, startEtcdCluster, type EtcdCluster } from '../test/support/etcd-cluster.js';
import { abortableDelay, delay, waitFor } from '../test/support/wait.js';

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const AGENTS = (process.env.COORD_AGENTS ?? '3,30').split(',').map(Number);
const BACKENDS = (process.env.COORD_BACKENDS ?? 'etcd,azure-blob').split(',') as StoreBackend[];
const IDLE_SECONDS = num('COORD_IDLE_SECONDS', 10);
const IDLE_LEASE_SECONDS = num('COORD_IDLE_LEASE_SECONDS', 15);
const HOLD_SECONDS = num('COORD_HOLD_SECONDS', 30);
const BARRIER_SECONDS = num('COORD_BARRIER_SECONDS', 10);
const HANDOVERS = num('COORD_HANDOVERS', 40);
const HANDOVER_AGENTS = num('COORD_HANDOVER_AGENTS', 30);
const PREPARE_MS = num('COORD_PREPARE_MS', 300);
const LEASE_SECONDS = num('COORD_LEASE_SECONDS', 900);
/** The agent's own IMDS polling at 1 Hz: the cost every agent already has. */
const IMDS_PER_MIN = 60;

/** What one store call costs in requests, from each backend's source (etcd.ts; azure-blob.ts's header). */
interface Costs {
  /** One tryAcquire that finds every slot held (slots = 1 here). */
  miss: number;
  /** What a successful tryAcquire adds to a miss. */
  hitExtra: number;
  /** release as the last holder. */
  release: number;
  /** unmarkPrepared, markPrepared. */
  mark: number;
  renew: number;
  members: number;
  /** The first call needing a session lease (etcd: LeaseGrant, and the keep-alive stream's first message). */
  firstLease: number;
  /** Keep-alive messages per second per session lease of `leaseSeconds` (etcd3 fires one every TTL/3). */
  keepAlivePerSecond: (leaseSeconds: number) => number;
}

const COSTS: Record<StoreBackend, Costs> = {
  // range; + txn; deleteRange; put or deleteRange; range + keepaliveOnce (a stream, one message); one txn of two ranges.
  etcd: { miss: 1, hitExtra: 1, release: 1, mark: 1, renew: 2, members: 1, firstLease: 2, keepAlivePerSecond: (l) => 3 / l },
  // a HEAD per slot; + lease acquire, set metadata; HEAD, set metadata, lease release; put or delete blob;
  // lease renew, HEAD, set metadata; two lists. Nothing runs in the background.
  'azure-blob': { miss: 1, hitExtra: 2, release: 3, mark: 1, renew: 3, members: 2, firstLease: 0, keepAlivePerSecond: () => 0 },
  // The controller's in-process store: no request at all.
  memory: { miss: 0, hitExtra: 0, release: 0, mark: 0, renew: 0, members: 0, firstLease: 0, keepAlivePerSecond: () => 0 },
};

/** Counts by kind: requests the server saw, or store calls the agents made. */
type Counts = Map<string, number>;

interface Backend {
  name: StoreBackend;
  describe: string;
  config(group: string, slots: number, leaseSeconds: number): FleetBudgetConfig;
  env: NodeJS.ProcessEnv;
  count(): Promise<Counts>;
  close(): Promise<void>;
}

// --- etcd: a real cluster, counted from each member's /metrics ---

async function etcdBackend(): Promise<Backend> {
  const cluster: EtcdCluster = await startEtcdCluster({ members: 3 });
  const version = execFileSync(etcdBinary()!, ['--version'], { encoding: 'utf8' }).split('\n')[0]!.replace('etcd Version: ', '');
  return {
    name: 'etcd',
    describe: `etcd ${version}, a three-member cluster on loopback; requests = grpc_server_msg_received_total over the members`,
    config: (group, slots, leaseSeconds) => ({
      ...budgetDefaults(group, slots, leaseSeconds),
      backend: 'etcd',
      endpoints: cluster.endpoints,
    }),
    env: {},
    async count() {
      const counts: Counts = new Map();
      const pages = await Promise.all(cluster.endpoints.map(async (url) => (await fetch(`${url}/metrics`)).text()));
      for (const line of pages.join('\n').split('\n')) {
        if (!line.startsWith('grpc_server_msg_received_total{')) continue;
        const method = /grpc_method="([^"]+)"/.exec(line)?.[1];
        const service = /grpc_service="([^"]+)"/.exec(line)?.[1]?.split('.').pop();
        const value = Number(line.slice(line.lastIndexOf(' ') + 1));
        if (value > 0) add(counts, `${service}.${method}`, value);
      }
      return counts;
    },
    close: () => cluster.close(),
  };
}

// --- azure-blob: a real Azurite behind a proxy that counts every request ---

async function blobBackend(): Promise<Backend> {
  const azurite: Azurite = await startAzurite();
  const counts: Counts = new Map();
  const upstream = new http.Agent({ keepAlive: true });
  const proxy = http.createServer((req, res) => {
    add(counts, blobKind(req), 1);
    const forward = http.request(
      { host: '127.0.0.1', port: azurite.port, method: req.method, path: req.url, headers: req.headers, agent: upstream },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as { port: number };
  // Shared key signs the path, not the host: the proxy's address stands in for Azurite's.
  const endpoint = azurite.blobEndpoint.replace(`:${azurite.port}/`, `:${port}/`);
  const container = 'coordination';
  await azurite.createContainer(container);
  return {
    name: 'azure-blob',
    describe:
      'Azurite (node_modules/azurite), shared key through AZURE_STORAGE_CONNECTION_STRING; requests counted by an HTTP proxy in front',
    config: (group, slots, leaseSeconds) => ({
      ...budgetDefaults(group, slots, leaseSeconds),
      backend: 'azure-blob',
      containerUrl: `${endpoint}/${container}`,
    }),
    env: { AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString.replace(azurite.blobEndpoint, endpoint) },
    count: async () => new Map(counts),
    async close() {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
      upstream.destroy();
      await azurite.close();
    },
  };
}

function blobKind(req: http.IncomingMessage): string {
  const comp = new URL(req.url ?? '/', 'http://x').searchParams.get('comp');
  if (comp === 'lease') return `lease ${String(req.headers['x-ms-lease-action'])}`;
  if (comp === 'list') return 'list blobs';
  if (comp === 'metadata') return 'set metadata';
  if (req.method === 'HEAD') return 'get properties';
  if (req.method === 'PUT') return 'put blob';
  if (req.method === 'DELETE') return 'delete blob';
  return `${req.method} ${comp ?? ''}`.trim();
}

function budgetDefaults(group: string, slots: number, leaseSeconds: number): FleetBudgetConfig {
  return {
    backend: 'etcd',
    endpoints: [],
    containerUrl: null,
    clientId: null,
    slots,
    group,
    leaseSeconds,
    minPrepareSeconds: 60,
    marginSeconds: 5,
  };
}

function add(counts: Counts, key: string, n: number): void {
  counts.set(key, (counts.get(key) ?? 0) + n);
}

function diff(after: Counts, before: Counts): Counts {
  const out: Counts = new Map();
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) > 0) out.set(k, v - (before.get(k) ?? 0));
  return out;
}

const total = (c: Counts) => [...c.values()].reduce((a, b) => a + b, 0);

// --- simulated agents ---

/** Store warnings and errors, from every agent: a clean run has none. */
const problems: string[] = [];

class Log implements ActionLogger {
  onInfo: ((msg: string) => void) | null = null;
  constructor(readonly vm: string) {}
  info(_obj: object, msg?: string): void {
    this.onInfo?.(msg ?? '');
  }
  warn(obj: object, msg?: string): void {
    problems.push(`${this.vm}: ${msg} ${JSON.stringify(obj)}`);
  }
  error(obj: object, msg?: string): void {
    problems.push(`${this.vm}: ${msg} ${JSON.stringify(obj)}`);
  }
}

/** Store calls every agent made, client side, and their total time in ms. */
const calls: Counts = new Map();
const callMs: Counts = new Map();

/**
 * The agent's store, with each call counted (and tryAcquire's hits) and timed: the requests
 * those calls imply are a window's "expected", and a read's time explains a loop period longer than
 * its sleep (the barrier sleeps 1 s after each read).
 */
class CountingStore implements FleetStore {
  /** Has a session lease (etcd grants one on the first tryAcquire or markPrepared, and keeps it alive). */
  leased = false;
  constructor(readonly inner: FleetStore) {}
  get backend(): StoreBackend {
    return this.inner.backend;
  }
  get options(): StoreOptions {
    return this.inner.options;
  }
  get where(): string {
    return this.inner.where;
  }
  /** Counted as the call starts, as the server counts a request when it comes. */
  async #count<T>(op: string, call: () => Promise<T>, hit?: (value: T) => boolean): Promise<T> {
    add(calls, op, 1);
    const t0 = performance.now();
    const value = await call();
    add(callMs, op, performance.now() - t0);
    if (hit?.(value)) add(calls, `${op} hit`, 1);
    return value;
  }
  #lease(): void {
    if (this.leased) return;
    this.leased = true;
    add(calls, 'first lease', 1);
  }
  open(): Promise<void> {
    return this.#count('open', () => this.inner.open());
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  tryAcquire(claim: Claim): Promise<string | null> {
    this.#lease();
    return this.#count(
      'tryAcquire',
      () => this.inner.tryAcquire(claim),
      (slot) => slot !== null,
    );
  }
  renew(slot: string, claim: Claim): Promise<boolean> {
    return this.#count('renew', () => this.inner.renew(slot, claim));
  }
  release(slot: string, claim: Claim): Promise<void> {
    return this.#count('release', () => this.inner.release(slot, claim));
  }
  register(): Promise<void> {
    return this.#count('register', () => this.inner.register());
  }
  members(): Promise<Member[]> {
    return this.#count('members', () => this.inner.members());
  }
  markPrepared(eventId: string): Promise<void> {
    this.#lease();
    return this.#count('markPrepared', () => this.inner.markPrepared(eventId));
  }
  unmarkPrepared(eventId: string): Promise<void> {
    return this.#count('unmarkPrepared', () => this.inner.unmarkPrepared(eventId));
  }
}

/** The requests the calls in `made` imply, plus the session leases' keep-alives over `seconds`. */
function implied(cost: Costs, made: Counts, leased: number, seconds: number, leaseSeconds: number): number {
  const n = (k: string) => made.get(k) ?? 0;
  return (
    n('tryAcquire') * cost.miss +
    n('tryAcquire hit') * cost.hitExtra +
    n('release') * cost.release +
    (n('markPrepared') + n('unmarkPrepared')) * cost.mark +
    n('renew') * cost.renew +
    n('members') * cost.members +
    n('register') +
    n('first lease') * cost.firstLease +
    leased * seconds * cost.keepAlivePerSecond(leaseSeconds)
  );
}

interface Sim {
  vm: string;
  store: CountingStore;
  coord: FleetCoordinator;
  log: Log;
}

const metrics = new AgentMetrics({ defaultMetrics: false });
/** Agents not closed yet: a phase that throws leaves none behind. */
const running = new Set<Sim>();

/** N agents of `group`, each with its own store client as the agent makes it, started and registered. */
async function startAgents(b: Backend, n: number, group: string, leaseSeconds = LEASE_SECONDS): Promise<Sim[]> {
  const config = b.config(group, 1, leaseSeconds);
  const agents = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const vm = `vm-${i}`;
      const log = new Log(vm);
      const store = new CountingStore(await createStore(config, vm, b.env));
      const coord = new FleetCoordinator({ store, config, vmName: vm, metrics, log, now: () => Date.now(), sleep: abortableDelay });
      return { vm, store, coord, log };
    }),
  );
  for (const a of agents) running.add(a);
  await Promise.all(agents.map((a) => a.coord.start(AbortSignal.timeout(60_000))));
  return agents;
}

async function closeAgents(agents: Iterable<Sim>): Promise<void> {
  await Promise.all(
    [...agents].map(async (a) => {
      running.delete(a);
      await a.coord.close();
    }),
  );
}

/** A Scheduled event as the agent builds it from IMDS (see eventFromEntry), NotBefore an hour ahead. */
function eventFor(id: string, vms: string[]): ScheduledEvent {
  const notBefore = new Date(Date.now() + 3_600_000);
  return {
    id,
    status: 'Scheduled',
    type: 'Reboot',
    resourceType: 'VirtualMachine',
    resources: vms,
    notBefore,
    description: 'bench',
    source: 'Platform',
    durationInSeconds: -1,
    raw: {
      EventId: id,
      EventStatus: 'Scheduled',
      EventType: 'Reboot',
      ResourceType: 'VirtualMachine',
      Resources: vms,
      NotBefore: notBefore.toUTCString(),
      Description: 'bench',
      EventSource: 'Platform',
      DurationInSeconds: -1,
    },
  };
}

/** A step whose journal record lives in memory; `signal` stops waits (recover gets one that never aborts). */
function stepFor(event: ScheduledEvent, log: ActionLogger, signal: AbortSignal, holder: { record?: BudgetRecord }): FleetStep {
  return {
    event,
    signal,
    log,
    record: () => holder.record,
    save: async (record) => {
      holder.record = record;
      return true;
    },
  };
}

const never = new AbortController().signal;

/** One event on a free slot, as the agent runs it (acquire, mark prepared, recover); returns acquire's time. */
async function turn(a: Sim, id: string): Promise<number> {
  const holder: { record?: BudgetRecord } = {};
  const event = eventFor(id, [a.vm]);
  const t0 = performance.now();
  const got = await a.coord.acquire(stepFor(event, a.log, never, holder));
  const took = performance.now() - t0;
  if (!got.ok || holder.record?.slot == null) problems.push(`${a.vm}: no slot on a free budget: ${got.error ?? 'over budget'}`);
  await a.coord.markPrepared(event, a.log);
  await a.coord.recover(stepFor(event, a.log, never, holder));
  return took;
}

// --- windows ---

interface Window {
  state: string;
  seconds: number;
  /** Requests the server saw, by kind. */
  requests: Counts;
  /** Store calls the agents made, and their time (ms). */
  made: Counts;
  ms: Counts;
  expected: number;
  agents: number;
  /** Agents in the state the row is about (the holder alone while holding). */
  active: number;
  /** What the code's intervals imply per active agent per minute. */
  byCode: string;
}

/** Counts the server's requests and the agents' calls around `fn`, timed between the two counts. */
async function measure(
  b: Backend,
  agents: Sim[],
  leaseSeconds: number,
  fn: () => Promise<void>,
): Promise<Pick<Window, 'seconds' | 'requests' | 'made' | 'ms' | 'expected'>> {
  const leased = agents.filter((a) => a.store.leased).length;
  const calls0 = new Map(calls);
  const ms0 = new Map(callMs);
  const before = await b.count();
  const t0 = performance.now();
  await fn();
  const seconds = (performance.now() - t0) / 1000;
  const requests = diff(await b.count(), before);
  const made = diff(calls, calls0);
  return { seconds, requests, made, ms: diff(callMs, ms0), expected: implied(COSTS[b.name], made, leased, seconds, leaseSeconds) };
}

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] ?? Number.NaN;
}

interface SizeResult {
  n: number;
  windows: Window[];
  /** Release → a waiter's acquire, ms, sorted. */
  handover: number[];
  /** Hand-overs whose next holder came only after the release: 0 by construction. */
  late: number;
  meanWaiters: number;
  overlaps: number;
  /** Tries the waits imply at one per SLOT_POLL_MS (and one at once), against the tries made. */
  triesImplied: number;
  waits: number;
  waitedMinutes: number;
  baselineUs: number[];
  freeSlotMs: number[];
}

async function runSize(b: Backend, n: number): Promise<SizeResult> {
  const cost = COSTS[b.name];
  const windows: Window[] = [];
  const tag = `bench-${n}`;
  const row = (state: string, agents: number, active: number, byCode: string) => ({ state, agents, active, byCode });

  // 3. Baseline: no budget. Every agent sees its event and starts preparing at once; nothing to ask.
  const baselineUs: number[] = [];
  const base = await measure(b, [], LEASE_SECONDS, async () => {
    await Promise.all(
      Array.from({ length: n }, async () => {
        const seen = performance.now();
        // The agent's path without a `budget`: no coordinator, so nothing between sight and preparation.
        const fleet = null as FleetCoordinator | null;
        if (fleet !== null) await fleet.acquire(stepFor(eventFor('x', []), new Log('x'), never, {}));
        baselineUs.push((performance.now() - seen) * 1000);
        await delay(PREPARE_MS);
      }),
    );
  });
  windows.push({ ...row('baseline: no budget, all prepare at once', n, n, '0'), ...base });

  // 2a. Idle: registered, no event. No slot, no lease: nothing should reach the store.
  let agents = await startAgents(b, n, `${tag}-idle`);
  const idle = await measure(b, agents, LEASE_SECONDS, () => delay(IDLE_SECONDS * 1000));
  windows.push({ ...row('idle: registered, no event', n, n, '0'), ...idle });
  // Beside the baseline: event seen → preparation starts when the slot is free (a store round or two).
  const freeSlotMs: number[] = [];
  for (let round = 0; round < Math.ceil(30 / n); round++) for (const a of agents) freeSlotMs.push(await turn(a, `${a.vm}-free-${round}`));
  await closeAgents(agents);

  // 2b. Idle after an event, short lease: etcd's session lease outlives the slot and is kept alive.
  if (cost.keepAlivePerSecond(IDLE_LEASE_SECONDS) > 0) {
    agents = await startAgents(b, n, `${tag}-idle-lease`, IDLE_LEASE_SECONDS);
    for (const a of agents) await turn(a, `${a.vm}-first`);
    const w = await measure(b, agents, IDLE_LEASE_SECONDS, () => delay(IDLE_SECONDS * 1000));
    const at = (l: number) => (60 * cost.keepAlivePerSecond(l)).toFixed(l > 100 ? 2 : 1);
    windows.push({
      ...row(
        `idle after an event, lease ${IDLE_LEASE_SECONDS} s`,
        n,
        n,
        `keep-alive every ${IDLE_LEASE_SECONDS / 3} s = ${at(IDLE_LEASE_SECONDS)}; at lease ${LEASE_SECONDS} s: ${at(LEASE_SECONDS)}`,
      ),
      ...w,
    });
    await closeAgents(agents);
  }

  // 2c. Holding: one agent holds the slot and its renew loop runs; the others idle.
  agents = await startAgents(b, n, `${tag}-hold`);
  {
    const a = agents[0]!;
    const holder: { record?: BudgetRecord } = {};
    const event = eventFor(`${a.vm}-hold`, [a.vm]);
    await a.coord.acquire(stepFor(event, a.log, never, holder));
    const { slot, claim } = holder.record!;
    a.coord.heldSlots = () => [{ eventId: event.id, slot: slot!, claim: claim as Claim }];
    const every = Math.min(RENEW_MAX_MS, (LEASE_SECONDS * 1000) / 3);
    // The loop renews at once, then every `every`: a window of a whole number of intervals is exact.
    const w = await measure(b, agents, LEASE_SECONDS, async () => {
      const stop = new AbortController();
      const loop = a.coord.renewSlots(stop.signal);
      await delay(HOLD_SECONDS * 1000);
      stop.abort();
      await loop;
    });
    windows.push({
      ...row(
        `holding a slot (1 of ${n})`,
        n,
        1,
        `${cost.renew} per renewal every ${every / 1000} s = ${((60_000 / every) * cost.renew).toFixed(1)}`,
      ),
      ...w,
    });
    a.coord.heldSlots = () => [];
    await a.coord.recover(stepFor(event, a.log, never, holder));
  }
  await closeAgents(agents);

  // 2d. At the barrier: an event naming every agent and one more registered VM that never prepares.
  agents = await startAgents(b, n, `${tag}-barrier`);
  {
    const absent = await createStore(b.config(`${tag}-barrier`, 1, LEASE_SECONDS), 'vm-absent', b.env);
    await absent.open();
    await absent.register();
    await absent.close();
    const event = eventFor(`${tag}-barrier`, [...agents.map((a) => a.vm), 'vm-absent']);
    let marked = 0;
    for (const a of agents) a.log.onInfo = (msg) => void (msg.startsWith('marked this VM prepared') && marked++);
    const stop = new AbortController();
    // Every waiting agent sleeps on it: more listeners than Node's default 10 are expected.
    setMaxListeners(n + 10, stop.signal);
    // Agents finish preparing at different moments, so their reads spread over the poll interval.
    const waits = agents.map(async (a) => {
      await delay(Math.random() * BARRIER_POLL_MS);
      return a.coord.awaitBarrier({ event: () => event, signal: stop.signal, log: a.log });
    });
    // The window opens once every agent has marked itself and read once: the steady state, reads only.
    await waitFor('every agent marked prepared', () => marked >= n, 30_000, 5);
    await delay(BARRIER_POLL_MS);
    const w = await measure(b, agents, LEASE_SECONDS, () => delay(BARRIER_SECONDS * 1000));
    stop.abort();
    const outcomes = await Promise.all(waits);
    if (outcomes.some((o) => o !== 'aborted')) problems.push(`the barrier ended early: ${outcomes.join(',')}`);
    const readMs = (w.ms.get('members') ?? 0) / Math.max(1, w.made.get('members') ?? 0);
    windows.push({
      ...row(
        `at the barrier (${n} + 1 never prepared)`,
        n,
        n,
        `${cost.members} per read every ${BARRIER_POLL_MS / 1000} s = ${((60_000 / BARRIER_POLL_MS) * cost.members).toFixed(0)}; ` +
          `a read takes ${readMs.toFixed(0)} ms and the sleep follows it: ${((60_000 / (BARRIER_POLL_MS + readMs)) * cost.members).toFixed(0)}`,
      ),
      ...w,
    });
    for (const a of agents) a.log.onInfo = null;
  }
  await closeAgents(agents);

  // 1 + 2e. Hand-over with slots 1, in rounds: every agent of a group gets an event at a random moment
  // within one poll interval (so waiters poll at random phases, as separate VMs do); the first to come
  // takes the free slot and holds it until that interval is over (a release tied to the last arrival
  // would fix that waiter's phase) and PREPARE_MS more; then each holder prepares PREPARE_MS and the
  // slot passes down the queue: N−1 hand-overs a round, each to an agent already waiting.
  // Small N runs several groups side by side (they share nothing but the server) so that the run
  // gathers HANDOVERS hand-overs in a few rounds.
  const groups = Math.max(1, Math.floor(HANDOVER_AGENTS / n));
  const rounds = Math.ceil(HANDOVERS / (groups * (n - 1)));
  const fleets = await Promise.all(Array.from({ length: groups }, (_, g) => startAgents(b, n, `${tag}-handover-${g}`)));
  const everyone = fleets.flat();
  const handover: number[] = [];
  const waitMs: number[] = [];
  let late = 0;
  let overlaps = 0;
  let waiters = 0;
  const w = await measure(b, everyone, LEASE_SECONDS, async () => {
    for (let round = 0; round < rounds; round++) {
      await Promise.all(
        fleets.map(async (group) => {
          const turns: { startedAt: number; acquiredAt: number; releasedAt: number; waitersAtRelease: number }[] = [];
          let arrived = 0;
          let inAcquire = 0;
          const roundStart = performance.now();
          await Promise.all(
            group.map(async (a) => {
              await delay(Math.random() * SLOT_POLL_MS);
              const holder: { record?: BudgetRecord } = {};
              const event = eventFor(`${a.vm}-${round}`, [a.vm]);
              const startedAt = performance.now();
              arrived++;
              inAcquire++;
              const got = await a.coord.acquire(stepFor(event, a.log, AbortSignal.timeout(120_000), holder));
              inAcquire--;
              const acquiredAt = performance.now();
              waitMs.push(acquiredAt - startedAt);
              if (!got.ok || holder.record?.slot == null) {
                problems.push(`${a.vm}: no slot within 120 s: ${got.error ?? 'prepared over budget'}`);
                return;
              }
              const t = { startedAt, acquiredAt, releasedAt: Number.NaN, waitersAtRelease: 0 };
              turns.push(t);
              if (turns.length === 1) {
                await delay(Math.max(0, roundStart + SLOT_POLL_MS - performance.now()));
                await waitFor('the group to queue', () => arrived === group.length, 10_000, 5);
              }
              await delay(PREPARE_MS);
              // As the agent does once its preparation succeeded; recovery then gives the slot back.
              await a.coord.markPrepared(event, a.log);
              await a.coord.recover(stepFor(event, a.log, never, holder));
              t.releasedAt = performance.now();
              t.waitersAtRelease = inAcquire;
            }),
          );
          turns.sort((x, y) => x.acquiredAt - y.acquiredAt);
          for (let i = 1; i < turns.length; i++) {
            const prev = turns[i - 1]!;
            const next = turns[i]!;
            if (next.acquiredAt < prev.releasedAt) overlaps++;
            // Should not happen by construction: the next holder came after the release, no hand-over.
            if (next.startedAt >= prev.releasedAt) late++;
            handover.push(next.acquiredAt - prev.releasedAt);
            waiters += prev.waitersAtRelease;
          }
        }),
      );
    }
  });
  await Promise.all(fleets.map(closeAgents));
  handover.sort((x, y) => x - y);
  windows.push({
    ...row(
      `waiting / handing over${groups > 1 ? ` (${groups} groups of ${n})` : ''}`,
      everyone.length,
      everyone.length,
      `${cost.miss} per try every ${SLOT_POLL_MS / 1000} s = ${((60_000 / SLOT_POLL_MS) * cost.miss).toFixed(0)} while waiting, + each turn's acquire, mark and release`,
    ),
    ...w,
  });
  return {
    n,
    windows,
    handover,
    late,
    meanWaiters: waiters / Math.max(1, handover.length),
    overlaps,
    triesImplied: waitMs.reduce((s, ms) => s + 1 + Math.floor(ms / SLOT_POLL_MS), 0),
    waits: waitMs.length,
    waitedMinutes: waitMs.reduce((s, ms) => s + ms, 0) / 60_000,
    baselineUs: baselineUs.sort((x, y) => x - y),
    freeSlotMs: freeSlotMs.sort((x, y) => x - y),
  };
}

// --- printing ---

const perMin = (requests: number, agents: number, seconds: number) => (requests / agents / seconds) * 60;
const pad = (s: string, n: number) => s.padStart(n);

function printSize(r: SizeResult): void {
  console.log(`\n  ${r.n} agents`);
  console.log(
    `    ${'state'.padEnd(42)} ${pad('window', 7)} ${pad('requests', 8)} ${pad('expected', 8)} ${pad('/agent/min', 10)} ${pad('/active/min', 11)}  by the code's intervals, /active/min`,
  );
  for (const w of r.windows) {
    const got = total(w.requests);
    console.log(
      `    ${w.state.padEnd(42)} ${pad(`${w.seconds.toFixed(1)} s`, 7)} ${pad(String(got), 8)} ${pad(w.expected.toFixed(0), 8)} ` +
        `${pad(perMin(got, w.agents, w.seconds).toFixed(1), 10)} ${pad(perMin(got, w.active, w.seconds).toFixed(1), 11)}  ${w.byCode}`,
    );
    if (got > 0) console.log(`      server: ${breakdown(w.requests)}   calls: ${breakdown(w.made)}`);
  }
  const h = r.handover;
  const tries = r.windows.at(-1)!.made.get('tryAcquire') ?? 0;
  console.log(
    `    hand-over latency, release → a waiter's acquire (slots 1, ${h.length} hand-overs, ${r.meanWaiters.toFixed(1)} waiting on average): ` +
      `p50 ${percentile(h, 50).toFixed(0)} ms  p99 ${percentile(h, 99).toFixed(0)} ms  max ${(h.at(-1) ?? Number.NaN).toFixed(0)} ms  ` +
      `(waiters poll every ${SLOT_POLL_MS} ms)${r.late > 0 ? `  ${r.late} LATE ARRIVALS` : ''}${r.overlaps > 0 ? `  ${r.overlaps} OVERLAPPING TURNS` : ''}`,
  );
  const polls = tries - r.waits;
  console.log(
    `    waiting: ${tries} tries in ${r.waits} acquires (the 2 s poll implies ${r.triesImplied}: one at once, then one per ${SLOT_POLL_MS / 1000} s waited); ` +
      `${polls} polls over ${r.waitedMinutes.toFixed(1)} agent-minutes waiting = ${(polls / r.waitedMinutes).toFixed(1)} per waiting agent per minute`,
  );
  console.log(
    `    event seen → preparation starts: baseline (no budget) p50 ${percentile(r.baselineUs, 50).toFixed(1)} µs  p99 ${percentile(r.baselineUs, 99).toFixed(1)} µs; ` +
      `with a budget and a free slot p50 ${percentile(r.freeSlotMs, 50).toFixed(1)} ms  p99 ${percentile(r.freeSlotMs, 99).toFixed(1)} ms (${r.freeSlotMs.length} acquires)`,
  );
}

function breakdown(c: Counts): string {
  return [...c]
    .sort((x, y) => y[1] - x[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(' · ');
}

/** Measured requests per active agent per minute for a state, or NaN when not run. */
function rate(r: SizeResult | undefined, prefix: string): number {
  const w = r?.windows.find((x) => x.state.startsWith(prefix));
  return w ? perMin(total(w.requests), w.active, w.seconds) : Number.NaN;
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log(
    `coordination: ${AGENTS.join(' and ')} agents per backend in one process, each its own FleetCoordinator and store client; ` +
      `leaseSeconds ${LEASE_SECONDS}, request timeout ${STORE_REQUEST_TIMEOUT_MS} ms, prepare ${PREPARE_MS} ms, node ${process.version}`,
  );
  const results = new Map<StoreBackend, SizeResult[]>();
  for (const name of BACKENDS) {
    const b = name === 'etcd' ? await etcdBackend() : await blobBackend();
    try {
      console.log(`\n${b.name}: ${b.describe}`);
      const sizes: SizeResult[] = [];
      for (const n of AGENTS) {
        const r = await runSize(b, n);
        sizes.push(r);
        printSize(r);
      }
      results.set(name, sizes);
    } finally {
      await closeAgents(running);
      await b.close();
    }
  }

  console.log(`\nsummary: requests per active agent per minute, counted at the server (the agent's IMDS polling at 1 Hz: ${IMDS_PER_MIN})`);
  const states: [string, string][] = [
    ['idle', 'idle: registered'],
    [`idle after an event, lease ${IDLE_LEASE_SECONDS} s`, 'idle after'],
    ['holding a slot (the holder)', 'holding'],
    ['at the barrier', 'at the barrier'],
    ['waiting / handing over', 'waiting'],
  ];
  for (const [label, prefix] of states) {
    const parts = [...results].map(([name, sizes]) => {
      const rates = AGENTS.map((n) =>
        rate(
          sizes.find((s) => s.n === n),
          prefix,
        ),
      );
      if (rates.every(Number.isNaN)) return `${name}: not run (nothing runs while idle)`;
      const growth =
        rates.length > 1 && rates[0]! > 0 ? `, ×${(rates.at(-1)! / rates[0]!).toFixed(2)} from ${AGENTS[0]} to ${AGENTS.at(-1)}` : '';
      const imds = `; ${((rates.at(-1)! / IMDS_PER_MIN) * 100).toFixed(0)} % of IMDS at ${AGENTS.at(-1)}`;
      return `${name}: ${rates.map((x, i) => `${AGENTS[i]} agents ${x.toFixed(1)}`).join(', ')}${growth}${imds}`;
    });
    console.log(`  ${label.padEnd(32)} ${parts.join('   ')}`);
  }
  const waiting = [...results].map(
    ([name, sizes]) =>
      `${name}: ${sizes
        .map((s) => {
          const polls = (s.windows.at(-1)!.made.get('tryAcquire') ?? 0) - s.waits;
          return `${s.n} agents ${((polls / s.waitedMinutes) * COSTS[name].miss).toFixed(1)}`;
        })
        .join(', ')}`,
  );
  console.log(
    `  ${'a waiting agent (polls × cost)'.padEnd(32)} ${waiting.join('   ')}   ` +
      `(by the code 30 × requests per try: etcd 1 whatever the slots; azure-blob 1 per slot, so it grows with slots, not agents)`,
  );
  const latency = [...results].map(
    ([name, sizes]) =>
      `${name}: ${sizes.map((s) => `${s.n} agents p50 ${percentile(s.handover, 50).toFixed(0)} / p99 ${percentile(s.handover, 99).toFixed(0)} ms`).join(', ')}`,
  );
  const baseline = [...results].flatMap(([, sizes]) => sizes.flatMap((s) => s.baselineUs)).sort((x, y) => x - y);
  console.log(
    `  ${'hand-over latency'.padEnd(32)} ${latency.join('   ')}   (waiters poll every ${SLOT_POLL_MS} ms; without a budget 0 by construction: event seen → preparing p99 ${percentile(baseline, 99).toFixed(1)} µs, 0 store requests)`,
  );
  if (problems.length > 0) {
    console.log(`\n${problems.length} store warnings or errors, the first: ${problems.slice(0, 5).join('\n  ')}`);
    process.exitCode = 1;
  } else console.log('  no store warnings or errors');
  console.log(`\ntotal ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

await main();
