// Scheduled events for a whole fleet: what Event Grid delivery costs the emulator, and how soon a controller
// fed by it acknowledges an event, against the same run's IMDS-polling agent.
//  1. Deliveries: N events (one per standalone VM, each with the policy on) created by one operation, until a
//     webhook in its own process has received every Scheduled notification. Per size and batch setting:
//     deliveries per second and the emulator's CPU per delivery, against the same run's creation of the same
//     events with no subscription (what the engine alone costs).
//  2. Latency, from an event's creation to its approval (the emulator's own record of both): `forewarn
//     controller` (Event Grid push, ARM acknowledge) against `forewarn agent` (IMDS polled at 1 Hz), each
//     running one exec action before approving, on EVENTS events each, interleaved.
//  3. The controller's intake: the deliveries of part 1 (batch 1) taken by `forewarn controller`, which answers
//     each only once its journal holds it on disk, against the bare webhook of part 1 in the same run.
// Every process runs from the compiled dist/ (as installed). Linux (/proc) only.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedPort } from '../test/support/cli.js';
import { delay as sleep, waitFor as waitUntil } from '../test/support/wait.js';
import { buildDist, percentile, runThenClean, startProcess, usage } from './processes.js';

const SIZES = (process.env.BENCH_SIZES ?? '1000,10000').split(',').map(Number);
const BATCHES = (process.env.BENCH_BATCHES ?? '1,100').split(',').map(Number);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 30);
const repo = new URL('..', import.meta.url).pathname;
const main = join(repo, 'dist/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'forewarn-bench-eventgrid-'));
const children: ChildProcess[] = [];
const POLICY = { scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: { enable: true } } };
const ARM_RESOURCE = 'https://management.azure.com/';

const start = (args: string[]) => startProcess(children, repo, args);

const waitFor = <T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, ms = 120_000) =>
  waitUntil(what, probe, ms);

const cpuOf = (pid: number) => usage(pid).cpu;

async function json<T>(url: string, init?: { method?: string; body?: unknown; headers?: Record<string, string> }): Promise<T> {
  const res = await fetch(url, {
    method: init?.method ?? (init?.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init?.body === undefined ? {} : { 'content-type': 'application/json' }), ...init?.headers },
    ...(init?.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: ${res.status} ${text}`);
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/** The webhook of part 1: answers the handshake, counts the events it is sent, and reports them on GET. */
const SINK = `
const http = require('node:http');
let events = 0, requests = 0;
http.createServer((req, res) => {
  if (req.method === 'GET') { res.end(JSON.stringify({ events, requests })); return; }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString() || '[]');
    if (req.headers['aeg-event-type'] === 'SubscriptionValidation') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ validationResponse: body[0].data.validationCode }));
      return;
    }
    requests++;
    events += Array.isArray(body) ? body.length : 1;
    res.end();
  });
}).listen(Number(process.argv[1]), '127.0.0.1', () => console.log('sink ready'));
`;

async function startEmulator(fleet: unknown, extra: string[] = []): Promise<{ pid: number; imdsUrl: string; controlUrl: string }> {
  const fleetFile = join(dir, `fleet-${children.length}.json`);
  writeFileSync(fleetFile, JSON.stringify(fleet));
  const imds = await closedPort();
  const control = await closedPort();
  const emulator = start([
    main,
    'emulator',
    '--imds',
    `127.0.0.1:${imds}`,
    '--control',
    `127.0.0.1:${control}`,
    '--fleet',
    fleetFile,
    '--rate-limit',
    '0',
    '--log-level',
    'warn',
    ...extra,
  ]);
  const [, imdsUrl, controlUrl] = await waitFor(
    'the emulator',
    () => /IMDS:\s+(\S+)\nControl:\s+(\S+)/.exec(emulator.output()) ?? undefined,
  );
  return { pid: emulator.child.pid!, imdsUrl: imdsUrl!, controlUrl: controlUrl! };
}

/** An emulator with the largest size's standalone VMs, each with the policy on, and part 1's webhook. */
async function fleetAndSink() {
  const largest = Math.max(...SIZES);
  const names = Array.from({ length: largest }, (_, i) => `vm${i}`);
  const emu = await startEmulator({ vms: names.map((name) => ({ name, scheduledEventsPolicy: POLICY })) });
  const sinkPort = await closedPort();
  const sink = start(['-e', SINK, String(sinkPort)]);
  await waitFor('the sink', () => sink.output().includes('sink ready'));
  return { names, emu, sink, sinkUrl: `http://127.0.0.1:${sinkPort}` };
}

/** Waits until a controller's webhook on `port` answers. */
const controllerListening = (port: number) =>
  waitFor('the controller', async () => {
    try {
      await fetch(`http://127.0.0.1:${port}/eventgrid`, { method: 'OPTIONS' });
      return true;
    } catch {
      return undefined;
    }
  });

