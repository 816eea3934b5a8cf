// Cancelled events leave their start time in the schedule; on a clock that never passes those
// times, churn must not make the schedule grow without end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Schedule } from '../../../src/emulator/engine/schedule.js';
import { makeEngine, MINUTE } from './fixtures.js';

test('create/cancel churn on a manual clock that never advances keeps the schedule bounded', () => {
  const { engine } = makeEngine();
  for (let i = 0; i < 20_000; i++) {
    const op = engine.createOperation({ type: 'freeze', vms: ['web0'] });
    engine.cancel(op.events[0]!);
  }
  assert.equal(engine.events().length, 0);
  // Only live work may stay due; stale entries are compacted away once they outnumber it.
  assert.ok(engine.pendingTransitions <= 1024, `schedule holds ${engine.pendingTransitions} entries`);
});

test('compaction keeps every transition still due, in order', () => {
  const { engine, advance } = makeEngine();
  const kept = engine.createOperation({ type: 'freeze', vms: ['web1'] });
  for (let i = 0; i < 3_000; i++) engine.cancel(engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!);
  advance(15 * MINUTE);
  assert.equal(engine.event(kept.events[0]!).status, 'Started');
});

test('Schedule.compact drops what the predicate rejects and keeps heap order', () => {
  const s = new Schedule();
  for (let i = 0; i < 100; i++) s.push((i * 37) % 101, `r${i}`, 'start');
  s.compact((d) => d.at % 2 === 0);
  const out: number[] = [];
  for (let d = s.pop(); d; d = s.pop()) out.push(d.at);
  assert.deepEqual(
    out,
    [...out].sort((a, b) => a - b),
  );
  assert.ok(out.every((at) => at % 2 === 0));
  assert.equal(out.length, 50);
});
