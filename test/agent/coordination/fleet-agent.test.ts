// The fleet budget and barrier through the agent's loop, in process: the emulator as IMDS, agents
// with exec-like preparation of set lengths, and the in-process store held to the real stores'
// contract (memory-store.test.ts). The real stores run the same scenarios end to end in
// fleet-budget.e2e.test.ts; here the rules are pinned quickly and with exact timings.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { Agent } from '../../../src/agent/agent.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import type { ActionContext, ActionResult, AgentConfig, FleetBudgetConfig, Rule } from '../../../src/agent/types.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { delay } from '../../support/wait.js';
import { AgentHarness, agentConfig, testClient, until } from '../support.js';
import { MemoryServer, MemoryStore } from './memory-store.js';

const VMS = ['web-0', 'web-1', 'web-2'] as const;
type Vm = (typeof VMS)[number];

let emulator: Emulator;
let imdsUrl: string;

before(async () => {
  emulator = await Emulator.create({
    clock: 'manual',
    rateLimit: 0,
    // One tenant: an operation on several VMs makes one event naming them all.
    fleet: VMS.map((name) => ({ name, tenant: 'web' })),
  });
  ({ imdsUrl } = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } }));
});
after(() => emulator.close());

const PREPARE: Rule = {
  name: 'prepare',
  match: { eventType: ['Reboot'], eventSource: null, status: null, durationInSeconds: null, affectsThisVm: true, description: null },
  actions: [{ type: 'exec', name: 'drain', argv: ['true'], timeoutSeconds: 60, retries: 0, cwd: null, env: {}, passEnv: [] }],
  approval: 'after-actions',
  approvalMarginSeconds: 0,
  onComplete: [],
  onCancel: [],
};

const budget = (over: Partial<FleetBudgetConfig> = {}): FleetBudgetConfig => ({
  backend: 'etcd',
  endpoints: ['http://memory'],
  containerUrl: null,
  clientId: null,
  slots: 1,
  group: 'web',
  leaseSeconds: 5,
  minPrepareSeconds: 1,
  marginSeconds: 5,
  ...over,
});

/** When each VM's preparation ran (wall ms), as the store saw it. */
interface Run {
  vm: string;
  event: string;
  start: number;
  end: number;
}

class FleetAgent extends AgentHarness {
  readonly agent: Agent;
  constructor(
    readonly vm: Vm,
    dir: string,
    server: MemoryServer,
    runs: Run[],
    prepareMs: number,
    config: Partial<AgentConfig> = {},
  ) {
    super();
    const b = config.budget ?? budget();
    this.agent = new Agent({
      config: agentConfig(`${imdsUrl}/vms/${vm}`, join(dir, `${vm}.journal.json`), [PREPARE], {
        vmName: vm,
        leader: { mode: 'first', standby: null },
        budget: b,
        ...config,
      }),
      logger: this.logger(),
      client: testClient(`${imdsUrl}/vms/${vm}`),
      metrics: new AgentMetrics({ defaultMetrics: false }),
      fleetStore: new MemoryStore(server, {
        group: b!.group,
        slots: b!.slots,
        vm,
        leaseSeconds: b!.leaseSeconds,
        requestTimeoutMs: 1_000,
      }),
      runAction: async (_action, ctx: ActionContext): Promise<ActionResult> => {
        const run: Run = { vm, event: ctx.event.id, start: Date.now(), end: Number.NaN };
        runs.push(run);
        await delay(prepareMs);
        run.end = Date.now();
        return { ok: true, attempts: 1, error: null, durationMs: prepareMs };
      },
      env: {},
    });
  }
}

let dir: string;
let server: MemoryServer;
let runs: Run[];
let agents: FleetAgent[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'forewarn-fleet-'));
  emulator.engine.reset();
  server = new MemoryServer();
  runs = [];
});
afterEach(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  agents = [];
  rmSync(dir, { recursive: true, force: true });
});

async function start(
  vms: readonly Vm[],
  prepareMs: (vm: Vm) => number,
  config: Partial<AgentConfig> = {},
  registered = true,
): Promise<FleetAgent[]> {
  const started = vms.map((vm) => new FleetAgent(vm, dir, server, runs, prepareMs(vm), config).start());
  agents.push(...started);
  if (registered) for (const a of started) await until(`${a.vm} registered`, () => a.count('registered in the fleet store') > 0, 5_000);
  return started;
}

const status = (id: string) => emulator.engine.events().find((e) => e.id === id)?.status;
const reboot = (...vms: Vm[]): string => emulator.engine.createOperation({ type: 'platform-reboot', vms }).events[0]!;

