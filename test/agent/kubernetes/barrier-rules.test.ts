// The barrier's rules that need no cluster: which nodes an event names (by the VM name each agent
// wrote on its node), which of them are prepared, and who approves.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizeKubernetes } from '../../../src/agent/config.js';
import { AGENT_LABEL, PREPARED_ANNOTATION, VM_NAME_ANNOTATION, barrierView, preparedIds } from '../../../src/agent/kubernetes/barrier.js';
import { namesOnly } from '../../../src/agent/coordination/barrier.js';
import type { ListedNode } from '../../../src/agent/kubernetes/api.js';
import { decideApproval, usesBarrier } from '../../../src/agent/leader.js';
import type { Rule } from '../../../src/agent/types.js';
import type { ScheduledEvent } from '../../../src/client/index.js';
import { rule } from '../../support/fixtures.js';

const event = (resources: string[], over: Partial<ScheduledEvent> = {}): ScheduledEvent =>
  ({
    id: 'E-1',
    type: 'Reboot',
    status: 'Scheduled',
    notBefore: new Date(Date.now() + 600_000),
    resources,
    description: '',
    source: 'Platform',
    durationInSeconds: -1,
    ...over,
  }) as unknown as ScheduledEvent;

function node(name: string, vm: string | null, prepared: string[] = [], labelled = true): ListedNode {
  return {
    name,
    uid: name,
    resourceVersion: '1',
    unschedulable: false,
    annotations: {
      ...(vm !== null ? { [VM_NAME_ANNOTATION]: vm } : {}),
      ...(prepared.length > 0 ? { [PREPARED_ANNOTATION]: prepared.join(',') } : {}),
    },
    labels: labelled ? { [AGENT_LABEL]: 'true' } : {},
    taints: [],
    providerID: null,
    ready: true,
  } as unknown as ListedNode;
}

describe('kubernetes barrier: which nodes an event names', () => {
  it('waits for the named VMs whose node runs the agent and is not marked for this event', () => {
    const view = barrierView(
      event(['web-0', 'web-1', 'web-2', 'web-9']),
      [node('n0', 'web-0'), node('n1', 'web-1', ['e-0', 'e-1']), node('n2', 'web-2', ['e-0']), node('n3', 'web-3')],
      'web-0',
    );
    assert.deepEqual(
      view.named.map((n) => [n.vm, n.nodes, n.prepared]),
      [
        ['web-0', ['n0'], true],
        ['web-1', ['n1'], true],
        ['web-2', ['n2'], false],
      ],
      'web-0 is this VM (prepared, since it asks); web-1 is marked (ids compare lowercase); web-9 runs no agent; web-3 is not named',
    );
    assert.deepEqual(
      view.waiting.map((n) => n.vm),
      ['web-2'],
    );
  });

  it('compares names as affects does: case, the 2017-03-01 underscore, scale-set forms', () => {
    const view = barrierView(event(['_Web-0', 'pool_3']), [node('n0', 'web-0'), node('aks-pool-3', 'pool000003', ['e-1'])], 'other');
    assert.deepEqual(
      view.named.map((n) => [n.vm, n.prepared]),
      [
        ['web-0', false],
        ['pool000003', true],
      ],
    );
  });

  it('ignores nodes without the label or the VM name; two nodes claiming one VM are prepared when either is', () => {
    const view = barrierView(
      event(['web-0', 'web-2']),
      [node('n0', 'web-0', [], false), node('n-unnamed', null), node('n2-old', 'web-2'), node('n2', 'WEB-2', ['e-1'])],
      'nobody',
    );
    assert.deepEqual(
      view.named.map((n) => [n.vm, n.nodes, n.prepared]),
      [['web-2', ['n2-old', 'n2'], true]],
    );
    assert.deepEqual(view.waiting, []);
  });

  it('an event naming only this VM needs no look at the others', () => {
    assert.equal(namesOnly(event(['web-0']), 'WEB-0'), true);
    assert.equal(namesOnly(event(['_web-0']), 'web-0'), true);
    assert.equal(namesOnly(event(['web-0', 'web-1']), 'web-0'), false);
    assert.equal(namesOnly(event([]), 'web-0'), false);
  });

  it('reads the prepared mark as a list of ids', () => {
    assert.deepEqual(preparedIds({ annotations: {} }), []);
    assert.deepEqual(preparedIds({ annotations: { [PREPARED_ANNOTATION]: 'a,,b' } }), ['a', 'b']);
  });
});

describe('kubernetes barrier: who approves', () => {
  const drain: Rule = rule({ name: 'drain', actions: [{ type: 'kubernetes', name: 'drain', drain: true, timeoutSeconds: 60 }] });
  const k = normalizeKubernetes();

  it('is the default for an after-actions rule with a kubernetes action; leader-only, immediately and never opt out', () => {
    assert.equal(usesBarrier(drain, k), true);
    assert.equal(usesBarrier(drain, { ...k, approval: 'barrier' }), true);
    assert.equal(usesBarrier(drain, { ...k, approval: 'leader-only' }), false);
    assert.equal(usesBarrier({ ...drain, approval: 'immediately' }, k), false);
    assert.equal(usesBarrier({ ...drain, approval: 'never' }, k), false);
    assert.equal(usesBarrier(rule({ name: 'log', actions: [{ type: 'log', name: 'l', message: 'm', level: 'info' }] }), k), false);
  });

  it('any VM the event names waits at the barrier, whatever leader.mode says; a VM it does not name skips', () => {
    const base = { leader: { mode: 'first' as const, standby: null }, firstSeenAt: 0, now: 0, barrier: true };
    assert.deepEqual(decideApproval({ ...base, event: event(['web-0', 'web-2']), vmName: 'web-2' }), { kind: 'barrier' });
    assert.deepEqual(decideApproval({ ...base, event: event(['web-0', 'web-2']), vmName: 'web-0' }), { kind: 'barrier' });
    const skip = decideApproval({ ...base, event: event(['web-0']), vmName: 'web-2' });
    assert.equal(skip.kind, 'skip');
    assert.deepEqual(
      decideApproval({ ...base, event: event(['web-0'], { status: 'Started' } as Partial<ScheduledEvent>), vmName: 'web-0' }),
      {
        kind: 'skip',
        reason: 'the event is Started, no longer Scheduled',
      },
    );
    // Without the barrier, the leader rules as before.
    assert.equal(decideApproval({ ...base, barrier: false, event: event(['web-0', 'web-2']), vmName: 'web-2' }).kind, 'skip');
  });
});
