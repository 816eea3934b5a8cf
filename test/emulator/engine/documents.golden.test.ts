// The documents every VM sees, pinned on recorded histories: each step's new documents (incarnation
// and the exact bytes IMDS answers) and a digest of the state file's snapshot, as the engine gave them
// when the fixture was written. A redesign of the engine must reproduce them byte for byte.
// FOREWARN_UPDATE_GOLDEN=1 rewrites the fixture from the current engine (then review the diff).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import type { ActivationOptions } from '../../../src/emulator/engine/activation.js';
import { renderAnswer } from '../../../src/emulator/imds/answers.js';
import { FLEET, NAMES, T0, applyStep, countingIds, step, type Step } from '../../support/engine-history.js';

const FIXTURE = new URL('./fixtures/documents.golden.json', import.meta.url);
const HISTORIES: { seed: number; steps: number; historyLimit: number; activation: ActivationOptions }[] = [
  { seed: 2501, steps: 250, historyLimit: 1000, activation: { mode: 'off' } },
  { seed: 2502, steps: 250, historyLimit: 3, activation: { mode: 'off' } },
  { seed: 2503, steps: 250, historyLimit: 1000, activation: { mode: 'realistic', firstCallDelaySeconds: 60 } },
];

interface Recorded {
  historyLimit: number;
  activation: ActivationOptions;
  steps: Step[];
  /** [step, vm, incarnation, body] for each document that changed at that step (step -1: the start). */
  documents: [number, string, number, string][];
  /** A digest of the snapshot after each step, savedAt aside. */
  snapshots: string[];
}

function record(steps: Step[], historyLimit: number, activation: ActivationOptions): Recorded {
  const clock = new ManualClock(T0);
  const engine = new Engine({ clock, fleet: FLEET, historyLimit, activation, newId: countingIds().newId });
  const seen = new Map<string, string>();
  const documents: Recorded['documents'] = [];
  const snapshots: string[] = [];
  const look = (at: number) => {
    for (const name of NAMES) {
      if (!engine.fleet.vms.has(name)) {
        seen.delete(name);
        continue;
      }
      const answer = renderAnswer(engine, name, '2020-07-01');
      const body = answer.body.toString();
      const key = `${answer.incarnation} ${body}`;
      if (seen.get(name) === key) continue;
      seen.set(name, key);
      documents.push([at, name, answer.incarnation, body]);
    }
  };
  look(-1);
  steps.forEach((s, i) => {
    applyStep(engine, clock, s);
    look(i);
    const snapshot = JSON.stringify({ ...engine.snapshot(), savedAt: 0 });
    snapshots.push(createHash('sha256').update(snapshot).digest('hex').slice(0, 16));
  });
  return { historyLimit, activation, steps, documents, snapshots };
}

describe('the documents every VM sees, on recorded histories', () => {
  if (process.env.FOREWARN_UPDATE_GOLDEN === '1') {
    const recorded = HISTORIES.map(({ seed, steps, historyLimit, activation }) => {
      const [history] = fc.sample(fc.array(step, { minLength: steps, maxLength: steps }), { seed, numRuns: 1 });
      return record(history!, historyLimit, activation);
    });
    writeFileSync(FIXTURE, `${JSON.stringify(recorded, null, 1)}\n`);
  }
  const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Recorded[];

  fixture.forEach((expected, n) => {
    it(`history ${n + 1}: ${expected.steps.length} steps, history limit ${expected.historyLimit}, activation ${expected.activation.mode}`, () => {
      assert.ok(expected.documents.length > expected.steps.length / 10, 'the history changes documents often');
      const actual = record(expected.steps, expected.historyLimit, expected.activation);
      // The first difference, with its step, reads better than a diff of thousands of entries.
      actual.documents.forEach((d, i) => assert.deepEqual(d, expected.documents[i], `document change ${i}`));
      assert.equal(actual.documents.length, expected.documents.length);
      actual.snapshots.forEach((d, i) =>
        assert.equal(d, expected.snapshots[i], `the snapshot after step ${i}: ${JSON.stringify(expected.steps[i])}`),
      );
    });
  });
});
