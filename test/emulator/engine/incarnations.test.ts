// The dense incarnation table: one slot per name for good, marks per commit, changes for the state file.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ChangeLog } from '../../../src/emulator/engine/changes.js';
import { Incarnations } from '../../../src/emulator/engine/incarnations.js';

describe('Incarnations', () => {
  test('a name is marked once per commit mark, starts at the first incarnation, and rises by one a bump', () => {
    const table = new Incarnations(new ChangeLog());
    const slot = table.slotOf('vm0', 1);
    assert.equal(table.get('vm0'), 1);
    assert.equal(table.slotOf('vm0', 5), slot, 'a name keeps its slot and number');
    assert.equal(table.mark(slot, 1), true);
    assert.equal(table.mark(slot, 1), false, 'marked already in this commit');
    assert.equal(table.bump(slot), 'vm0');
    assert.equal(table.get('vm0'), 2);
    assert.equal(table.mark(slot, 2), true, 'a new commit marks it again');
  });

  test('keeps its entries in first-seen order past its first capacity, and forgets them and their marks at a clear', () => {
    const log = new ChangeLog();
    const table = new Incarnations(log);
    const names = Array.from({ length: 1000 }, (_, i) => `vm${i}`);
    for (const [i, name] of names.entries()) table.set(name, i + 1);
    assert.equal(table.size, 1000);
    assert.deepEqual(
      [...table.entries()],
      names.map((name, i) => [name, i + 1]),
    );
    for (const name of names) table.mark(table.slotOf(name, 1), 7);
    table.clear();
    assert.equal(table.size, 0);
    assert.equal(table.has('vm0'), false);
    assert.equal(table.mark(table.slotOf('vm5', 1), 7), true, 'a slot reused after a clear holds no old mark');
    assert.equal(table.get('vm5'), 1);
    assert.ok(log.everything, 'a clear makes the state file save everything');
  });

  test('reports inserts and changes to the state file once it is tracking', () => {
    const log = new ChangeLog();
    const table = new Incarnations(log);
    table.set('a', 1);
    log.restart();
    table.set('b', 1);
    table.bump(table.slotOf('a', 1));
    assert.deepEqual([...table.changes.changed], ['b', 'a']);
  });
});
