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
  assert.equal(t.startedMs('Reboot', -1), 10_000);
  assert.equal(t.startedMs('Reboot', 0), 10_000);
  assert.equal(t.startedMs('Reboot', 1200), 20_000);
  assert.throws(() => new Timing(0), /positive/);
});

test('a fast timing factor still leaves an event Started long enough for 1 s polling', () => {
  assert.equal(new Timing(60).startedMs('Freeze', 6), 2000);
  assert.equal(new Timing(6000).startedMs('Reboot', -1), 2000);
  // A duration already shorter than the floor is kept as it is.
  assert.equal(new Timing(60).startedMs('Freeze', 1), 1000);
  assert.equal(new Timing(1).startedMs('Freeze', 5), 5000);
});

test('the manual clock only moves forward', () => {
  const c = new ManualClock(1000);
  assert.equal(c.advance(500), 1500);
  assert.equal(c.advanceTo(1200), 1500);
  assert.throws(() => c.advance(-1), /cannot advance/);
});
