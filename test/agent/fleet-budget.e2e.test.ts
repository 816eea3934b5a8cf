// The fleet budget end to end, on each real store: the emulator as IMDS for three VMs of one tenant,
// three `forewarn agent` processes with exec preparation of set lengths and `budget: {slots: 1}`,
// and a three-member etcd cluster (Debian's etcd-server) or Azurite, started here. Per store:
// Reboots on all three never prepare at once; an agent SIGKILLed while it holds the slot frees it
// after leaseSeconds; the store stopped makes every VM prepare over budget before its NotBefore; an
// event naming two VMs starts only after the slower preparation ends. On etcd, the leader SIGKILLed
// mid-preparation changes nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { startAzurite, type Azurite } from '../support/azurite.js';
import { etcdSkipReason, startEtcdCluster, type EtcdCluster } from '../support/etcd-cluster.js';
import { waitFor } from '../support/wait.js';
import {
  Proc,
  api,
  fixtures,
  liveEvent,
  lines,
  metric,
  node,
  startAgent,
  startEmulator,
  trigger,
  type Emu,
  type RunningAgent,
} from './e2e-support.js';

const VMS = ['web-0', 'web-1', 'web-2'] as const;
type Vm = (typeof VMS)[number];
const LEASE_SECONDS = 5;

