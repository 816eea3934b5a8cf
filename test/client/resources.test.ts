import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { affects, isLeader, leaderOf, type ScheduledEvent } from '../../src/client/index.js';
import { scheduledEvent } from '../support/fixtures.js';

const ev = (resources: string[]): ScheduledEvent =>
  scheduledEvent({ id: 'A', type: 'Freeze', resources, notBefore: null, description: '', source: null });

describe('affects', () => {
  /** Resources, the names affects() finds in them, and those it does not. */
  const cases: { resources: string[]; in?: string[]; out?: string[] }[] = [
    { resources: ['WestNO_0', 'WestNO_1'], in: ['WestNO_1', 'westno_1'], out: ['WestNO_2'] },
    { resources: ['MySS_3'], in: ['myss_3'] },
    { resources: ['myss_3'], in: ['MYSS_3', 'myss_03'], out: ['myss_30', 'other_3'] },
    // 2017-03-01 prefixes every name with `_`.
    { resources: ['_FrontEnd_IN_0', '_BackEnd_IN_0'], in: ['backend_in_0'] },
    { resources: ['_myvm'], in: ['myvm'] },
    { resources: ['myvm'], in: ['_myvm'] },
    // A VM whose own name starts with `_`, as 2017-03-01 shows it and as later versions do.
    { resources: ['__odd'], in: ['_odd'] },
    { resources: ['_odd'], in: ['_odd'] },
    // Default scale-set computer names: prefix + 6 base-36 digits of the instance id.
    { resources: ['myss_3'], in: ['myss000003'], out: ['myss000004'] },
    { resources: ['myss_10'], in: ['myss00000a', 'MYSS00000A'] },
    { resources: ['averylongscaleset_36'], in: ['averylong000010'], out: ['averylongs000010'] },
    // The emulator cuts a default Linux prefix to 58 characters, so that the name fits in 64.
    { resources: [`${'a'.repeat(60)}_18`], in: [`${'a'.repeat(58)}00000I`], out: [`${'a'.repeat(59)}00000I`] },
    { resources: ['web0'], out: ['web', ''] },
    { resources: [], out: ['web0'] },
  ];
  for (const { resources, in: found = [], out: missed = [] } of cases) {
    for (const [name, want] of [...found.map((n) => [n, true] as const), ...missed.map((n) => [n, false] as const)]) {
      it(`${JSON.stringify(resources)} ${want ? 'includes' : 'excludes'} ${JSON.stringify(name)}`, () => {
        assert.equal(affects(ev(resources), name), want);
      });
    }
  }
});

describe('leaderOf / isLeader', () => {
  it('is the first name in Resources', () => {
    assert.equal(leaderOf(ev(['WestNO_0', 'WestNO_1'])), 'WestNO_0');
    assert.equal(leaderOf(ev(['b', 'a'])), 'b');
  });

  it('is null without resources', () => {
    assert.equal(leaderOf(ev([])), null);
    assert.equal(isLeader(ev([]), 'vm0'), false);
  });

  it('drops the 2017-03-01 underscore only when every name has it', () => {
    assert.equal(leaderOf(ev(['_FrontEnd_IN_0', '_BackEnd_IN_0'])), 'FrontEnd_IN_0');
    assert.equal(leaderOf(ev(['_odd', 'even'])), '_odd');
  });

  it('isLeader compares as affects does', () => {
    const e = ev(['MySS_3', 'MySS_4']);
    assert.equal(isLeader(e, 'myss_3'), true);
    assert.equal(isLeader(e, 'myss000003'), true);
    assert.equal(isLeader(e, 'myss_4'), false);
  });
});
