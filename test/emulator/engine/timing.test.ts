import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../src/emulator/engine/clock.js';
import { MINIMUM_NOTICE_SECONDS, Timing, parseTimingFactor } from '../../../src/emulator/engine/timing.js';

test('the seed\'s minimum notice table', () => {
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
  assert.equal(t.startedMs('Freeze', 6), 100);
  assert.equal(t.startedMs('Reboot', -1), 10_000);
  assert.equal(t.startedMs('Reboot', 0), 10_000);
  assert.throws(() => new Timing(0), /positive/);
});

test('the manual clock only moves forward', () => {
  const c = new ManualClock(1000);
  assert.equal(c.advance(500), 1500);
  assert.equal(c.advanceTo(1200), 1500);
  assert.throws(() => c.advance(-1), /cannot advance/);
});
