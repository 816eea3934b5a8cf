// The per-event runner fed by a source other than IMDS, as a controller fed by Event Grid will be:
// a monitor of the test's own. The runner needs nothing of IMDS: it prepares, approves through
// whatever sends approvals, recovers, and a notification delivered twice changes nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { EventMonitor, EventSink } from '../../src/agent/monitor.js';
import { EventRunner } from '../../src/agent/runner.js';
import type { Rule } from '../../src/agent/types.js';
import type { ScheduledEvent } from '../../src/client/index.js';
import { agentConfig, logAction, ok, rule, servicesAt } from './support.js';

const EVENT: ScheduledEvent = {
  id: 'F7B2D6A4-0C3E-4C1D-9D6B-3A1E5C7B9F20',
  status: 'Scheduled',
  type: 'Freeze',
  resourceType: 'VirtualMachine',
  resources: ['vm0'],
  notBefore: new Date(Date.now() + 10 * 60_000),
  description: 'Host server is undergoing maintenance.',
  source: 'Platform',
  durationInSeconds: 9,
  raw: {},
};

/** A source that replays what it is given, in order, as an Event Grid receiver would hand on deliveries. */
class ListMonitor implements EventMonitor {
  constructor(readonly steps: ((sink: EventSink) => void)[]) {}

  async run(sink: EventSink): Promise<void> {
    for (const step of this.steps) step(sink);
  }
}

describe('the runner, fed by a monitor that is not IMDS', () => {
  let dir = '';
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'forewarn-runner-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function runnerWith(rules: Rule[]) {
    const { path, journal, services, durable, stop, work } = servicesAt(join(dir, 'journal.json'));
    const ran: string[] = [];
    const sent: string[] = [];
    const runner = new EventRunner({
      ...services,
      config: agentConfig('http://127.0.0.1:9/unused', path, rules),
      vmName: 'vm0',
      dryRun: false,
      durable,
      actionsAborted: new AbortController().signal,
      runAction: async (action, ctx) => {
        ran.push(`${ctx.phase}:${action.type === 'log' ? action.message : action.type}`);
        return ok();
      },
      kubernetes: null,
      fleet: null,
      approvals: {
        approve: async (id) => void sent.push(id),
        refused: () => false,
      },
    });
    const settled = async () => {
      while (work.size > 0) await Promise.all([...work]);
    };
    return { runner, journal, ran, sent, settled, stop };
  }

  test('prepares, approves once through its sender, and recovers; a second delivery of the same event changes nothing', async () => {
    const { runner, journal, ran, sent, settled, stop } = runnerWith([
      rule({ actions: [logAction('drain')], onComplete: [logAction('undrain')] }),
    ]);
    await new ListMonitor([(s) => s.seen(EVENT, 'scheduled'), (s) => s.seen(EVENT, 'scheduled')]).run(runner);
    await settled();
    assert.deepEqual(ran, ['prepare:drain']);
    assert.deepEqual(sent, [EVENT.id]);
    assert.notEqual(journal.get(EVENT.id)?.approval, null, 'the approval is journaled');

    await new ListMonitor([
      (s) => s.seen({ ...EVENT, status: 'Started', notBefore: null }, 'started'),
      (s) => s.gone(EVENT, 'completed'),
    ]).run(runner);
    await settled();
    assert.deepEqual(ran, ['prepare:drain', 'complete:undrain']);
    assert.deepEqual(sent, [EVENT.id], 'never approved twice');
    assert.equal(journal.get(EVENT.id)?.outcome, 'completed');
    assert.notEqual(journal.get(EVENT.id)?.recoveredAt, null, 'recovered, so a restart does nothing more');

    // The same notification once more, after the event's end: the journal knows it ended.
    await new ListMonitor([(s) => s.seen(EVENT, 'scheduled')]).run(runner);
    await settled();
    assert.deepEqual(ran, ['prepare:drain', 'complete:undrain']);
    assert.deepEqual(sent, [EVENT.id]);
    stop.abort();
  });

  test('a cancelled event runs onCancel, not onComplete, and is not approved by a rule that says never', async () => {
    const { runner, ran, sent, settled, stop } = runnerWith([
      rule({ approval: 'never', actions: [logAction('drain')], onComplete: [logAction('undrain')], onCancel: [logAction('undo')] }),
    ]);
    await new ListMonitor([(s) => s.seen(EVENT, 'scheduled')]).run(runner);
    await settled();
    await new ListMonitor([(s) => s.gone(EVENT, 'cancelled')]).run(runner);
    await settled();
    assert.deepEqual(ran, ['prepare:drain', 'cancel:undo']);
    assert.deepEqual(sent, []);
    stop.abort();
  });

  test('an event gone before its preparation began is not prepared or approved', async () => {
    const { runner, ran, sent, settled, stop } = runnerWith([rule({ actions: [logAction('drain')], onCancel: [logAction('undo')] })]);
    await new ListMonitor([(s) => s.seen(EVENT, 'scheduled'), (s) => s.gone(EVENT, 'cancelled')]).run(runner);
    await settled();
    assert.ok(!ran.includes('prepare:drain'), ran.join());
    assert.deepEqual(sent, []);
    stop.abort();
  });
});
