// What /proc says of a process. A process that is exiting has released its memory (so its environment
// reads empty) before it becomes a zombie; until then its stat still shows R, S or D. Only the kernel's
// PF_EXITING flag (stat field 9) says it is ending. Treated as live, such a member made a group that was
// proven ours read as not proven (process-group.test.ts: "waits for a group not proven ours only until
// `unprovenUntil` aborts; a proven one past it" failed under load with 'aborted').
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isEnded, parseProcStat } from '../../src/shared/proc.js';

/** A /proc/PID/stat line: pid (comm) state ppid pgrp session tty tpgid flags … starttime (field 22) … */
function statLine(state: string, flags: number, comm = 'node'): string {
  const after = [state, '1', '4242', '4242', '0', '-1', String(flags), ...Array.from({ length: 12 }, () => '0'), '987654', '0', '0'];
  return `4242 (${comm}) ${after.join(' ')}\n`;
}

describe('shared/proc: reading /proc/PID/stat', () => {
  test('state, parent, group and start time are read after the command name, whatever it holds', () => {
    assert.deepEqual(parseProcStat(statLine('S', 0x400000, 'a) (b c')), {
      state: 'S',
      ppid: 1,
      pgid: 4242,
      startTime: '987654',
      exiting: false,
    });
  });

  test('a process with PF_EXITING (0x4) set has ended, though its state is still R, S or D', () => {
    for (const state of ['R', 'S', 'D']) {
      assert.equal(isEnded(parseProcStat(statLine(state, 0x400000 | 0x4))), true, state);
      assert.equal(isEnded(parseProcStat(statLine(state, 0x400000))), false, state);
    }
  });

  test('a zombie or a dead process has ended; a line that is not a stat line reads as nothing', () => {
    assert.equal(isEnded(parseProcStat(statLine('Z', 0))), true);
    assert.equal(isEnded(parseProcStat(statLine('X', 0))), true);
    assert.equal(parseProcStat('garbage'), undefined);
  });
});