async function deliveries(): Promise<void> {
  const { names, emu, sink, sinkUrl } = await fleetAndSink();
  console.log('1. Event Grid deliveries: one restart operation over N standalone VMs, Scheduled notifications to one webhook');
  console.log(
    '   N        batch   wall      deliveries/s   emulator CPU/delivery   requests   webhook CPU/request   (no subscription: CPU/event)',
  );
  for (const size of SIZES) {
    // The baseline: the same events, created with no subscription, then cancelled.
    await json(`${emu.controlUrl}/v1/reset`, { body: {} });
    let c0 = cpuOf(emu.pid);
    await json(`${emu.controlUrl}/v1/operations`, { body: { type: 'restart', vms: names.slice(0, size) } });
    const baseCpu = cpuOf(emu.pid) - c0;
    for (const batch of BATCHES) {
      await json(`${emu.controlUrl}/v1/reset`, { body: {} });
      const { subscription } = await json<{ subscription: { id: string } }>(`${emu.controlUrl}/v1/eventgrid/subscriptions`, {
        body: { endpoint: sinkUrl, maxEventsPerBatch: batch, preferredBatchSizeInKilobytes: 1024 },
      });
      const before = await json<{ events: number; requests: number }>(sinkUrl);
      c0 = cpuOf(emu.pid);
      const s0 = cpuOf(sink.child.pid!);
      const t0 = performance.now();
      await json(`${emu.controlUrl}/v1/operations`, { body: { type: 'restart', vms: names.slice(0, size) } });
      const after = await waitFor(
        `${size} deliveries`,
        async () => {
          const now = await json<{ events: number; requests: number }>(sinkUrl);
          return now.events - before.events >= size ? now : undefined;
        },
        600_000,
      );
      const wall = (performance.now() - t0) / 1000;
      const cpu = cpuOf(emu.pid) - c0;
      const requests = after.requests - before.requests;
      const sinkCpu = cpuOf(sink.child.pid!) - s0;
      await json(`${emu.controlUrl}/v1/eventgrid/subscriptions/${subscription.id}`, { method: 'DELETE' });
      console.log(
        `   ${String(size).padEnd(8)} ${String(batch).padEnd(7)} ${wall.toFixed(2).padStart(6)} s  ${Math.round(size / wall)
          .toString()
          .padStart(
            12,
          )}   ${((cpu / size) * 1e6).toFixed(0).padStart(14)} µs        ${String(requests).padStart(8)}   ${((sinkCpu / requests) * 1e6).toFixed(0).padStart(12)} µs       (${((baseCpu / size) * 1e6).toFixed(0)} µs)`,
      );
    }
  }
}

interface EventView {
  id: string;
  createdAt?: string;
  startedAt: string | null;
  startedBy: string | null;
}

async function latency(): Promise<void> {
  const emu = await startEmulator(
    {
      vms: [
        { name: 'polled', resourceGroup: 'rg' },
        { name: 'pushed', resourceGroup: 'rg', scheduledEventsPolicy: POLICY },
      ],
    },
    ['--clock', 'system'],
  );
  // An ARM token from the emulator's managed identity endpoint, as a controller on a VM would get one.
  const token = await json<{ access_token: string }>(
    `${emu.imdsUrl}/vms/pushed/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${encodeURIComponent(ARM_RESOURCE)}`,
    { headers: { Metadata: 'true' } },
  );
  const tokenFile = join(dir, 'arm-token');
  writeFileSync(tokenFile, token.access_token);
  const action = { type: 'exec', name: 'prepare', argv: ['true'] };
  const rules = [{ name: 'all', actions: [action], approval: 'after-actions' }];

  const agentConfig = join(dir, 'agent.json');
  writeFileSync(
    agentConfig,
    JSON.stringify({
      endpoint: `${emu.imdsUrl}/vms/polled`,
      vmName: 'polled',
      pollIntervalSeconds: 1,
      journal: join(dir, 'agent-journal.json'),
      listen: false,
      rules,
    }),
  );
  const agent = start([main, 'agent', '--config', agentConfig]);
  await waitFor('the agent', () => agent.output().includes('"msg":"agent started"'));

  const hook = await closedPort();
  const controllerConfig = join(dir, 'controller.json');
  writeFileSync(
    controllerConfig,
    JSON.stringify({
      eventGrid: { listen: `127.0.0.1:${hook}`, path: '/eventgrid' },
      arm: { endpoint: emu.controlUrl, credential: { kind: 'token', tokenFile } },
      journal: join(dir, 'controller-journal.json'),
      listen: false,
      rules,
    }),
  );
  start([main, 'controller', '--config', controllerConfig]);
  await controllerListening(hook);
  await json(`${emu.controlUrl}/v1/eventgrid/subscriptions`, { body: { endpoint: `http://127.0.0.1:${hook}/eventgrid` } });

  console.log(`2. Latency, event created → approved (exec action first), ${EVENTS} events each, interleaved`);
  const took: Record<'polled' | 'pushed', number[]> = { polled: [], pushed: [] };
  for (let i = 0; i < EVENTS; i++) {
    for (const vm of ['polled', 'pushed'] as const) {
      // At a random moment relative to the agent's poll.
      await sleep(100 + Math.random() * 900);
      const created = Date.now();
      const { events } = await json<{ events: string[] }>(`${emu.controlUrl}/v1/operations`, { body: { type: 'restart', vms: [vm] } });
      const id = events[0]!;
      const event = await waitFor(`${vm}'s approval of ${id}`, async () => {
        const { event: e } = await json<{ event: EventView }>(`${emu.controlUrl}/v1/events/${id}`);
        return e.startedAt !== null ? e : undefined;
      });
      if (event.startedBy !== 'approval') throw new Error(`${id} started by ${event.startedBy}, not an approval`);
      took[vm].push(Date.parse(event.startedAt!) - created);
      await json(`${emu.controlUrl}/v1/events/${id}/complete`, { body: {} });
    }
  }
  for (const [vm, label] of [
    ['polled', 'agent, IMDS polled at 1 Hz'],
    ['pushed', 'controller, Event Grid + ARM'],
  ] as const) {
    const sorted = took[vm].sort((a, b) => a - b);
    console.log(
      `   ${label.padEnd(30)} p50 ${String(percentile(sorted, 50)).padStart(5)} ms   p99 ${String(percentile(sorted, 99)).padStart(5)} ms   max ${String(sorted.at(-1)).padStart(5)} ms`,
    );
  }
}

