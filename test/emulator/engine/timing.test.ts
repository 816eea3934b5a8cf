import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../src/shared/clock.js';
import { MINIMUM_NOTICE_SECONDS, Timing, parseTimingFactor } from '../../../src/emulator/engine/timing.js';

test("the seed's minimum notice table", () => {
  assert.deepEqual(MINIMUM_NOTICE_SECONDS, { Freeze: 900, Reboot: 900, Redeploy: 600, Preempt: 30, Terminate: 300 });
});

test('--timing accepts realistic, dev and positive factors, and names bad values', () => {
  assert.equal(parseTimingFactor('realistic'), 1);
  assert.equal(parseTimingFactor('dev'), 60);
  assert.equal(parseTimingFactor('2.5'), 2.5);
  for (const bad of ['', 'fast', '0', '-3', 'NaN', 'Infinity']) {
    assert.throws(() => parseTimingFactor(bad), new RegExp(`--timing must be .* got "${bad}"`));
  }
});

test('timing scales nominal seconds and uses DurationInSeconds when positive', () => {
  const t = new Timing(60);
  assert.equal(t.minimumNoticeMs('Freeze'), 15_000);
  assert.equal(t.startedMs('Reboot', -1), 10_000);
  assert.equal(t.startedMs('Reboot', 0), 10_000);
  assert.equal(t.startedMs('Reboot', 1200), 20_000);
  assert.throws(() => new Timing(0), /positive/);
});

test('an event stays Started for the table time whatever its impact, at least 2 s however fast the factor', () => {
  // [seed] "Durée de l'impact : 7 secondes • EventStatus: « Started » à complété (événement supprimé
  // du tableau d'événements) : 10 minutes" (000_…): a short impact does not shorten the time in the document.
  assert.equal(new Timing(1).startedMs('Freeze', 5), 10 * 60_000);
  assert.equal(new Timing(60).startedMs('Freeze', 6), 10_000);
  assert.equal(new Timing(6000).startedMs('Reboot', -1), 2000);
  // An impact longer than the table keeps the event until it is over.
  assert.equal(new Timing(1).startedMs('Freeze', 900), 900_000);
});

test("the impact is the event's DurationInSeconds, or the table's when unknown; 0 is none", () => {
  assert.equal(new Timing(1).impactMs('Freeze', 5), 5000);
  assert.equal(new Timing(1).impactMs('Freeze', -1), 7000);
  assert.equal(new Timing(1).impactMs('Reboot', 0), 0);
  assert.equal(new Timing(60).impactMs('Reboot', -1), 3000);
});

test('the manual clock only moves forward', () => {
  const c = new ManualClock(1000);
  assert.equal(c.advance(500), 1500);
  assert.equal(c.advanceTo(1200), 1500);
  assert.throws(() => c.advance(-1), /cannot advance/);
});
