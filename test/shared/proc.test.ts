// What /proc says of a process. A process that is exiting has released its memory (so its environment
// reads empty) before it becomes a zombie; until then its stat still shows R, S or D. Only the kernel's
// PF_EXITING flag (stat field 9) says it is ending. Treated as live, such a member made a group that was
// proven ours read as not proven (process-group.test.ts: "waits for a group not proven ours only until
// `unprovenUntil` aborts; a proven one past it" failed under load with 'aborted'). The flag alone did
// not close it: a stat read just before the exit and an environment read just after it still made
// the member look alive and not ours (the same test failed again in CI).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ACTION_MARKER_VARIABLE } from '../../src/agent/exec-env.js';
import { groupState } from '../../src/agent/process-group.js';
import { isEnded, newMarker, parseProcStat, type ProcSource } from '../../src/shared/proc.js';

/** A /proc/PID/stat line: pid (comm) state ppid pgrp session tty tpgid flags … starttime (field 22) … */
function statLine(state: string, flags: number, comm = 'node', pid = 4242): string {
  const ppid = pid === 1 ? 0 : 1;
  const after = [
    state,
    String(ppid),
    String(pid),
    String(pid),
    '0',
    '-1',
    String(flags),
    ...Array.from({ length: 12 }, () => '0'),
    '987654',
    '0',
    '0',
  ];
  return `${pid} (${comm}) ${after.join(' ')}\n`;
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
  test('a member that exits between the readings of its stat and its environment is no member (its group is gone)', () => {
    // The kernel sets PF_EXITING, then releases the memory /proc/PID/environ is read from. A stat read
    // just before that shows the member alive; its environment, read just after, is empty.
    const marker = newMarker(ACTION_MARKER_VARIABLE).value;
    let statReads = 0;
    const racing: ProcSource = {
      pids: () => [1, 4242],
      stat: (pid) => {
        if (pid === 1) return parseProcStat(statLine('S', 0x400100, 'init', 1));
        statReads += 1;
        return parseProcStat(statLine('S', statReads === 1 ? 0x400000 : 0x400004));
      },
      environ: () => Buffer.alloc(0),
    };
    assert.equal(groupState({ pgid: 4242, marker }, racing), 'gone');
  });

  test('a live member whose environment lacks the marker is still unproven, read twice or not', () => {
    const marker = newMarker(ACTION_MARKER_VARIABLE).value;
    const stranger: ProcSource = {
      pids: () => [4242],
      stat: () => parseProcStat(statLine('S', 0x400000)),
      environ: () => Buffer.from('PATH=/usr/bin\0'),
    };
    assert.equal(groupState({ pgid: 4242, marker }, stranger), 'unproven');
    const ours: ProcSource = { ...stranger, environ: () => Buffer.from(`PATH=/usr/bin\0${ACTION_MARKER_VARIABLE}=${marker}\0`) };
    assert.equal(groupState({ pgid: 4242, marker }, ours), 'ours');
  });
});
