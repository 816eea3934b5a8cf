import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgentConfig } from '../../src/agent/config.js';
import { matchRule } from '../../src/agent/rules.js';
import type { Rule, RuleMatch } from '../../src/agent/types.js';
import type { ScheduledEvent } from '../../src/client/index.js';
import { MATCH_ANY, rule as anyRule, scheduledEvent } from '../support/fixtures.js';

const ev = (over: Partial<ScheduledEvent> = {}): ScheduledEvent =>
  scheduledEvent({ resources: ['web-0'], notBefore: new Date('2030-01-01T00:00:00Z'), ...over });

function rule(name: string, match: Partial<RuleMatch>): Rule {
  return anyRule({ name, match: { ...MATCH_ANY, ...match }, approval: 'immediately' });
}

function matches(match: Partial<RuleMatch>, event: ScheduledEvent, vmName = 'web-0'): boolean {
  return matchRule([rule('r', match)], event, vmName) !== null;
}

describe('matchRule', () => {
  const table: [string, Partial<RuleMatch>, Partial<ScheduledEvent>, boolean, string?][] = [
    ['empty match takes anything', {}, {}, true],
    ['type', { eventType: ['Reboot'] }, {}, true],
    ['type, other case in config', { eventType: ['reboot'] }, {}, true],
    ['type, other case on the wire', { eventType: ['Reboot'] }, { type: 'REBOOT' }, true],
    ['type, one of a list', { eventType: ['Freeze', 'Redeploy'] }, { type: 'Redeploy' }, true],
    ['type, not in the list', { eventType: ['Freeze', 'Redeploy'] }, {}, false],
    ['source', { eventSource: ['user'] }, { source: 'User' }, true],
    ['source, other', { eventSource: ['User'] }, {}, false],
    ['source missing on the wire', { eventSource: ['Platform'] }, { source: null }, false],
    ['status', { status: ['started'] }, { status: 'Started' }, true],
    ['status, other', { status: ['Started'] }, {}, false],
    ['duration at max (inclusive)', { durationInSeconds: { min: null, max: 9 } }, { durationInSeconds: 9 }, true],
    ['duration above max', { durationInSeconds: { min: null, max: 9 } }, { durationInSeconds: 10 }, false],
    ['duration at min (inclusive)', { durationInSeconds: { min: 5, max: null } }, { durationInSeconds: 5 }, true],
    ['duration below min', { durationInSeconds: { min: 5, max: null } }, { durationInSeconds: 4 }, false],
    ['duration in range', { durationInSeconds: { min: 0, max: 30 } }, { durationInSeconds: 0 }, true],
    ['unknown duration never counts as short', { durationInSeconds: { min: null, max: 9 } }, { durationInSeconds: -1 }, false],
    ['affects this VM', { affectsThisVm: true }, {}, true],
    ['affects this VM, other case', { affectsThisVm: true }, { resources: ['WEB-0'] }, true],
    ['does not affect this VM', { affectsThisVm: true }, { resources: ['web-1'] }, false],
    ['affectsThisVm false', { affectsThisVm: false }, { resources: ['web-1'] }, true],
    ['affectsThisVm false, but it does', { affectsThisVm: false }, {}, false],
    ['scale-set name as IMDS compute gives it', { affectsThisVm: true }, { resources: ['myss_3'] }, true, 'myss_3'],
    ['scale-set computer name', { affectsThisVm: true }, { resources: ['myss_3'] }, true, 'myss000003'],
    ['scale-set, another instance', { affectsThisVm: true }, { resources: ['myss_4'] }, false, 'myss_3'],
    ['2017-03-01 underscore prefix', { affectsThisVm: true }, { resources: ['_web-0'] }, true],
    ['description regex', { description: 'undergoing\\s+maint' }, {}, true],
    ['description regex ignores case', { description: '^host SERVER' }, {}, true],
    ['description regex, no match', { description: '^guest' }, {}, false],
    ['every condition must hold', { eventType: ['Reboot'], affectsThisVm: true, status: ['Started'] }, {}, false],
    ['every condition holds', { eventType: ['Reboot'], affectsThisVm: true, status: ['Scheduled'], eventSource: ['Platform'] }, {}, true],
  ];
  for (const [label, match, event, expected, vm] of table) {
    it(label, () => assert.equal(matches(match, ev(event), vm), expected));
  }

  it('returns the first matching rule, in order', () => {
    const rules = [rule('freeze', { eventType: ['Freeze'] }), rule('mine', { affectsThisVm: true }), rule('all', {})];
    assert.equal(matchRule(rules, ev({ type: 'Freeze' }), 'web-0')?.name, 'freeze');
    assert.equal(matchRule(rules, ev(), 'web-0')?.name, 'mine');
    assert.equal(matchRule(rules, ev({ resources: ['web-1'] }), 'web-0')?.name, 'all');
    assert.equal(matchRule(rules.slice(0, 2), ev({ resources: ['web-1'] }), 'web-0'), null);
    assert.equal(matchRule([], ev(), 'web-0'), null);
  });

  it('matches rules as loaded from a config file', () => {
    const { rules } = parseAgentConfig(
      [
        'rules:',
        '  - name: short-freeze',
        '    match: {eventType: freeze, durationInSeconds: {max: 9}}',
        '  - name: drain',
        '    match: {eventType: [Reboot, Redeploy, Preempt, Terminate], affectsThisVm: true}',
      ].join('\n'),
      'agent.yaml',
    );
    assert.equal(matchRule(rules, ev({ type: 'Freeze', durationInSeconds: 5 }), 'web-0')?.name, 'short-freeze');
    assert.equal(matchRule(rules, ev({ type: 'Freeze', durationInSeconds: 30 }), 'web-0'), null);
    assert.equal(matchRule(rules, ev({ type: 'Preempt', resources: ['pool_7'] }), 'pool_7')?.name, 'drain');
    assert.equal(matchRule(rules, ev({ type: 'Preempt', resources: ['pool_7'] }), 'pool_8'), null);
  });
});
