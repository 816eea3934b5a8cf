// The one time module: every layer's clock, and the manual clock tests drive.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock, SystemClock, monotonicMs, wallClock } from '../../src/shared/clock.js';
import { CLOCK_MODES } from '../../src/protocol/control.js';

describe('ManualClock', () => {
  it('moves only when told to, forward only, and tells its listeners', () => {
    const clock = new ManualClock(1_000);
    const heard: number[] = [];
    const off = clock.onAdvance(() => heard.push(clock.now()));
    assert.equal(clock.now(), 1_000);
    assert.equal(clock.advance(500), 1_500);
    assert.equal(clock.advance(0), 1_500, 'a zero step is no move');
    assert.equal(clock.advanceTo(1_200), 1_500, 'time never goes backwards');
    assert.equal(clock.advanceTo(2_000), 2_000);
    assert.deepEqual(heard, [1_500, 2_000]);
    off();
    clock.advance(1);
    assert.deepEqual(heard, [1_500, 2_000], 'a removed listener hears nothing');
  });

  it('refuses a negative or non-finite step', () => {
    const clock = new ManualClock(0);
    for (const bad of [-1, Number.NaN, Infinity]) assert.throws(() => clock.advance(bad), RangeError);
    assert.equal(clock.now(), 0);
  });

  it('starts at the wall clock by default', () => {
    const before = wallClock();
    const start = new ManualClock().now();
    assert.ok(start >= before && start <= wallClock());
  });
});

describe('SystemClock, wallClock and monotonicMs', () => {
  it('name their modes from the control contract', () => {
    assert.deepEqual([new SystemClock().mode, new ManualClock(0).mode], [...CLOCK_MODES]);
  });

  it('read real time: the wall clock in epoch ms, the monotonic one never backwards', () => {
    const a = new SystemClock().now();
    assert.ok(Math.abs(a - wallClock()) < 1_000);
    const m1 = monotonicMs();
    const m2 = monotonicMs();
    assert.ok(m2 >= m1);
  });
});
