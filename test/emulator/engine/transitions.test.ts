// The engine reports each status change of an event as it happens, for Event Grid delivery: SPEC §4
// (Event Grid and ARM) delivers "every status change (Scheduled, Started, Completed, Canceled)".
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EventTransition } from '../../../src/emulator/engine/engine.js';
import { MINUTE, makeEngine } from './fixtures.js';

function record(engine: ReturnType<typeof makeEngine>['engine']) {
  const seen: { id: string; status: EventTransition['status']; at: number }[] = [];
  const stop = engine.onEventTransition(({ event, status, at }) => seen.push({ id: event.id, status, at }));
  return { seen, stop };
}

describe('engine: event transitions', () => {
  test('Scheduled, Started by approval, then Completed, each once and in order, at the time it happened', () => {
    const { engine, advance, clock } = makeEngine();
    const { seen } = record(engine);
    engine.createOperation({ type: 'restart', vms: ['solo'] });
    const [event] = engine.events();
    const created = clock.now();
    advance(MINUTE);
    engine.approve('solo', [event!.id]);
    const started = clock.now();
    advance(60 * MINUTE);
    assert.deepEqual(
      seen.map((s) => s.status),
      ['Scheduled', 'Started', 'Completed'],
    );
    assert.ok(seen.every((s) => s.id === event!.id));
    assert.equal(seen[0]!.at, created);
    assert.equal(seen[1]!.at, started);
    assert.ok(seen[2]!.at > started);
  });

  test('a cancelled event is Canceled, and a NotBefore start is reported too', () => {
    const { engine, advance } = makeEngine();
    const { seen } = record(engine);
    engine.createOperation({ type: 'restart', vms: ['solo'] });
    engine.cancel(engine.events()[0]!.id);
    engine.createOperation({ type: 'freeze', vms: ['solo'] });
    advance(30 * MINUTE);
    assert.deepEqual(
      seen.map((s) => s.status),
      ['Scheduled', 'Canceled', 'Scheduled', 'Started', 'Completed'],
    );
  });

  test('an event that starts at once is reported Scheduled, then Started, at the same time', () => {
    const { engine } = makeEngine();
    const { seen } = record(engine);
    engine.createOperation({ type: 'hardware-failure', vms: ['solo'] });
    assert.deepEqual(
      seen.map((s) => s.status),
      ['Scheduled', 'Started'],
    );
    assert.equal(seen[0]!.at, seen[1]!.at);
  });

  test('a listener removed hears nothing more; restore replays nothing', () => {
    const { engine } = makeEngine();
    const { seen, stop } = record(engine);
    engine.createOperation({ type: 'restart', vms: ['solo'] });
    stop();
    engine.cancel(engine.events()[0]!.id);
    assert.equal(seen.length, 1);
    const other = makeEngine();
    const again = record(other.engine);
    engine.createOperation({ type: 'restart', vms: ['solo'] });
    other.engine.restore(engine.snapshot());
    assert.equal(again.seen.length, 0);
  });
});
