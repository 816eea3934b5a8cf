import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Schedule } from '../../../src/emulator/engine/schedule.js';

test('pops in time order, equal times in insertion order', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 200 }), (times) => {
      const s = new Schedule();
      times.forEach((at, i) => s.push(at, String(i), 'start'));
      const out: [number, number][] = [];
      for (let d = s.pop(); d; d = s.pop()) out.push([d.at, Number(d.ref)]);
      const expected = times.map((at, i) => [at, i] as [number, number]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      assert.deepEqual(out, expected);
      assert.equal(s.size, 0);
    }),
  );
});
