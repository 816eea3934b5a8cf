// The coordinator's rules that need no agent loop: a take that landed but whose answer was lost
// leaves no share behind once the VM goes over budget (unless another event of the VM holds it for
// real), and a slot that expired while held is said once, counted and no longer counted as held.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FleetCoordinator, type FleetStep } from '../../../src/agent/coordination/coordinator.js';
import { StoreError, vmClaim, type Claim } from '../../../src/agent/coordination/store.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import type { BudgetRecord, FleetBudgetConfig } from '../../../src/agent/types.js';
import type { ScheduledEvent } from '../../../src/client/index.js';
import { abortableDelay } from '../../support/wait.js';
import { MemoryServer, MemoryStore } from './memory-store.js';

const config: FleetBudgetConfig = {
  backend: 'etcd',
  endpoints: ['http://memory'],
  containerUrl: null,
  clientId: null,
  slots: 1,
  group: 'g',
  leaseSeconds: 30,
  minPrepareSeconds: 0,
  marginSeconds: 0,
};

function event(id: string, notBeforeInMs: number): ScheduledEvent {
  const notBefore = new Date(Date.now() + notBeforeInMs);
  return {
    id,
    status: 'Scheduled',
    type: 'Reboot',
    resourceType: 'VirtualMachine',
    resources: ['vm-a'],
    notBefore,
    description: '',
    source: 'Platform',
    durationInSeconds: -1,
    raw: {} as ScheduledEvent['raw'],
  };
}

interface Logged {
  level: string;
  msg: string;
}

function rig(store: MemoryStore) {
  const logs: Logged[] = [];
  const log = {
    info: (_o: object, msg?: string) => logs.push({ level: 'info', msg: msg ?? '' }),
    warn: (_o: object, msg?: string) => logs.push({ level: 'warn', msg: msg ?? '' }),
    error: (_o: object, msg?: string) => logs.push({ level: 'error', msg: msg ?? '' }),
  };
  const metrics = new AgentMetrics({ defaultMetrics: false });
  const coordinator = new FleetCoordinator({ store, config, vmName: 'vm-a', metrics, log, now: Date.now, sleep: abortableDelay });
  const records = new Map<string, BudgetRecord>();
  const step = (e: ScheduledEvent): FleetStep => ({
    event: e,
    signal: new AbortController().signal,
    log,
    record: () => records.get(e.id),
    save: async (r) => {
      records.set(e.id, r);
      return true;
    },
  });
  return { coordinator, records, step, logs, metrics };
}

/** A store whose takes land but whose answers are lost, as when a request times out after the write. */
class LostAnswers extends MemoryStore {
  override async tryAcquire(claim: Claim): Promise<string | null> {
    await super.tryAcquire(claim);
    throw new StoreError('deadline exceeded');
  }
}

const shares = (server: MemoryServer) => server.slots.get('g')?.flatMap((s) => s.shares.map((x) => x.vm)) ?? [];
const options = { group: 'g', slots: 1, vm: 'vm-a', leaseSeconds: 30, requestTimeoutMs: 1000 };

describe('FleetCoordinator', () => {
  it('over budget after takes whose answers were lost: the share that landed is given back', { timeout: 10_000 }, async () => {
    const server = new MemoryServer();
    const { coordinator, records, step } = rig(new LostAnswers(server, options));
    const e = event('E1', 1_500);
    const result = await coordinator.acquire(step(e));
    assert.deepEqual(result, { ok: true, error: null });
    assert.deepEqual(records.get('E1'), { claim: 'vm:vm-a', slot: null, overBudget: true });
    assert.deepEqual(shares(server), [], 'no share left behind that nobody knows of');
  });

  it('but a share another event of this VM holds for real stays', { timeout: 10_000 }, async () => {
    const server = new MemoryServer();
    const { coordinator, step } = rig(new LostAnswers(server, options));
    await new MemoryStore(server, options).tryAcquire(vmClaim('vm-a'));
    coordinator.heldSlots = () => [{ eventId: 'E0', slot: 'slot-0', claim: vmClaim('vm-a') }];
    await coordinator.acquire(step(event('E1', 1_500)));
    assert.deepEqual(shares(server), ['vm-a']);
    // At recovery too.
    await coordinator.recover(step(event('E1', 1_500)));
    assert.deepEqual(shares(server), ['vm-a']);
  });

  it('a slot that expired while held is said once and counted', { timeout: 10_000 }, async () => {
    const server = new MemoryServer();
    const store = new MemoryStore(server, options);
    const { coordinator, logs, metrics } = rig(store);
    const slot = (await store.tryAcquire(vmClaim('vm-a')))!;
    coordinator.heldSlots = () => [{ eventId: 'E1', slot, claim: vmClaim('vm-a') }];
    server.slots.get('g')![0]!.shares = [];
    const stop = new AbortController();
    const renewing = coordinator.renewSlots(stop.signal);
    await abortableDelay(100);
    stop.abort();
    await renewing;
    assert.equal(logs.filter((l) => l.level === 'error' && /lost a budget slot/.test(l.msg)).length, 1);
    assert.match(await metrics.text(), /forewarn_agent_budget_slots_lost_total\{backend="etcd"\} 1/);
    assert.match(await metrics.text(), /forewarn_agent_budget_slots_held\{backend="etcd"\} 0/);
  });
});
