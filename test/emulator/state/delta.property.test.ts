// The state file's log replays to exactly the engine's state: a snapshot plus the change records
// the engine hands over (its dirty tracking) equals engine.snapshot(), whatever happened between.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine, type EngineSnapshot } from '../../../src/emulator/engine/engine.js';
import { EngineError } from '../../../src/emulator/engine/errors.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { StateFileWriter, readStateFile } from '../../../src/emulator/state/file.js';
import { tempDir } from '../../support/temp.js';

const root = tempDir('delta');

const T0 = Date.UTC(2030, 0, 1);
// Host h1 carries four tenants, so a job on it waits for each of them: approvals that start nothing.
const FLEET: VmSpec[] = [
  { name: 'a0', tenant: 'avset', tenantKind: 'availabilitySet', faultDomain: 0, host: 'h1' },
  { name: 'a1', tenant: 'avset', tenantKind: 'availabilitySet', faultDomain: 1 },
  { name: 's0', tenant: 'scale', tenantKind: 'scaleSet', terminateNotificationMinutes: 5, osImageNotification: true, host: 'h1' },
  { name: 's1', tenant: 'scale', tenantKind: 'scaleSet', faultDomain: 1 },
  { name: 'solo', host: 'h1' },
  // Names that are Object.prototype's keys travel as pairs, never as object keys.
  { name: '__proto__', host: 'h1' },
];
const NAMES = [...FLEET.map((v) => v.name), 'extra', 'constructor'];
const TYPES = ['freeze', 'restart', 'redeploy', 'delete', 'reimage', 'spot-eviction', 'host-update', 'degraded-hardware'];

type Step =
  | { kind: 'create'; type: string; vm: string; target: 'vm' | 'tenant' | 'host' }
  | { kind: 'approve' | 'cancel' | 'complete'; pick: number; vm: number }
  | { kind: 'advance'; seconds: number }
  | { kind: 'add' | 'remove'; vm: string }
  | { kind: 'reset' }
  | { kind: 'save' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      type: fc.constantFrom(...TYPES),
      vm: fc.constantFrom(...NAMES),
      target: fc.constantFrom('vm' as const, 'tenant' as const, 'host' as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constantFrom('approve' as const, 'cancel' as const, 'complete' as const),
      pick: fc.nat(20),
      vm: fc.nat(20),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), seconds: fc.integer({ min: 1, max: 3600 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('add' as const, 'remove' as const), vm: fc.constantFrom(...NAMES) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'save' as const }) },
);

function apply(engine: Engine, clock: ManualClock, s: Step): void {
  try {
    switch (s.kind) {
      case 'create': {
        const vm = engine.fleet.vms.get(s.vm);
        if (!vm) return;
        const target = s.target === 'vm' ? { vms: [s.vm] } : s.target === 'tenant' ? { tenant: vm.tenant } : { host: vm.host };
        engine.createOperation({ type: s.type, ...target });
        return;
      }
      case 'approve':
      case 'cancel':
      case 'complete': {
        const events = engine.events();
        const event = events[s.pick % Math.max(1, events.length)];
        if (!event) return;
        if (s.kind === 'approve') engine.approve(event.resources[s.vm % event.resources.length]!, [event.id]);
        else if (s.kind === 'cancel') engine.cancel(event.id);
        else engine.complete(event.id);
        return;
      }
      case 'advance':
        clock.advance(s.seconds * 1000);
        engine.tick();
        return;
      case 'add':
        engine.addVm({ name: s.vm });
        return;
      case 'remove':
        engine.removeVm(s.vm);
        return;
      case 'reset':
        engine.reset();
        return;
      case 'save':
        return;
    }
  } catch (err) {
    // Refusals (unknown VM, wrong state) change nothing and are part of the run.
    if (!(err instanceof EngineError)) throw err;
  }
}

/** What the file must hold: the snapshot as JSON carries it; savedAt is when it was saved, not now. */
const comparable = (s: EngineSnapshot) => ({ ...(JSON.parse(JSON.stringify(s)) as EngineSnapshot), savedAt: 0 });

describe('state file log: snapshot + change records = engine.snapshot()', () => {
  it('holds after random operations, approvals, cancels, completes, clock moves, VM adds and removes and resets', () => {
    let run = 0;
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 60 }),
        fc.constantFrom(1, 3, 1000),
        fc.constantFrom(1, 4096, 1 << 30),
        (steps, historyLimit, compactFloorBytes) => {
          const path = join(root, `state-${run++}.json`);
          const clock = new ManualClock(T0);
          const engine = new Engine({ clock, fleet: FLEET, historyLimit });
          const writer = new StateFileWriter(path, engine, (err) => assert.fail(err), { compactFloorBytes });
          writer.start();
          for (const s of steps) {
            apply(engine, clock, s);
            if (s.kind !== 'save') continue;
            writer.flush();
            // readStateFile also runs the cross-checks: what the engine saves must load at a restart.
            assert.deepEqual(comparable(readStateFile(path)!.snapshot), comparable(engine.snapshot()));
          }
          writer.close();
          const read = readStateFile(path)!;
          assert.deepEqual(read.warnings, []);
          assert.deepEqual(comparable(read.snapshot), comparable(engine.snapshot()));
        },
      ),
      { numRuns: 150 },
    );
  });
});
