// The agent's reaction time and idle cost, against the emulator, with a bare fetch loop as baseline.
//  1. Latency: with the agent polling at 1 Hz, from an operation being created until the matching
//     action starts (it appends `EventId epoch-ms` to a file). p50 and p99 over EVENTS events.
//     Goal: p99 under 1.2 s (a 1 s poll, ±10 % jitter, plus the action's start).
//  2. Idle: RSS and CPU of the agent over IDLE_SECONDS of polling an unchanging document, and of a
//     bare Node `fetch` loop polling the same endpoint at 1 Hz over the same window. Goal: the
//     agent under 1 % of a core.
// Both run from the compiled dist/ (as installed), not through tsx's loader. Linux (/proc) only.
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emulatorArgs } from '../test/support/cli.js';
import { buildDist, percentile, runThenClean, startProcess, usage } from './processes.js';
import { delay as sleep, waitFor as waitUntil } from '../test/support/wait.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 60);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
const repo = new URL('..', import.meta.url).pathname;
const main = join(repo, 'dist/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'forewarn-bench-agent-'));
const children: ChildProcess[] = [];

const start = (args: string[]) => startProcess(children, repo, args);

/** Polls every 20 ms for up to 30 s. */
const waitFor = <T>(what: string, probe: () => T | undefined | false) => waitUntil(what, probe, 30_000);

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MiB`;

async function run(): Promise<void> {
  buildDist(repo, main);

  const emulator = start([main, ...emulatorArgs({ rateLimit: 0, logLevel: 'silent' })]);
  const [, imdsUrl, controlUrl] = await waitFor(
    'the emulator',
    () => /IMDS:\s+(\S+)\nControl:\s+(\S+)/.exec(emulator.output()) ?? undefined,
  );

  const stamps = join(dir, 'stamps');
  const config = {
    endpoint: imdsUrl,
    vmName: 'vm0',
    pollIntervalSeconds: 1,
    journal: join(dir, 'journal.json'),
    listen: '127.0.0.1:0',
    rules: [
      {
        name: 'stamp',
        // The program is fixed; the EventId reaches it only as an environment variable.
        actions: [{ type: 'exec', name: 'stamp', argv: ['sh', '-c', `echo "$FOREWARN_EVENT_ID $(date +%s%3N)" >> '${stamps}'`] }],
        approval: 'never',
      },
    ],
  };
  const configFile = join(dir, 'agent.yaml');
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const agent = start([main, 'agent', '--config', configFile]);
  await waitFor('the agent', () => (agent.output().includes('"msg":"agent started"') ? true : undefined));

  // The baseline: what any poller costs, with nothing else.
  const loop = `const u=${JSON.stringify(`${imdsUrl}/metadata/scheduledevents?api-version=2020-07-01`)};
    (async()=>{for(;;){try{const r=await fetch(u,{headers:{Metadata:'true'}});await r.text();}catch{}await new Promise(r=>setTimeout(r,1000));}})();`;
  const baseline = start(['-e', loop]);

  // 1. Latency. Operations at random moments relative to the poll, a few hundred ms apart.
  console.log(`latency: ${EVENTS} operations …`);
  const created = new Map<string, number>();
  for (let i = 0; i < EVENTS; i++) {
    await sleep(200 + Math.random() * 300);
    const t0 = Date.now();
    const res = await fetch(`${controlUrl}/v1/operations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'platform-reboot', vms: ['vm0'] }),
    });
    const { events } = (await res.json()) as { events: string[] };
    created.set(events[0]!.toLowerCase(), t0);
  }
  const seen = await waitFor('every action', () => {
    const lines = existsSync(stamps) ? readFileSync(stamps, 'utf8').split('\n').filter(Boolean) : [];
    return lines.length >= EVENTS ? lines : undefined;
  });
  const latencies = seen.map((line) => {
    const [id, at] = line.split(' ');
    return Number(at) - created.get(id!.toLowerCase())!;
  });
  latencies.sort((a, b) => a - b);
  for (const id of created.keys()) await fetch(`${controlUrl}/v1/events/${id}/cancel`, { method: 'POST' });

  // 2. Idle: nothing changes; both processes just poll.
  await sleep(3000);
  console.log(`idle: ${IDLE_SECONDS} s of polling …`);
  const a0 = usage(agent.child.pid!);
  const b0 = usage(baseline.child.pid!);
  let agentPeak = a0.rss;
  let basePeak = b0.rss;
  for (let s = 0; s < IDLE_SECONDS; s++) {
    await sleep(1000);
    agentPeak = Math.max(agentPeak, usage(agent.child.pid!).rss);
    basePeak = Math.max(basePeak, usage(baseline.child.pid!).rss);
  }
  const a1 = usage(agent.child.pid!);
  const b1 = usage(baseline.child.pid!);
  const agentCpu = ((a1.cpu - a0.cpu) / IDLE_SECONDS) * 100;
  const baseCpu = ((b1.cpu - b0.cpu) / IDLE_SECONDS) * 100;

  const p50 = percentile(latencies, 50);
  const p99 = percentile(latencies, 99);
  console.log('');
  console.log(`Agent latency, operation created → action started (1 Hz polling, ${latencies.length} events):`);
  console.log(
    `  p50 ${p50} ms   p99 ${p99} ms   min ${latencies[0]} ms   max ${latencies.at(-1)} ms   goal: p99 < 1200 ms ${p99 < 1200 ? 'MET' : 'MISSED'}`,
  );
  console.log(`Idle polling at 1 Hz over ${IDLE_SECONDS} s:`);
  console.log(
    `  agent:           CPU ${agentCpu.toFixed(2)} % of a core   RSS ${mib(a1.rss)} (peak ${mib(agentPeak)})   goal: CPU < 1 % ${agentCpu < 1 ? 'MET' : 'MISSED'}`,
  );
  console.log(`  bare fetch loop: CPU ${baseCpu.toFixed(2)} % of a core   RSS ${mib(b1.rss)} (peak ${mib(basePeak)})`);
}

await runThenClean(run, children, dir);
