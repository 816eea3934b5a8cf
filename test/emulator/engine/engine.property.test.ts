// Invariants of the lifecycle state machine over random histories.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EngineError } from '../../../src/emulator/engine/errors.js';
import { OPERATION_TYPES } from '../../../src/emulator/engine/operations.js';
import type { EventView } from '../../../src/protocol/types.js';
import { MINUTE, T0, makeEngine } from './fixtures.js';

const VMS = ['web0', 'web1', 'web2', 'ss0', 'ss1', 'gpu0', 'gpu1', 'solo'] as const;
const TYPES = OPERATION_TYPES;
const HOSTS = ['h1', 'h2', 'h3', 'host-ss0', 'host-solo'] as const;
const TENANTS = ['web', 'ss', 'gpu', 'solo'] as const;

type Step =
  | {
      kind: 'operation';
      type: (typeof TYPES)[number];
      vms: string[];
      target: 'vms' | 'host' | 'tenant';
      pick: number;
      noticeMinutes: number | null;
      force: boolean;
      duration: number | null;
    }
  | { kind: 'approve'; vm: string; pick: number[]; bogus: boolean }
  | { kind: 'cancel'; pick: number }
  | { kind: 'complete'; pick: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'reset' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('operation' as const),
      type: fc.constantFrom(...TYPES),
      vms: fc.uniqueArray(fc.constantFrom(...VMS), { minLength: 1, maxLength: 4 }),
      target: fc.constantFrom('vms' as const, 'host' as const, 'tenant' as const),
      pick: fc.nat(),
      noticeMinutes: fc.option(fc.integer({ min: 0, max: 60 }), { nil: null }),
      force: fc.boolean(),
      duration: fc.option(fc.integer({ min: -1, max: 900 }), { nil: null }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('approve' as const),
      vm: fc.constantFrom(...VMS),
      pick: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
      bogus: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('complete' as const), pick: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 40 * MINUTE })),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
);