/** Sends `size` Scheduled notifications (batch 1) to `endpoint`; resolves with the wall time once `received()` reaches size. */
async function deliver(
  emu: { controlUrl: string },
  names: string[],
  endpoint: string,
  received: () => Promise<number>,
): Promise<{ wall: number; subscription: string }> {
  await json(`${emu.controlUrl}/v1/reset`, { body: {} });
  const { subscription } = await json<{ subscription: { id: string } }>(`${emu.controlUrl}/v1/eventgrid/subscriptions`, {
    body: { endpoint, maxEventsPerBatch: 1 },
  });
  const before = await received();
  const t0 = performance.now();
  await json(`${emu.controlUrl}/v1/operations`, { body: { type: 'restart', vms: names } });
  await waitFor(`${names.length} deliveries to ${endpoint}`, async () => (await received()) - before >= names.length, 600_000);
  return { wall: (performance.now() - t0) / 1000, subscription: subscription.id };
}

/** Sums a Prometheus counter's samples, those with `label` if given. */
async function counter(metricsUrl: string, name: string, label = ''): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name) && line.includes(label)) sum += Number(line.split(' ').at(-1));
  return sum;
}

async function intake(): Promise<void> {
  const { names, emu, sink, sinkUrl } = await fleetAndSink();

  const hook = await closedPort();
  const metricsPort = await closedPort();
  const config = join(dir, 'intake-controller.json');
  writeFileSync(
    config,
    JSON.stringify({
      eventGrid: { listen: `127.0.0.1:${hook}`, path: '/eventgrid' },
      arm: { endpoint: emu.controlUrl, credential: { kind: 'token', tokenFile: join(dir, 'arm-token') } },
      journal: join(dir, 'intake-journal.json'),
      listen: `127.0.0.1:${metricsPort}`,
      // Matches none of these Reboots: what is measured is taking a delivery, not acting on it.
      rules: [{ name: 'terminations', match: { eventType: 'Terminate' }, actions: [] }],
    }),
  );
  const controller = start([main, 'controller', '--config', config, '--log-level', 'warn']);
  await controllerListening(hook);
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  console.log('3. Intake: the same Scheduled notifications (batch 1), to a bare webhook and to `forewarn controller` (journal fsynced)');
  console.log('   N        receiver     wall      deliveries/s   receiver CPU/delivery');
  for (const size of SIZES) {
    for (const [label, endpoint, pid, received] of [
      ['webhook', sinkUrl, sink.child.pid!, async () => (await json<{ events: number }>(sinkUrl)).events],
      [
        'controller',
        `http://127.0.0.1:${hook}/eventgrid`,
        controller.child.pid!,
        () => counter(metricsUrl, 'forewarn_agent_eventgrid_notifications_total', 'outcome="taken"'),
      ],
    ] as const) {
      const c0 = cpuOf(pid);
      const { wall, subscription } = await deliver(emu, names.slice(0, size), endpoint, received);
      const cpu = cpuOf(pid) - c0;
      await json(`${emu.controlUrl}/v1/eventgrid/subscriptions/${subscription}`, { method: 'DELETE' });
      console.log(
        `   ${String(size).padEnd(8)} ${label.padEnd(11)} ${wall.toFixed(2).padStart(6)} s  ${Math.round(size / wall)
          .toString()
          .padStart(12)}   ${((cpu / size) * 1e6).toFixed(0).padStart(14)} µs`,
      );
    }
  }
}

async function run(): Promise<void> {
  buildDist(repo, main);
  const parts = (process.env.BENCH_PARTS ?? '1,2,3').split(',');
  if (parts.includes('1')) await deliveries();
  for (const c of children.splice(0)) c.kill('SIGTERM');
  if (parts.includes('2')) await latency();
  for (const c of children.splice(0)) c.kill('SIGTERM');
  if (parts.includes('3')) {
    writeFileSync(join(dir, 'arm-token'), 'unused: no rule here approves');
    await intake();
  }
}

await runThenClean(run, children, dir);