interface Backend {
  name: string;
  skip: string | false;
  start(): Promise<void>;
  budget(group: string): Record<string, unknown>;
  env(): Record<string, string>;
  /** The store out: every agent's requests fail. */
  outage(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

function etcdBackend(): Backend {
  let cluster: EtcdCluster | null = null;
  return {
    name: 'etcd',
    skip: etcdSkipReason(),
    async start() {
      cluster = await startEtcdCluster({ members: 3 });
    },
    budget: (group) => ({ backend: 'etcd', endpoints: cluster!.endpoints, group }),
    env: () => ({}),
    outage: () => cluster!.stopAll(),
    restore: () => cluster!.startAll(),
    close: async () => cluster?.close(),
    get cluster() {
      return cluster;
    },
  } as Backend & { cluster: EtcdCluster | null };
}

function blobBackend(): Backend {
  let azurite: Azurite | null = null;
  return {
    name: 'azure-blob',
    skip: false,
    async start() {
      azurite = await startAzurite();
      await azurite.createContainer('forewarn');
    },
    budget: (group) => ({ backend: 'azure-blob', containerUrl: azurite!.containerUrl('forewarn'), group }),
    env: () => ({ AZURE_STORAGE_CONNECTION_STRING: azurite!.connectionString }),
    outage: () => azurite!.stop('SIGTERM'),
    restore: () => azurite!.start(),
    close: async () => azurite?.close(),
  };
}

interface Run {
  vm: string;
  event: string;
  what: 'start' | 'end';
  at: number;
}

for (const backend of [etcdBackend(), blobBackend()]) {
  describe(
    `agent e2e: the fleet budget on ${backend.name}`,
    { skip: (process.platform === 'win32' && 'POSIX only') || backend.skip },
    () => {
      let dir: string;
      let emu: Emu;
      let groups = 0;

      before(async () => {
        dir = mkdtempSync(join(tmpdir(), `forewarn-fleet-${backend.name}-`));
        const fleet = join(dir, 'fleet.yaml');
        writeFileSync(fleet, `vms:\n${VMS.map((vm) => `  - name: ${vm}\n    tenant: web\n`).join('')}`);
        emu = await startEmulator(['--fleet', fleet]);
        await backend.start();
      });

      /** The agents of the running test, by VM. */
      let live: [string, RunningAgent][] = [];
      /** What the agents of the test logged, for a failure message. */
      const story = () =>
        live
          .map(([vm, a]) => {
            const hidden = new Set(['msg', 'time', 'pid', 'hostname', 'level']);
            const shown = a.proc.logs().map((l) => {
              const rest = Object.fromEntries(Object.entries(l).filter(([k]) => !hidden.has(k)));
              return `  ${String(l.msg)} ${JSON.stringify(rest)}`;
            });
            return `${vm}:\n${shown.join('\n')}`;
          })
          .join('\n');

      // Each test starts from no events and no agents: what one left would act on the next one's events.
      beforeEach(async () => {
        const { status: code } = await api(emu, 'POST', '/v1/reset');
        assert.equal(code, 200);
      });
      afterEach(async () => {
        await Promise.all(live.map(([, a]) => a.proc.stop('SIGKILL').catch(() => undefined)));
        live = [];
      });

      after(async () => {
        Proc.killAll();
        await emu?.proc.stop().catch(() => undefined);
        await backend.close();
        rmSync(dir, { recursive: true, force: true });
      });

      /** Starts one agent per VM, each preparing for `prepareMs(vm)`; resolves once each registered in the store. */
      async function agents(
        vms: readonly Vm[],
        prepareMs: (vm: Vm) => number,
        over: { budget?: Record<string, unknown>; registered?: boolean } = {},
      ): Promise<{ runs: () => Run[]; agents: Map<Vm, RunningAgent> }> {
        const group = `g${++groups}`;
        const runsFile = join(dir, `${group}.runs.jsonl`);
        const started = new Map<Vm, RunningAgent>();
        await Promise.all(
          vms.map(async (vm) => {
            const config = {
              endpoint: `${emu.imdsUrl}/vms/${vm}`,
              pollIntervalSeconds: 0.2,
              journal: join(dir, `${group}-${vm}.journal.json`),
              listen: '127.0.0.1:0',
              shutdownGraceSeconds: 1,
              rules: [
                {
                  name: 'prepare',
                  match: { eventType: ['Reboot'], affectsThisVm: true },
                  actions: [
                    {
                      type: 'exec',
                      name: 'prepare',
                      argv: [node, join(fixtures, 'prepare-timed.mjs'), runsFile, vm, String(prepareMs(vm))],
                    },
                  ],
                  approval: 'after-actions',
                },
              ],
              budget: { slots: 1, leaseSeconds: LEASE_SECONDS, minPrepareSeconds: 1, ...backend.budget(group), ...over.budget },
            };
            const until = over.registered === false ? 'serving /metrics, /healthz and /readyz' : 'registered in the fleet store';
            const agent = await startAgent(join(dir, `${group}-${vm}.json`), config, { until, env: backend.env() });
            started.set(vm, agent);
            live.push([vm, agent]);
          }),
        );
        const runs = (): Run[] => lines(runsFile).map((l) => JSON.parse(l) as Run);
        return { runs, agents: started };
      }

      const status = async (id: string) => (await liveEvent(emu, id))?.status;

      /** Ends each event once it has Started, one at a time, checking no two are in maintenance at once. */
      async function runThrough(ids: string[]): Promise<Map<string, number>> {
        const completedAt = new Map<string, number>();
        while (completedAt.size < ids.length) {
          const id = await waitFor(
            `one of ${ids.length - completedAt.size} events Started`,
            async () => {
              for (const i of ids) if (!completedAt.has(i) && (await status(i)) === 'Started') return i;
              return undefined;
            },
            60_000,
            100,
          );
          const startedNow = [];
          for (const i of ids) if (!completedAt.has(i) && (await status(i)) === 'Started') startedNow.push(i);
          assert.equal(startedNow.length, 1, `one VM in maintenance at a time\n${story()}`);
          completedAt.set(id, Date.now());
          const { status: code } = await api(emu, 'POST', `/v1/events/${id}/complete`);
          assert.equal(code, 200);
        }
        return completedAt;
      }

      function assertOneAtATime(runs: Run[], completedAt: Map<string, number>): void {
        const starts = runs.filter((r) => r.what === 'start').sort((a, b) => a.at - b.at);
        const endOf = (r: Run) => runs.find((x) => x.what === 'end' && x.vm === r.vm && x.event === r.event)?.at ?? Number.NaN;
        for (let i = 1; i < starts.length; i++) {
          const prev = starts[i - 1]!;
          assert.ok(starts[i]!.at >= endOf(prev), `${starts[i]!.vm} started preparing while ${prev.vm} still was`);
          assert.ok(starts[i]!.at >= completedAt.get(prev.event)!, `${starts[i]!.vm} prepared before ${prev.vm}'s Reboot was over`);
        }
      }

      const reboot = (...vms: Vm[]) => trigger(emu, { type: 'platform-reboot', vms });

      it('one slot: Reboots on all three VMs never prepare at once', { timeout: 120_000 }, async () => {
        const { runs, agents: running } = await agents(VMS, () => 500);
        const ids = [];
        for (const vm of VMS) ids.push(await reboot(vm));
        const completedAt = await runThrough(ids);
        assertOneAtATime(runs(), completedAt);
        for (const [vm, a] of running) {
          await a.proc.waitForLog(`${vm} gave its slot back`, (l) => l.msg === 'gave the budget slot back', 20_000);
          assert.equal(await metric(a, 'forewarn_agent_budget_over_budget_total', `{backend="${backend.name}"}`), 0);
          await a.proc.stop();
        }
      });

      if (backend.name === 'etcd') {
        it('the etcd leader SIGKILLed mid-preparation changes nothing', { timeout: 120_000 }, async () => {
          const cluster = (backend as Backend & { cluster: EtcdCluster }).cluster;
          // A lease of 15 s: an election takes well under a second, and a loaded CI machine must not turn a slow keep-alive into a lost slot.
          const { runs, agents: running } = await agents(VMS, () => 3_000, { budget: { leaseSeconds: 15 } });
          const ids = [];
          for (const vm of VMS) ids.push(await reboot(vm));
          await waitFor('a preparation under way', () => runs().some((r) => r.what === 'start'), 30_000);
          const leader = await cluster.leader();
          await cluster.kill(leader, 'SIGKILL');
          const completedAt = await runThrough(ids);
          assertOneAtATime(runs(), completedAt);
          for (const a of running.values()) {
            assert.equal(a.proc.logs().filter((l) => /lost a budget slot/.test(String(l.msg))).length, 0, `no slot lost\n${story()}`);
            assert.equal(await metric(a, 'forewarn_agent_budget_over_budget_total', '{backend="etcd"}'), 0);
            await a.proc.stop();
          }
          await cluster.restart(leader);
        });
      }

      it('an agent SIGKILLed while it holds the slot frees it after leaseSeconds', { timeout: 120_000 }, async () => {
        const { runs, agents: running } = await agents(['web-0', 'web-1'], (vm) => (vm === 'web-0' ? 20_000 : 200));
        await reboot('web-0');
        await waitFor('web-0 preparing', () => runs().some((r) => r.vm === 'web-0' && r.what === 'start'), 30_000);
        await reboot('web-1');
        const b = running.get('web-1')!;
        await b.proc.waitForLog('web-1 waiting for the slot', (l) => l.msg === 'every budget slot is held: waiting for one', 20_000);
        const killedAt = Date.now();
        await running.get('web-0')!.proc.stop('SIGKILL');
        await b.proc.waitForLog('web-1 took the slot', (l) => l.msg === 'took a budget slot', 60_000);
        const took = runs().find((r) => r.vm === 'web-1' && r.what === 'start')!;
        const after = (took?.at ?? Date.now()) - killedAt;
        assert.ok(after >= (LEASE_SECONDS - 1) * 1000, `web-1 took the slot ${after} ms after web-0 died, before leaseSeconds`);
        assert.ok(after < (LEASE_SECONDS + 15) * 1000, `web-1 took the slot only ${after} ms after web-0 died`);
        await b.proc.stop();
      });

      it('the store stopped: every VM prepares over budget before its NotBefore', { timeout: 120_000 }, async () => {
        const ids = [await reboot('web-0'), await reboot('web-1')];
        const notBefore = Math.min(...(await Promise.all(ids.map(async (id) => Date.parse((await liveEvent(emu, id))!.notBefore!)))));
        // The deadline (NotBefore less the margin) 8 s away, 1 s kept for preparing.
        const marginSeconds = Math.floor((notBefore - Date.now()) / 1000) - 8;
        await backend.outage();
        try {
          const { runs, agents: running } = await agents(['web-0', 'web-1'], () => 200, { budget: { marginSeconds }, registered: false });
          for (const id of ids) await waitFor(`${id} Started`, async () => (await status(id)) === 'Started', 60_000, 100);
          for (const [vm, a] of running) {
            const ran = runs().find((r) => r.vm === vm && r.what === 'start');
            assert.ok(ran !== undefined && ran.at < notBefore, `${vm} prepared before NotBefore`);
            assert.ok(
              a.proc.logs().some((l) => /could not be reached before the deadline: preparing anyway, over budget/.test(String(l.msg))),
              `${vm} said it prepares over budget`,
            );
            assert.equal(await metric(a, 'forewarn_agent_budget_over_budget_total', `{backend="${backend.name}"}`), 1);
            await a.proc.stop();
          }
        } finally {
          await backend.restore();
        }
        for (const id of ids) await api(emu, 'POST', `/v1/events/${id}/complete`);
      });

      it('an event naming two VMs starts only after the slower preparation ends, on one slot', { timeout: 120_000 }, async () => {
        const { runs, agents: running } = await agents(['web-0', 'web-1'], (vm) => (vm === 'web-0' ? 200 : 4_000));
        const id = await reboot('web-0', 'web-1');
        const event = await liveEvent(emu, id);
        assert.deepEqual([...(event as unknown as { resources: string[] }).resources].sort(), ['web-0', 'web-1']);
        await waitFor('the event Started', async () => (await status(id)) === 'Started', 60_000, 50);
        const startedAt = Date.now();
        const slowEnd = runs().find((r) => r.vm === 'web-1' && r.what === 'end');
        assert.ok(slowEnd !== undefined && slowEnd.at <= startedAt, `the slower preparation had ended when the event Started\n${story()}`);
        for (const a of running.values()) {
          assert.equal(
            a.proc.logs().filter((l) => l.msg === 'every budget slot is held: waiting for one').length,
            0,
            'no VM waited for a slot',
          );
        }
        await api(emu, 'POST', `/v1/events/${id}/complete`);
        for (const a of running.values()) {
          await a.proc.waitForLog('the slot given back', (l) => l.msg === 'gave the budget slot back', 20_000);
          await a.proc.stop();
        }
      });
    },
  );
}