function run(steps: Step[]) {
  const { engine, clock, advance } = makeEngine();
  const issued: string[] = [];
  const last = new Map<string, { incarnation: number; events: string }>();
  const identity = new Map<string, string>(); // id → type|resources, fixed for life
  const gone = new Set<string>(); // ids removed from some document
  const floor = new Map<string, number>(); // last incarnation of a VM that was deleted
  const seenBy = new Map<string, Set<string>>(); // vm → ids it has seen

  const observe = (label: string) => {
    for (const vm of VMS) {
      if (!engine.fleet.vms.has(vm)) {
        const prev = last.get(vm);
        if (prev) floor.set(vm, prev.incarnation);
        last.delete(vm);
        continue;
      }
      const doc = engine.documentFor(vm);
      const events = JSON.stringify(doc.events);
      const prev = last.get(vm);
      const returning = floor.get(vm);
      if (returning !== undefined) {
        // A VM that was deleted and comes back continues above its old incarnation.
        assert.ok(doc.incarnation > returning, `${label}: returning ${vm} reused incarnation ${doc.incarnation}`);
        floor.delete(vm);
      } else if (prev) {
        assert.ok(doc.incarnation >= prev.incarnation, `${label}: ${vm}'s incarnation went backwards`);
        if (doc.incarnation === prev.incarnation) {
          assert.equal(events, prev.events, `${label}: ${vm} shows different events under incarnation ${doc.incarnation}`);
        } else {
          assert.notEqual(events, prev.events, `${label}: ${vm}'s incarnation grew but its events did not change`);
        }
        const prevIds = new Set((JSON.parse(prev.events) as EventView[]).map((e) => e.id));
        const nowIds = new Set(doc.events.map((e) => e.id));
        // A deallocated VM sees no events ("no further events"), but its tenant's events live on for
        // the others: what leaves its document has not been removed.
        if (engine.vmStates().get(vm) !== 'deallocated') for (const id of prevIds) if (!nowIds.has(id)) gone.add(id);
      }
      for (const e of doc.events) {
        assert.ok(!gone.has(e.id), `${label}: removed event ${e.id} came back for ${vm}`);
        const who = `${e.type}|${e.resources.join(',')}`;
        assert.equal(identity.get(e.id) ?? who, who, `${label}: event ${e.id} changed identity`);
        identity.set(e.id, who);
        assert.equal(e.notBefore === null, e.status === 'Started', `${label}: NotBefore is "" exactly when Started`);
        let seen = seenBy.get(vm);
        if (!seen) seenBy.set(vm, (seen = new Set()));
        seen.add(e.id);
      }
      last.set(vm, { incarnation: doc.incarnation, events });
    }
    for (const e of engine.events()) {
      if (e.status !== 'Started') continue;
      const early = e.startedAt! < e.notBefore;
      assert.ok(
        !early || e.approvals.length > 0 || e.startedBy === 'failure',
        `${label}: ${e.id} Started before its NotBefore without an approval`,
      );
      if (e.startedBy === 'approval') assert.ok(e.approvals.length > 0, `${label}: started by approval with none recorded`);
    }
  };

  observe('start');
  steps.forEach((s, i) => {
    const label = `step ${i} ${s.kind}`;
    try {
      switch (s.kind) {
        case 'operation': {
          const target =
            s.target === 'vms'
              ? { vms: s.vms }
              : s.target === 'host'
                ? { host: HOSTS[s.pick % HOSTS.length] }
                : { tenant: TENANTS[s.pick % TENANTS.length] };
          const op = engine.createOperation({
            type: s.type,
            ...target,
            ...(s.noticeMinutes !== null ? { notBefore: clock.now() + s.noticeMinutes * MINUTE, force: s.force } : {}),
            ...(s.duration !== null ? { durationInSeconds: s.duration } : {}),
          });
          issued.push(...op.events);
          break;
        }
        case 'approve': {
          const chosen = s.pick.map((p) => issued[p % Math.max(issued.length, 1)] ?? 'none');
          const before = engine.events();
          try {
            engine.approve(s.vm, s.bogus ? [...chosen, '11111111-2222-4333-8444-555555555555'] : chosen);
          } catch (err) {
            // A refused request approves nothing at all.
            assert.deepEqual(
              engine.events().map((e) => [e.id, e.status, e.approvals.length]),
              before.map((e) => [e.id, e.status, e.approvals.length]),
            );
            throw err;
          }
          break;
        }
        case 'cancel':
          engine.cancel(issued[s.pick % Math.max(issued.length, 1)] ?? 'none');
          break;
        case 'complete':
          engine.complete(issued[s.pick % Math.max(issued.length, 1)] ?? 'none');
          break;
        case 'advance':
          advance(s.ms);
          break;
        case 'reset':
          engine.reset();
          gone.clear(); // a reset is a new start: nothing from before can return anyway
          for (const id of issued) gone.add(id);
          issued.length = 0;
          break;
      }
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
    }
    // Rolling updates create events later; make them candidates for approvals and cancels too.
    for (const e of engine.events()) if (!issued.includes(e.id)) issued.push(e.id);
    observe(label);
  });
  assert.ok(clock.now() >= T0);
}

test('lifecycle invariants hold over random operations, approvals, cancels and clock advances', () => {
  fc.assert(
    fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => run(steps)),
    { numRuns: 300 },
  );
});

test("a VM's events are exactly its tenant's (or its own, for single-FD GPU scale sets)", () => {
  fc.assert(
    fc.property(fc.array(fc.uniqueArray(fc.constantFrom(...VMS), { minLength: 1, maxLength: 3 }), { maxLength: 10 }), (targets) => {
      const { engine } = makeEngine();
      for (const vms of targets) {
        try {
          engine.createOperation({ type: 'freeze', vms });
        } catch (err) {
          if (!(err instanceof EngineError)) throw err;
        }
      }
      const all = engine.events();
      for (const name of VMS) {
        const vm = engine.fleet.get(name);
        const own = engine.fleet.seesOnlyOwnEvents(vm);
        const expected = all.filter((e) => e.tenant === vm.tenant && (!own || e.resources.includes(name))).map((e) => e.id);
        assert.deepEqual(
          engine.documentFor(name).events.map((e) => e.id),
          expected,
        );
      }
    }),
    { numRuns: 200 },
  );
});
