// Snapshot → restore equals the live engine: after any history, an engine restored from the live
// one's snapshot shows every VM the same document, and keeps doing so through any further history.
// This pins everything a snapshot must carry before the engine's state is split among owners.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine, type EngineSnapshot } from '../../../src/emulator/engine/engine.js';
import type { ActivationOptions } from '../../../src/emulator/engine/activation.js';
import { renderAnswer } from '../../../src/emulator/imds/answers.js';
import { MAX_PAGE_LIMIT } from '../../../src/emulator/engine/paging.js';
import { FLEET, NAMES, T0, applyStep, countingIds, step, type Step } from '../../support/engine-history.js';

/**
 * Everything the engine shows the servers, as plain data. Not nextDue(): a cancelled event's start may
 * stay in the live schedule until compaction, a wake-up that finds nothing to do. Sequence numbers
 * (the paging order of history and operations) and finish orders as ranks: a restore numbers on from
 * the highest one it holds, so after a reset emptied them the numbers differ while the order does not.
 */
export function observe(engine: Engine): unknown {
  const documents = NAMES.filter((name) => engine.fleet.vms.has(name)).map((name) => {
    const answer = renderAnswer(engine, name, '2020-07-01');
    return [name, answer.incarnation, answer.body.toString()];
  });
  const ranks = new Map(
    [...engine.history({ limit: MAX_PAGE_LIMIT }).items, ...engine.operations({ limit: MAX_PAGE_LIMIT }).items]
      .map((item) => item.seq)
      .sort((a, b) => a - b)
      .map((seq, rank) => [seq, rank]),
  );
  const finishRanks = new Map(
    engine
      .operations({ limit: MAX_PAGE_LIMIT })
      .items.flatMap((o) => (o.finishOrder === undefined ? [] : [o.finishOrder]))
      .sort((a, b) => a - b)
      .map((order, rank) => [order, rank]),
  );
  const rank = (key: string, v: unknown) =>
    typeof v !== 'number' ? v : key === 'seq' ? ranks.get(v) : key === 'finishOrder' ? finishRanks.get(v) : v;
  const plain = (value: unknown) => JSON.parse(JSON.stringify(value, rank)) as unknown;
  return plain({
    documents,
    events: engine.events(),
    history: engine.history({ limit: MAX_PAGE_LIMIT }).items,
    operations: engine.operations({ limit: MAX_PAGE_LIMIT }).items,
    vmStates: [...engine.vmStates()],
    activation: NAMES.filter((name) => engine.fleet.vms.has(name)).map((name) => engine.activationOf(name)),
    deleted: engine.deletedVms(),
    snapshot: { ...engine.snapshot(), savedAt: 0 } satisfies EngineSnapshot,
  });
}

describe('snapshot → restore equals the live engine', () => {
  it('a restored engine forgets finished operations in the order they finished, as the live one does', () => {
    // Found by the property below: three operations finish out of creation order; past the history
    // limit the live engine forgets the one that finished first, and a restored one must too.
    const steps: Step[] = [
      { kind: 'create', type: 'degraded-hardware', vm: 'a0', target: 'vm' },
      { kind: 'create', type: 'freeze', vm: 'a0', target: 'vm' },
      { kind: 'create', type: 'redeploy', vm: 'a0', target: 'vm' },
      { kind: 'create', type: 'freeze', vm: 'a0', target: 'vm' },
      { kind: 'advance', seconds: 1500 },
    ];
    const liveClock = new ManualClock(T0);
    const ids = countingIds();
    const live = new Engine({ clock: liveClock, fleet: FLEET, historyLimit: 3, newId: ids.newId });
    for (const s of steps) applyStep(live, liveClock, s);
    const restoredClock = new ManualClock(liveClock.now());
    const restored = new Engine({ clock: restoredClock, fleet: [], historyLimit: 3, newId: countingIds(ids.count()).newId });
    restored.restore(live.snapshot());
    const cancel: Step = { kind: 'cancel', pick: 0, vm: 0 };
    applyStep(live, liveClock, cancel);
    applyStep(restored, restoredClock, cancel);
    const kept = (engine: Engine) => engine.operations({ limit: MAX_PAGE_LIMIT }).items.map((o) => `${o.type} ${o.status}`);
    assert.deepEqual(kept(restored), kept(live));
  });

  it('the same documents, events, history and operations at once, and after any further steps', () => {
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 40 }),
        fc.array(step, { minLength: 1, maxLength: 30 }),
        fc.constantFrom(1, 3, 1000),
        fc.constantFrom<ActivationOptions>({ mode: 'off' }, { mode: 'realistic', firstCallDelaySeconds: 0 }, { mode: 'realistic' }),
        (before, after, historyLimit, activation) => {
          const liveClock = new ManualClock(T0);
          const ids = countingIds();
          const live = new Engine({ clock: liveClock, fleet: FLEET, historyLimit, activation, newId: ids.newId });
          for (const s of before) applyStep(live, liveClock, s);

          const restoredClock = new ManualClock(liveClock.now());
          const restored = new Engine({ clock: restoredClock, fleet: [], historyLimit, activation, newId: countingIds(ids.count()).newId });
          restored.restore(live.snapshot());
          assert.deepEqual(observe(restored), observe(live), 'right after the restore');
          after.forEach((s, i) => {
            applyStep(live, liveClock, s);
            applyStep(restored, restoredClock, s);
            assert.deepEqual(observe(restored), observe(live), `after step ${i} of the history that follows: ${JSON.stringify(s)}`);
          });
        },
      ),
      { numRuns: 150 },
    );
  });
});
