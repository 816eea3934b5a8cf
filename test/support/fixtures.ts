// Values the tests build again and again: a scheduled event as the client parses it, and agent rules.
import type { Rule, RuleMatch } from '../../src/agent/types.js';
import type { ScheduledEvent } from '../../src/client/index.js';

/** A Platform Reboot of web-0 and web-1, Scheduled for 2030-01-01T00:15:00Z; `over` changes what a test needs. */
export function scheduledEvent(over: Partial<ScheduledEvent> = {}): ScheduledEvent {
  return {
    id: 'E1',
    status: 'Scheduled',
    type: 'Reboot',
    resourceType: 'VirtualMachine',
    resources: ['web-0', 'web-1'],
    notBefore: new Date('2030-01-01T00:15:00Z'),
    description: 'Host server is undergoing maintenance.',
    source: 'Platform',
    durationInSeconds: -1,
    raw: {},
    ...over,
  };
}

/** scheduledEvent()'s fields as the agent records them and hands them to actions, NotBefore in ISO form. */
export const SCHEDULED_EVENT_FIELDS = {
  type: 'Reboot',
  status: 'Scheduled',
  source: 'Platform',
  resources: ['web-0', 'web-1'],
  notBefore: '2030-01-01T00:15:00.000Z',
  description: 'Host server is undergoing maintenance.',
} as const;

/** A rule's match that every event passes. */
export const MATCH_ANY: RuleMatch = {
  eventType: null,
  eventSource: null,
  status: null,
  durationInSeconds: null,
  affectsThisVm: null,
  description: null,
};

/** A rule named r that matches every event, has no actions and approves after them: the parser's defaults. */
export function rule(over: Partial<Rule> = {}): Rule {
  return {
    name: 'r',
    match: { ...MATCH_ANY },
    actions: [],
    approval: 'after-actions',
    approvalMarginSeconds: 0,
    onComplete: [],
    onCancel: [],
    ...over,
  };
}
