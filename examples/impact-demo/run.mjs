// Real impact, end to end: two instances of a toy service behind a toy balancer, each bound to an
// emulated VM. vm0 gets a Freeze and a Reboot twice: once with nobody preparing for them, and once
// with Forewarn's agent draining vm0's instance from the balancer before approving. The emulator
// really SIGSTOPs the instance for the Freeze and restarts it for the Reboot; a steady stream of
// requests counts what is lost.
//   node examples/impact-demo/run.mjs      (after `npm install`; about a minute)
// Exit 0 when requests were lost without the agent and none with it.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startEmulator } from 'forewarn';
import { startBalancer } from './balancer.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const node = process.execPath;
// [choice] 30x faster than Azure: a Reboot's impact (180 s) takes 6 s, a notice of 60 s takes 2 s.
const TIMING = 30;
const dir = mkdtempSync(join(tmpdir(), 'forewarn-impact-demo-'));
const ports = { vm0: 18080 + Math.floor(Math.random() * 1000), vm1: 0 };
ports.vm1 = ports.vm0 + 1;

// Real impact signals real processes, so it is opt-in and needs a control token; the handle sends it.
const emulator = await startEmulator({
  fleet: { vms: [{ name: 'vm0' }, { name: 'vm1' }] },
  timing: TIMING,
  rateLimit: 0,
  impact: true,
  token: randomBytes(16).toString('hex'),
});
const balancer = await startBalancer([
  { name: 'vm0', port: ports.vm0 },
  { name: 'vm1', port: ports.vm1 },
]);
let agent = null;

/** A request every 20 ms through the balancer, counting the ones that fail. */
function load() {
  const counts = { ok: 0, lost: 0 };
  let running = true;
  const done = (async () => {
    while (running) {
      try {
        const res = await fetch(balancer.url, { signal: AbortSignal.timeout(1000) });
        await res.text();
        counts[res.ok ? 'ok' : 'lost']++;
      } catch {
        counts.lost++;
      }
      await sleep(20);
    }
  })();
  return {
    counts,
    stop: async () => {
      running = false;
      await done;
      return counts;
    },
  };
}

async function waitFor(what, check, timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const serviceUp = (vm) => () =>
  fetch(`http://127.0.0.1:${ports[vm]}`, { signal: AbortSignal.timeout(300) }).then(
    (r) => r.ok,
    () => false,
  );

/** One maintenance: schedules it on vm0, waits for it to start (at NotBefore, or once approved) and for its impact to pass, then ends it. */
async function maintenance(type, durationInSeconds) {
  const notBefore = new Date(Date.now() + 60_000 / TIMING).toISOString();
  const { events } = await emulator.trigger({
    type,
    vms: ['vm0'],
    notBefore,
    force: true,
    ...(durationInSeconds ? { durationInSeconds } : {}),
  });
  const id = events[0];
  await waitFor(`${type} to start`, async () => (await emulator.events()).find((e) => e.id === id && e.status === 'Started'));
  // The impact: frozen or rebooting, then running again, with the service answering.
  await waitFor(`${type}'s impact to pass`, async () => (await emulator.vm('vm0')).state === 'running', 60_000);
  await waitFor('the service to answer again', serviceUp('vm0'));
  // The event would stay listed for ~10 minutes (scaled); end it now, as the platform would once done.
  await emulator.complete(id);
  if (agent !== null) await waitFor('the agent to undrain vm0', () => !balancer.drained.has('vm0'));
  return id;
}

async function round(label) {
  const traffic = load();
  await sleep(500);
  await maintenance('freeze', 90);
  await maintenance('platform-reboot');
  await sleep(500);
  const counts = await traffic.stop();
  console.log(`${label.padEnd(22)} ${String(counts.ok).padStart(6)} answered ${String(counts.lost).padStart(5)} lost`);
  return counts;
}

let code;
try {
  for (const vm of ['vm0', 'vm1']) {
    await emulator.bindProcess(vm, { command: [node, join(here, 'service.mjs'), String(ports[vm]), vm], graceSeconds: 2 });
    await waitFor(`${vm}'s service`, serviceUp(vm));
  }
  console.log(`Freeze (3 s) and Reboot (${180 / TIMING} s) on vm0, requests through the balancer every 20 ms:`);
  const without = await round('without the agent');

  // The agent on vm0: drain its instance, approve once drained, undrain when the event is over.
  const drain = (verb) => ({
    type: 'exec',
    name: verb,
    argv: [node, join(here, 'drain.mjs'), balancer.url, 'vm0', verb],
    timeoutSeconds: 10,
  });
  const config = {
    endpoint: emulator.vmUrl('vm0'),
    pollIntervalSeconds: 0.2,
    journal: join(dir, 'journal.json'),
    listen: null,
    rules: [
      {
        name: 'drain',
        match: { eventType: ['Freeze', 'Reboot'] },
        actions: [drain('drain')],
        approval: 'after-actions',
        // Requests already on their way to the instance finish first.
        approvalMarginSeconds: 1,
        onComplete: [drain('undrain')],
        onCancel: [drain('undrain')],
      },
    ],
  };
  writeFileSync(join(dir, 'agent.json'), JSON.stringify(config));
  // The package's own CLI (what `npx forewarn` runs), once it has started.
  const cli = fileURLToPath(new URL('./cli/main.js', import.meta.resolve('forewarn')));
  agent = spawn(node, [cli, 'agent', '--config', join(dir, 'agent.json')], { stdio: ['ignore', 'pipe', 'inherit'] });
  let log = '';
  agent.stdout.on('data', (d) => (log += d));
  await waitFor('the agent to start', () => log.includes('"msg":"agent started"'), 30_000);
  const withAgent = await round('with the agent');
  code = without.lost > 0 && withAgent.lost === 0 ? 0 : 1;
  console.log(code === 0 ? 'The agent drained vm0 before each event: no request lost.' : 'Unexpected: see the counts above.');
} catch (err) {
  console.error(`the demo failed: ${err.message}`);
  code = 1;
} finally {
  // Its journal is in `dir`: let it finish writing before the directory goes.
  if (agent !== null && agent.exitCode === null) {
    const exited = new Promise((resolve) => agent.once('exit', resolve));
    agent.kill('SIGTERM');
    await exited;
  }
  await emulator.close();
  await balancer.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
