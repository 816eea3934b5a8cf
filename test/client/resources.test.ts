import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { affects, isLeader, leaderOf, type ScheduledEvent } from '../../src/client/index.js';

function ev(resources: string[]): ScheduledEvent {
  return {
    id: 'A',
    status: 'Scheduled',
    type: 'Freeze',
    resourceType: 'VirtualMachine',
    resources,
    notBefore: null,
    description: '',
    source: null,
    durationInSeconds: -1,
    raw: {},
  };
}

describe('affects', () => {
  const cases: [string[], string, boolean][] = [
    [['WestNO_0', 'WestNO_1'], 'WestNO_1', true],
    [['WestNO_0', 'WestNO_1'], 'westno_1', true],
    [['WestNO_0', 'WestNO_1'], 'WestNO_2', false],
    [['MySS_3'], 'myss_3', true],
    [['myss_3'], 'MYSS_3', true],
    [['myss_3'], 'myss_03', true],
    [['myss_3'], 'myss_30', false],
    [['myss_3'], 'other_3', false],
    // 2017-03-01 prefixes every name with `_`.
    [['_FrontEnd_IN_0', '_BackEnd_IN_0'], 'backend_in_0', true],
    [['_myvm'], 'myvm', true],
    [['myvm'], '_myvm', true],
    // A VM whose own name starts with `_`, as 2017-03-01 shows it and as later versions do.
    [['__odd'], '_odd', true],
    [['_odd'], '_odd', true],
    // Default scale-set computer names: prefix + 6 base-36 digits of the instance id.
    [['myss_3'], 'myss000003', true],
    [['myss_10'], 'myss00000a', true],
    [['myss_10'], 'MYSS00000A', true],
    [['myss_3'], 'myss000004', false],
    [['averylongscaleset_36'], 'averylong000010', true],
    [['averylongscaleset_36'], 'averylongs000010', false],
    [['web0'], 'web', false],
    [['web0'], '', false],
    [[], 'web0', false],
  ];
  for (const [resources, name, want] of cases) {
    it(`${JSON.stringify(resources)} ${want ? 'includes' : 'excludes'} ${JSON.stringify(name)}`, () => {
      assert.equal(affects(ev(resources), name), want);
    });
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
