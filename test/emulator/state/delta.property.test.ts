// The state file's log replays to exactly the engine's state: a snapshot plus the change records
// the engine hands over (its dirty tracking) equals engine.snapshot(), whatever happened between.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine, type EngineSnapshot } from '../../../src/emulator/engine/engine.js';
import { StateFileWriter, readStateFile } from '../../../src/emulator/state/file.js';
import { FLEET, T0, applyStep, step, type Step } from '../../support/engine-history.js';
import { tempDir } from '../../support/temp.js';

const root = tempDir('delta');

type DeltaStep = Step | { kind: 'save' };

const deltaStep: fc.Arbitrary<DeltaStep> = fc.oneof(
  { weight: 13, arbitrary: step },
  { weight: 3, arbitrary: fc.constant({ kind: 'save' as const }) },
);

/** What the file must hold: the snapshot as JSON carries it; savedAt is when it was saved, not now. */
const comparable = (s: EngineSnapshot) => ({ ...(JSON.parse(JSON.stringify(s)) as EngineSnapshot), savedAt: 0 });

describe('state file log: snapshot + change records = engine.snapshot()', () => {
  it('holds after random operations, approvals, cancels, completes, clock moves, VM adds and removes and resets', () => {
    let run = 0;
    fc.assert(
      fc.property(
        fc.array(deltaStep, { minLength: 1, maxLength: 60 }),
        fc.constantFrom(1, 3, 1000),
        fc.constantFrom(1, 4096, 1 << 30),
        (steps, historyLimit, compactFloorBytes) => {
          const path = join(root, `state-${run++}.json`);
          const clock = new ManualClock(T0);
          const engine = new Engine({ clock, fleet: FLEET, historyLimit });
          const writer = new StateFileWriter(path, engine, (err) => assert.fail(err), { compactFloorBytes });
          writer.start();
          for (const s of steps) {
            if (s.kind !== 'save') {
              applyStep(engine, clock, s);
              continue;
            }
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