describe('fleet budget: one slot, three VMs', () => {
  it('three Reboots never prepare at once, and each slot goes back after recovery', { timeout: 30_000 }, async () => {
    const agentsStarted = await start(VMS, () => 300);
    const ids = VMS.map((vm) => reboot(vm));
    assert.equal(new Set(ids).size, 3, 'one event per VM');
    // Each event, once Started, is ended at once: the slot is held through the impact and given back after recovery.
    const completedAt = new Map<string, number>();
    while (completedAt.size < 3) {
      const id = await until('the next event Started', () => ids.find((i) => !completedAt.has(i) && status(i) === 'Started'), 15_000);
      assert.equal(ids.filter((i) => !completedAt.has(i) && status(i) === 'Started').length, 1, 'one VM in maintenance at a time');
      completedAt.set(id, Date.now());
      emulator.engine.complete(id);
    }
    for (const a of agentsStarted) await until(`${a.vm} gave its slot back`, () => a.count('gave the budget slot back') > 0, 10_000);
    assert.equal(runs.length, 3);
    const sorted = [...runs].sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i++) {
      const before = sorted[i - 1]!;
      assert.ok(sorted[i]!.start >= before.end, `${sorted[i]!.vm} started preparing while ${before.vm} still was`);
      assert.ok(
        sorted[i]!.start >= completedAt.get(before.event)!,
        `${sorted[i]!.vm} started preparing before ${before.vm}'s Reboot was over`,
      );
    }
    const waited = agentsStarted.filter((a) => a.count('every budget slot is held: waiting for one') > 0);
    assert.equal(waited.length, 2, 'two of three waited for the slot');
  });

  it(
    'an event naming two VMs takes one slot for both, and is approved only after the slower preparation',
    { timeout: 30_000 },
    async () => {
      const [fast, slow] = await start(['web-0', 'web-1'], (vm) => (vm === 'web-0' ? 100 : 2_000));
      const id = reboot('web-0', 'web-1');
      await until('the event Started', () => status(id) === 'Started', 15_000);
      const slowRun = runs.find((r) => r.vm === 'web-1')!;
      assert.ok(Number.isFinite(slowRun.end), 'the slow VM’s preparation had ended when the event Started');
      assert.ok(fast!.count('this VM is prepared: waiting for the other VMs the event names before approving', id) > 0);
      const waiting = fast!.logs.find((l) => l.msg === 'this VM is prepared: waiting for the other VMs the event names before approving');
      assert.deepEqual(waiting?.waitingFor, ['web-1']);
      for (const a of [fast!, slow!]) {
        assert.equal(a.count('every budget slot is held: waiting for one', id), 0, `${a.vm} did not wait for the other's slot`);
        assert.equal(a.count('the event names other VMs of the group: one slot for all of them, since they go down together', id), 1);
      }
      const slot = server.slots.get('web')![0]!;
      assert.equal(slot.claim, `event:${id.toLowerCase()}`);
      assert.deepEqual(slot.shares.map((s) => s.vm).sort(), ['web-0', 'web-1']);
      emulator.engine.complete(id);
      for (const a of [fast!, slow!]) await until(`${a.vm} recovered`, () => a.count('gave the budget slot back', id) > 0, 10_000);
      assert.equal(server.slots.get('web')![0]!.claim, null, 'the slot is free once both gave their share back');
      assert.deepEqual(
        (await new MemoryStore(server, { group: 'web', slots: 1, vm: 'x', leaseSeconds: 5, requestTimeoutMs: 1000 }).members()).map(
          (m) => m.prepared,
        ),
        [[], []],
        'the prepared marks are off',
      );
    },
  );

  it('the store down: every VM prepares over budget before its deadline, and the barrier approves at it', { timeout: 40_000 }, async () => {
    const id0 = reboot('web-0');
    const notBefore = emulator.engine.events().find((e) => e.id === id0)!.notBefore!;
    // A deadline (NotBefore less the margin) 3 s away, with 1 s kept for preparing: give up on a slot after 2 s.
    const marginSeconds = Math.floor((notBefore - Date.now()) / 1000) - 3;
    server.down = true;
    await start(['web-0', 'web-1'], () => 100, { budget: budget({ marginSeconds }) }, false);
    const id1 = reboot('web-1');
    for (const id of [id0, id1]) await until(`${id} Started`, () => status(id) === 'Started', 20_000);
    for (const a of agents) {
      const over = a.logs.find((l) => /could not be reached before the deadline: preparing anyway, over budget/.test(String(l.msg)));
      assert.ok(over, `${a.vm} said it prepares over budget`);
      const ran = runs.find((r) => r.vm === a.vm);
      assert.ok(ran && ran.start < notBefore, `${a.vm} prepared before NotBefore`);
      const metrics = await a.agent.metrics.text();
      assert.match(metrics, /forewarn_agent_budget_over_budget_total\{backend="etcd"\} 1/);
    }
  });
});
