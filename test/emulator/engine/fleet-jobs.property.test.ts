// Invariants of shared-host jobs and rolling host updates over random fleets and random approval orders.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { EngineError } from '../../../src/emulator/engine/errors.js';
import { MAX_PAGE_LIMIT } from '../../../src/emulator/engine/paging.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { MINUTE, T0 } from './fixtures.js';

/**
 * A random fleet: availability sets with 2 or 3 fault domains whose VMs share hosts
 * with other tenants; fault domain f of a tenant sits on host (offset + f) mod H, so
 * each host lies in one fault domain of each tenant.
 */
const fleetArb = fc
  .record({
    hosts: fc.integer({ min: 3, max: 5 }),
    tenants: fc.array(
      fc.record({
        fds: fc.integer({ min: 2, max: 3 }),
        vmFds: fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
        offset: fc.nat(),
      }),
      { minLength: 1, maxLength: 4 },
    ),
  })
  .map(({ hosts, tenants }): VmSpec[] =>
    tenants.flatMap((t, ti) =>
      t.vmFds.map((raw, vi) => {
        const fd = raw % t.fds;
        return {
          name: `t${ti}vm${vi}`,
          tenant: `t${ti}`,
          tenantKind: 'availabilitySet' as const,
          faultDomain: fd,
          faultDomainCount: t.fds,
          host: `h${(t.offset + fd) % hosts}`,
        };
      }),
    ),
  );

function engineFor(fleet: VmSpec[]) {
  const clock = new ManualClock(T0);
  const engine = new Engine({ clock, fleet });
  const advance = (ms: number) => {
    clock.advance(ms);
    engine.tick();
  };
  return { engine, clock, advance };
}

function attempt(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch (err) {
    if (err instanceof EngineError) return false;
    throw err;
  }
}

test('a shared-host job starts for every tenant together, only once all approved or at NotBefore', () => {
  const action = fc.oneof(
    fc.record({ kind: fc.constant('approve' as const), vm: fc.nat(), event: fc.nat() }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 6 * MINUTE }) }),
  );
  fc.assert(
    fc.property(fleetArb, fc.nat(), fc.array(action, { maxLength: 30 }), (fleet, hostPick, actions) => {
      const { engine, clock, advance } = engineFor(fleet);
      const hosts = [...engine.fleet.hosts.keys()];
      const host = hosts[hostPick % hosts.length]!;
      const op = engine.createOperation({ type: 'freeze', host });
      const tenants = new Set([...engine.fleet.hosts.get(host)!.vms].map((n) => engine.fleet.get(n).tenant));
      assert.equal(op.events.length, tenants.size, 'one event per tenant on the host');
      const job = engine.events();
      const notBefore = job[0]!.notBefore;
      const approved = new Set<string>();
      let allApprovedAt: number | null = null;
      for (const a of actions) {
        if (a.kind === 'advance') advance(a.ms);
        else {
          const vm = fleet[a.vm % fleet.length]!.name;
          const event = job[a.event % job.length]!;
          const live = engine.events().find((e) => e.id === event.id);
          const ok = attempt(() => engine.approve(vm, [event.id]));
          assert.equal(ok, engine.fleet.get(vm).tenant === event.tenant, "only VMs of the event's tenant may approve it");
          if (ok && live?.status === 'Scheduled') approved.add(event.tenant);
          if (approved.size === tenants.size && allApprovedAt === null) allApprovedAt = clock.now();
        }
        const now = engine.events().filter((e) => e.operationId === op.id);
        const statuses = new Set(now.map((e) => e.status));
        assert.ok(statuses.size <= 1, 'the events of one job share their status');
        assert.ok(now.length === 0 || now.length === job.length, "a job's events end together (same duration)");
        const due = allApprovedAt !== null || clock.now() >= notBefore;
        if (statuses.has('Started')) {
          assert.ok(due, 'Started before every tenant approved and before NotBefore');
          const startedAt = now[0]!.startedAt!;
          assert.ok(now.every((e) => e.startedAt === startedAt));
          assert.equal(startedAt, allApprovedAt !== null && allApprovedAt < notBefore ? allApprovedAt : notBefore);
        }
        if (due) assert.ok(!statuses.has('Scheduled'), 'still Scheduled although every tenant approved or NotBefore passed');
      }
    }),
    { numRuns: 300 },
  );
});

test('host updates never impact two fault domains of a tenant at once, and every rollout finishes', () => {
  const action = fc.oneof(
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('rolling' as const), tenant: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('host' as const), host: fc.nat() }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('approve' as const), event: fc.nat(), vm: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), event: fc.nat() }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 30 * MINUTE }) }) },
  );
  fc.assert(
    fc.property(fleetArb, fc.array(action, { maxLength: 40 }), (fleet, actions) => {
      const { engine, advance } = engineFor(fleet);
      const tenants = [...engine.fleet.tenants.keys()];
      const hosts = [...engine.fleet.hosts.keys()];
      const check = () => {
        const byTenant = new Map<string, { started: Set<number>; live: Set<number> }>();
        for (const e of engine.events()) {
          const entry = byTenant.get(e.tenant) ?? { started: new Set<number>(), live: new Set<number>() };
          for (const r of e.resources) {
            entry.live.add(engine.fleet.get(r).faultDomain);
            if (e.status === 'Started') entry.started.add(engine.fleet.get(r).faultDomain);
          }
          byTenant.set(e.tenant, entry);
        }
        for (const [tenant, { started, live }] of byTenant) {
          assert.ok(started.size <= 1, `tenant ${tenant} has fault domains ${[...started]} impacted at once`);
          // Stronger: no other fault domain is even Scheduled while one has an event, so none can start.
          assert.ok(live.size <= 1, `tenant ${tenant} has events for fault domains ${[...live]} at once`);
        }
      };
      for (const a of actions) {
        switch (a.kind) {
          case 'rolling':
            attempt(() => engine.createOperation({ type: 'host-update', tenant: tenants[a.tenant % tenants.length]! }));
            break;
          case 'host':
            attempt(() => engine.createOperation({ type: 'host-update', host: hosts[a.host % hosts.length]! }));
            break;
          case 'approve': {
            const live = engine.events();
            if (live.length === 0) break;
            const event = live[a.event % live.length]!;
            const members = [...engine.fleet.tenants.get(event.tenant)!.vms];
            engine.approve(members[a.vm % members.length]!, [event.id]);
            break;
          }
          case 'cancel': {
            const live = engine.events().filter((e) => e.status === 'Scheduled');
            if (live.length > 0) engine.cancel(live[a.event % live.length]!.id);
            break;
          }
          case 'advance':
            advance(a.ms);
            break;
        }
        check();
      }
      // Left alone, every rollout runs to its end (between fault domains nothing is live for a while).
      const running = () => engine.operations({ limit: MAX_PAGE_LIMIT }).items.some((op) => op.status === 'running');
      for (let i = 0; i < 20 && running(); i++) advance(60 * MINUTE);
      assert.deepEqual(engine.events(), []);
      for (const op of engine.operations({ limit: MAX_PAGE_LIMIT }).items) {
        assert.notEqual(op.status, 'running', `operation ${op.id} never finished`);
        if (op.status === 'completed' && op.steps) {
          assert.ok(op.steps.every((s) => s.status === 'done' || s.status === 'skipped'));
          const fds = op.steps.map((s) => s.faultDomain);
          assert.deepEqual(
            fds,
            [...fds].sort((x, y) => x - y),
            'fault domains in order',
          );
        }
      }
    }),
    { numRuns: 300 },
  );
});
