// The agent in-process: its pure decisions, and its loop against an in-process emulator with fake actions.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ScheduledEventsClient, type Health, type ScheduledEvent } from '../../src/client/index.js';
import { Agent, actionStep, eventFromEntry, outcomeWhileAway } from '../../src/agent/agent.js';
import { Journal } from '../../src/agent/journal.js';
import { ACTION_MARKER_VARIABLE } from '../../src/agent/exec-env.js';
import { newMarker, procStat } from '../../src/shared/proc.js';
import { daemonOnGroup, finishedActionGroup, requirePidReuse } from './pid-reuse.js';
import { RESEND_AFTER_MS, decideApproval, ownRole, shouldResend, standbyCovers } from '../../src/agent/leader.js';
import { AgentMetrics } from '../../src/agent/metrics.js';
import { parseListen, readiness, startStatusServer } from '../../src/agent/server.js';
import type { Action, ActionResult, AgentConfig, JournalEntry, Rule } from '../../src/agent/types.js';
import { scheduledEvent } from '../support/fixtures.js';
import {
  AgentHarness,
  agentConfig as baseConfig,
  perTest,
  type PerTest,
  inProcessEmulator,
  logAction,
  ok,
  rule,
  testClient,
  until,
  watchApprovals,
} from './support.js';

const event = (over: Partial<ScheduledEvent> = {}): ScheduledEvent => scheduledEvent({ description: '', ...over });

function entry(over: Partial<JournalEntry> = {}, ev: Partial<JournalEntry['event']> = {}): JournalEntry {
  return {
    eventId: 'E1',
    firstSeenAt: '2030-01-01T00:00:00.000Z',
    rule: 'r',
    event: {
      type: 'Reboot',
      status: 'Scheduled',
      source: 'Platform',
      resources: ['vm0'],
      notBefore: '2030-01-01T00:15:00.000Z',
      description: 'd',
      durationInSeconds: -1,
      ...ev,
    },
    actions: {},
    approval: null,
    outcome: null,
    recoveredAt: null,
    ...over,
  };
}

describe('leader', () => {
  it('first: only the first name in Resources, compared as affects compares', () => {
    assert.equal(ownRole('first', event(), 'web-0'), 'leader');
    assert.equal(ownRole('first', event(), 'WEB-0'), 'leader');
    assert.equal(ownRole('first', event({ resources: ['_web-0', '_web-1'] }), 'web-0'), 'leader');
    assert.equal(ownRole('first', event(), 'web-1'), null);
    assert.equal(ownRole('first', event({ resources: [] }), 'web-0'), null);
  });

  it('self: any VM the event names; any: every VM', () => {
    assert.equal(ownRole('self', event(), 'web-1'), 'leader');
    assert.equal(ownRole('self', event(), 'web-2'), null);
    assert.equal(ownRole('any', event(), 'web-2'), 'any');
  });

  it('the standby covers User events, or all with events: all', () => {
    assert.equal(standbyCovers(null, event({ source: 'User' })), false);
    assert.equal(standbyCovers({ afterSeconds: 30, events: 'user' }, event({ source: 'User' })), true);
    assert.equal(standbyCovers({ afterSeconds: 30, events: 'user' }, event({ source: 'Platform' })), false);
    assert.equal(standbyCovers({ afterSeconds: 30, events: 'user' }, event({ source: null })), false);
    assert.equal(standbyCovers({ afterSeconds: 30, events: 'all' }, event({ source: null })), true);
  });

  it('decides: approve, wait as standby, or skip with a reason', () => {
    const standby = { mode: 'first' as const, standby: { afterSeconds: 30, events: 'user' as const } };
    const base = { vmName: 'web-1', firstSeenAt: 1_000_000, now: 1_000_000 };
    assert.deepEqual(decideApproval({ ...base, leader: standby, event: event({ resources: ['web-1'] }) }), {
      kind: 'approve',
      as: 'leader',
    });
    assert.deepEqual(decideApproval({ ...base, leader: standby, event: event({ source: 'User' }) }), {
      kind: 'wait',
      as: 'standby',
      at: 1_030_000,
    });
    assert.deepEqual(decideApproval({ ...base, now: 1_030_000, leader: standby, event: event({ source: 'User' }) }), {
      kind: 'approve',
      as: 'standby',
    });
    const platform = decideApproval({ ...base, leader: standby, event: event() });
    assert.equal(platform.kind, 'skip');
    assert.match((platform as { reason: string }).reason, /only User events/);
    const started = decideApproval({ ...base, leader: { mode: 'any', standby: null }, event: event({ status: 'Started' }) });
    assert.equal(started.kind, 'skip');
    assert.match((started as { reason: string }).reason, /no longer Scheduled/);
    const noStandby = decideApproval({ ...base, leader: { mode: 'first', standby: null }, event: event() });
    assert.match((noStandby as { reason: string }).reason, /left to the leader web-0/);
  });

  it('resends a journaled approval only if still Scheduled a minute later', () => {
    assert.equal(shouldResend(event(), 0, RESEND_AFTER_MS - 1), false);
    assert.equal(shouldResend(event(), 0, RESEND_AFTER_MS), true);
    assert.equal(shouldResend(event({ status: 'Started' }), 0, RESEND_AFTER_MS * 10), false);
  });
});

describe('the state machine, pure parts', () => {
  it('never re-runs a finished action, re-runs an interrupted one', () => {
    assert.equal(actionStep(undefined), 'run');
    const rec = { startedAt: 'x', endedAt: null, attempts: 1, error: null };
    assert.equal(actionStep({ ...rec, status: 'running' }), 'rerun');
    assert.equal(actionStep({ ...rec, status: 'succeeded' }), 'skip-succeeded');
    assert.equal(actionStep({ ...rec, status: 'failed' }), 'skip-failed');
  });

  it('decides how an event that vanished unseen ended', () => {
    const now = Date.parse('2030-01-01T00:05:00Z');
    assert.equal(outcomeWhileAway(entry(), now), 'cancelled');
    assert.equal(outcomeWhileAway(entry({}, { status: 'Started', notBefore: null }), now), 'completed');
    assert.equal(outcomeWhileAway(entry({ approval: { sentAt: 'x', as: 'leader' } }), now), 'completed');
    assert.equal(outcomeWhileAway(entry(), Date.parse('2030-01-01T00:15:00Z')), 'completed');
    assert.equal(outcomeWhileAway(entry({}, { notBefore: null }), now), 'cancelled');
  });

  it('rebuilds the event from the journal for recovery actions', () => {
    const e = eventFromEntry(entry());
    assert.equal(e.id, 'E1');
    assert.equal(e.notBefore?.toISOString(), '2030-01-01T00:15:00.000Z');
    assert.equal(e.raw.NotBefore, 'Tue, 01 Jan 2030 00:15:00 GMT');
    assert.deepEqual(e.resources, ['vm0']);
  });
});

describe('status server', () => {
  const health = (msSinceSuccess: number | null, lastError: Error | null = null): Health => ({
    lastSuccessAt: msSinceSuccess === null ? null : new Date(0),
    msSinceSuccess,
    consecutiveFailures: lastError ? 1 : 0,
    lastError,
  });

  it('is ready only while the last good read is recent', () => {
    assert.equal(readiness(health(null), 10).ready, false);
    assert.match(readiness(health(null, new Error('connection refused')), 10).reason, /no good read.*connection refused/);
    assert.equal(readiness(health(9_000), 10).ready, true);
    const stale = readiness(health(11_000, new Error('IMDS answered 500')), 10);
    assert.equal(stale.ready, false);
    assert.match(stale.reason, /11\.0 s ago, over 10 s; last error: IMDS answered 500/);
  });

  it('parses HOST:PORT', () => {
    assert.deepEqual(parseListen('0.0.0.0:9464'), { host: '0.0.0.0', port: 9464 });
    assert.deepEqual(parseListen('[::1]:0'), { host: '::1', port: 0 });
    assert.deepEqual(parseListen(':9464'), { host: '127.0.0.1', port: 9464 });
    assert.throws(() => parseListen('nowhere'), /HOST:PORT/);
  });

  it('serves /healthz, /readyz and /metrics', async () => {
    let current = health(null);
    const metrics = new AgentMetrics({ defaultMetrics: false });
    metrics.health = () => current;
    metrics.approvalsSent.inc({ role: 'standby' });
    const server = await startStatusServer({ listen: '127.0.0.1:0', metrics, health: () => current, readyWithinSeconds: 5 });
    try {
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
      const notReady = await fetch(`${server.url}/readyz`);
      assert.equal(notReady.status, 503);
      assert.match(((await notReady.json()) as { reason: string }).reason, /no good read/);
      current = health(1_500);
      assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
      const text = await (await fetch(`${server.url}/metrics`)).text();
      assert.match(text, /forewarn_agent_approvals_sent_total\{role="standby"\} 1/);
      assert.match(text, /forewarn_agent_seconds_since_last_good_poll 1\.5/);
      assert.equal((await fetch(`${server.url}/nope`)).status, 404);
    } finally {
      await server.close();
    }
  });
});

// ---- the loop against an in-process emulator ---------------------------------------------------

interface Call {
  name: string;
  phase: string;
  eventId: string;
  dryRun: boolean;
  at: number;
}

const emu = inProcessEmulator();
/** The agent loop's folder and harness, test by test. */
let each: PerTest<Harness>;
const journalPath = () => join(each.dir, 'journal.json');

/** One agent under test, with fake actions whose behaviour each test chooses by action name. */
class Harness extends AgentHarness {
  readonly calls: Call[] = [];
  readonly approvals: { id: string; at: number }[] = [];
  readonly agent: Agent;
  readonly client: ScheduledEventsClient;

  constructor(config: AgentConfig, options: { journal?: Journal; dryRun?: boolean; client?: ScheduledEventsClient } = {}) {
    super();
    this.client = options.client ?? testClient(emu.imdsUrl);
    watchApprovals(this.client, (id) => this.approvals.push({ id, at: Date.now() }));
    this.agent = new Agent({
      config,
      logger: this.logger(),
      client: this.client,
      dryRun: options.dryRun ?? false,
      metrics: new AgentMetrics({ defaultMetrics: false }),
      ...(options.journal ? { journal: options.journal } : {}),
      runAction: async (action, ctx) => {
        this.calls.push({ name: action.name, phase: ctx.phase, eventId: ctx.event.id, dryRun: ctx.dryRun, at: Date.now() });
        const behaviour = this.behaviours.get(action.name);
        return behaviour ? behaviour(ctx) : ok();
      },
    });
  }

  names(eventId?: string): string[] {
    return this.calls.filter((c) => eventId === undefined || c.eventId === eventId).map((c) => `${c.phase}:${c.name}`);
  }

  has(msg: string | RegExp, eventId?: string): boolean {
    return this.count(msg, eventId) > 0;
  }
}

function agentConfig(rules: Rule[], over: Partial<AgentConfig> = {}): AgentConfig {
  return baseConfig(emu.imdsUrl, journalPath(), rules, over);
}

const prepAction: Action = {
  type: 'exec',
  name: 'prep',
  argv: ['/bin/true'],
  timeoutSeconds: 60,
  retries: 0,
  cwd: null,
  env: {},
  passEnv: [],
};

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });

/** An action that succeeds after `ms`. */
const takes = (ms: number) => async (): Promise<ActionResult> => {
  await sleep(ms);
  return ok(ms);
};

function live(id: string) {
  return emu.emulator.engine.events().find((e) => e.id === id);
}

function create(type: 'platform-reboot' | 'restart' | 'hardware-failure' | 'freeze' = 'platform-reboot'): string {
  return emu.emulator.engine.createOperation({ type, vms: ['vm0'] }).events[0]!;
}

async function documentEvent(id: string): Promise<ScheduledEvent> {
  const doc = await new ScheduledEventsClient({ endpoint: emu.imdsUrl }).getDocument();
  return doc.events.find((e) => e.id === id)!;
}

describe('agent loop', () => {
  each = perTest(emu, 'agent-unit');

  it('after-actions: stops at the first failed action and never approves', async () => {
    const h = (each.harness = new Harness(agentConfig([rule({ actions: [logAction('a'), logAction('b'), logAction('c')] })])));
    h.behaviours.set('b', async () => ({ ok: false, attempts: 2, error: 'exit code 1', durationMs: 5 }));
    h.start();
    const id = create();
    await until('the refusal', () => h.has(/preparation did not succeed/, id));
    assert.deepEqual(h.names(id), ['prepare:a', 'prepare:b']);
    assert.deepEqual(h.approvals, []);
    assert.equal(live(id)!.status, 'Scheduled');
    const j = Journal.open(journalPath()).get(id)!;
    assert.equal(j.actions['prepare:0']!.status, 'succeeded');
    assert.equal(j.actions['prepare:1']!.status, 'failed');
    assert.equal(j.actions['prepare:1']!.error, 'exit code 1');
    assert.equal(j.actions['prepare:2'], undefined);
  });

  it('after-actions: approves only once every action has succeeded, after the margin', async () => {
    const h = (each.harness = new Harness(agentConfig([rule({ actions: [logAction('drain')], approvalMarginSeconds: 0.3 })])));
    h.behaviours.set('drain', takes(200));
    h.start();
    const id = create();
    await until('the approval', () => live(id)?.status === 'Started');
    const drain = h.calls.find((c) => c.name === 'drain')!;
    assert.ok(h.approvals[0]!.at - drain.at >= 200 + 290, `approved ${h.approvals[0]!.at - drain.at} ms after the drain started`);
    assert.equal(h.approvals.length, 1);
  });

  it('immediately: approves at once; the actions run too but do not gate it', async () => {
    const h = (each.harness = new Harness(agentConfig([rule({ approval: 'immediately', actions: [logAction('slow')] })])));
    let finished = 0;
    h.behaviours.set('slow', async () => {
      await sleep(500);
      finished = Date.now();
      return ok(500);
    });
    h.start();
    const id = create('restart');
    await until('the approval', () => h.approvals.length > 0);
    await until('the action', () => finished > 0);
    assert.ok(h.approvals[0]!.at < finished, 'approved while the action ran');
    assert.deepEqual(h.names(id), ['prepare:slow']);
  });

  it('never: runs the actions and leaves the event to NotBefore', async () => {
    const h = (each.harness = new Harness(agentConfig([rule({ approval: 'never', actions: [logAction('a')] })])));
    h.start();
    const id = create();
    await until('the decision', () => h.has(/approval is "never"/, id));
    assert.deepEqual(h.approvals, []);
  });

  it('an event that arrives Started: actions run, nothing is approved, onComplete when it ends', async () => {
    const h = (each.harness = new Harness(agentConfig([rule({ actions: [logAction('a')], onComplete: [logAction('back')] })])));
    h.start();
    const id = create('hardware-failure');
    await until('the actions', () => h.names(id).includes('prepare:a'));
    assert.ok(h.has(/arrived already Started/, id));
    emu.emulator.engine.complete(id);
    await until('recovery', () => h.names(id).includes('complete:back'));
    assert.deepEqual(h.approvals, []);
    assert.deepEqual(h.names(id), ['prepare:a', 'complete:back']);
  });

  it('a cancellation during preparation: the running action finishes, the rest are skipped, onCancel runs', async () => {
    const h = (each.harness = new Harness(
      agentConfig([rule({ actions: [logAction('a'), logAction('b')], onCancel: [logAction('undo')] })]),
    ));
    h.behaviours.set('a', takes(300));
    h.start();
    const id = create();
    await until('the first action', () => h.names(id).includes('prepare:a'));
    emu.emulator.engine.cancel(id);
    await until('onCancel', () => h.names(id).includes('cancel:undo'));
    assert.deepEqual(h.names(id), ['prepare:a', 'cancel:undo']);
    assert.deepEqual(h.approvals, []);
    const j = Journal.open(journalPath()).get(id)!;
    assert.equal(j.outcome, 'cancelled');
    assert.notEqual(j.recoveredAt, null);
  });

  it('after a restart: the finished action is skipped, the interrupted one re-run, then approval', async () => {
    const id = create();
    const seed = Journal.open(journalPath());
    seed.ensure(await documentEvent(id), 'r');
    seed.actionStarted(id, 'prepare:0');
    seed.actionFinished(id, 'prepare:0', ok());
    seed.actionStarted(id, 'prepare:1');
    const h = (each.harness = new Harness(agentConfig([rule({ actions: [logAction('a'), logAction('b'), logAction('c')] })])));
    h.start();
    await until('the approval', () => live(id)?.status === 'Started');
    assert.deepEqual(h.names(id), ['prepare:b', 'prepare:c']);
    assert.ok(h.has(/interrupted/, id));
    assert.equal(h.approvals.length, 1);
  });

  it(
    'after a restart: a group number an unrelated daemon reused is waited for and logged, never signalled',
    { skip: process.platform !== 'linux' && 'pid reuse is forced through Linux /proc' },
    async () => {
      requirePidReuse();
      const id = create();
      const record = await finishedActionGroup();
      const daemon = await daemonOnGroup(record.pgid);
      // The action started two minutes ago: long past its 60 s timeout.
      const seed = Journal.open(journalPath(), { now: () => Date.now() - 120_000 });
      seed.ensure(await documentEvent(id), 'r');
      seed.actionStarted(id, 'prepare:0');
      seed.actionProcess(id, 'prepare:0', record);
      const h = (each.harness = new Harness(agentConfig([rule({ actions: [prepAction] })])));
      h.start();
      await until('the settle path to decide', () => h.has(/cannot be proven/, id) || h.has(/the earlier copy/, id));
      await sleep(1000); // a few polls more, past the deadline
      assert.ok(daemon.alive(), 'the unrelated daemon lives on');
      assert.ok(!h.has(/stopping its process group/, id));
      assert.ok(h.has(/past the action's timeout .*not signalling it/, id));
      assert.deepEqual(h.names(id), [], 'not run again beside a group that may be its earlier copy');
      assert.deepEqual(h.approvals, []);
      // Once the group is gone, the action runs again.
      daemon.stop();
      await until('the approval', () => live(id)?.status === 'Started');
      assert.deepEqual(h.names(id), ['prepare:prep']);
    },
  );

  it(
    'after a restart: the wait on a group not proven ours ends with the event, and recovery runs',
    { skip: process.platform !== 'linux' && 'pid reuse is forced through Linux /proc' },
    async () => {
      requirePidReuse();
      const id = create();
      const record = await finishedActionGroup();
      const daemon = await daemonOnGroup(record.pgid);
      const seed = Journal.open(journalPath());
      seed.ensure(await documentEvent(id), 'r');
      seed.actionStarted(id, 'prepare:0');
      seed.actionProcess(id, 'prepare:0', record);
      const h = (each.harness = new Harness(agentConfig([rule({ actions: [prepAction], onCancel: [logAction('undo')] })])));
      h.start();
      await until('the wait', () => h.has(/cannot be proven/, id));
      emu.emulator.engine.cancel(id);
      await until('onCancel', () => h.names(id).includes('cancel:undo'));
      assert.ok(h.has('the event has ended: no longer waiting for that process group', id));
      assert.deepEqual(h.names(id), ['cancel:undo'], 'the preparation was not run again');
      assert.ok(daemon.alive());
    },
  );

  it(
    'after a restart: waits for a copy of an exec action still running, stops it at its timeout, then runs it again',
    { skip: process.platform !== 'linux' && 'a group is proven ours through Linux /proc' },
    async () => {
      const id = create();
      // The copy the killed agent left: still running, started 59.5 s ago with a 60 s timeout.
      const marker = newMarker(ACTION_MARKER_VARIABLE).value;
      const copy = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], {
        detached: true,
        stdio: 'ignore',
        env: { PATH: process.env.PATH, [ACTION_MARKER_VARIABLE]: marker },
      });
      const exited = new Promise<{ at: number; signal: string | null }>((r) =>
        copy.on('exit', (_c, signal) => r({ at: Date.now(), signal })),
      );
      const seed = Journal.open(journalPath(), { now: () => Date.now() - 59_500 });
      seed.ensure(await documentEvent(id), 'r');
      seed.actionStarted(id, 'prepare:0');
      seed.actionProcess(id, 'prepare:0', { pgid: copy.pid!, startTime: procStat(copy.pid!)?.startTime ?? null, marker });
      const h = (each.harness = new Harness(agentConfig([rule({ actions: [prepAction] })])));
      h.start();
      await until('the approval', () => live(id)?.status === 'Started');
      const { at, signal } = await exited;
      assert.equal(signal, 'SIGTERM');
      assert.deepEqual(h.names(id), ['prepare:prep']);
      assert.ok(h.calls[0]!.at >= at, 'run again only once the earlier copy was gone');
      assert.ok(h.has(/still running .* waiting for it to end/, id));
      assert.ok(h.has('the earlier copy ran past its timeout: stopping its process group', id));
      assert.equal(h.approvals.length, 1);
    },
  );

  it('after a restart: a failed action is not re-run, so no approval', async () => {
    const id = create();
    const seed = Journal.open(journalPath());
    seed.ensure(await documentEvent(id), 'r');
    seed.actionStarted(id, 'prepare:0');
    seed.actionFinished(id, 'prepare:0', { ok: false, attempts: 1, error: 'boom', durationMs: 1 });
    const h = (each.harness = new Harness(agentConfig([rule({ actions: [logAction('a'), logAction('b')] })])));
    h.start();
    await until('the refusal', () => h.has(/preparation did not succeed/, id));
    assert.deepEqual(h.names(id), []);
    assert.deepEqual(h.approvals, []);
  });

  it('after a restart: a journaled approval is not resent, unless it is over a minute old and still Scheduled', async () => {
    const recent = create();
    const stale = create();
    const started = Date.now();
    const seed = Journal.open(journalPath(), { now: () => started - 2 * RESEND_AFTER_MS });
    seed.ensure(await documentEvent(stale), 'r');
    seed.approved(stale, 'leader');
    const seed2 = Journal.open(journalPath(), { now: () => started - 5_000 });
    seed2.ensure(await documentEvent(recent), 'r');
    seed2.approved(recent, 'leader');
    const h = (each.harness = new Harness(agentConfig([rule()])));
    h.start();
    await until('the stale one resent', () => live(stale)?.status === 'Started');
    await until('the recent one considered', () => h.has(/already approved/, recent));
    await sleep(200);
    assert.deepEqual(
      h.approvals.map((a) => a.id),
      [stale],
    );
    assert.equal(live(recent)!.status, 'Scheduled');
  });

  it('after a restart: recovers events that ended while it was away, and finishes cut-short recoveries', async () => {
    const seed = Journal.open(journalPath());
    const gone = (id: string, over: Partial<ScheduledEvent> = {}) =>
      seed.ensure(event({ id, resources: ['vm0'], notBefore: new Date(Date.now() + 600_000), ...over }), 'r');
    gone('CANCELLED-1');
    gone('APPROVED-1');
    seed.approved('APPROVED-1', 'leader');
    gone('STARTED-1', { status: 'Started', notBefore: null });
    gone('HALF-1', { status: 'Started', notBefore: null });
    seed.ended('HALF-1', 'completed');
    seed.actionStarted('HALF-1', 'complete:0');
    seed.actionFinished('HALF-1', 'complete:0', ok());
    seed.actionStarted('HALF-1', 'complete:1');
    const h = (each.harness = new Harness(
      agentConfig([rule({ onComplete: [logAction('x'), logAction('y')], onCancel: [logAction('undo')] })]),
    ));
    h.start();
    await until('every recovery', () =>
      ['CANCELLED-1', 'APPROVED-1', 'STARTED-1', 'HALF-1'].every((id) => Journal.open(journalPath()).get(id)?.recoveredAt),
    );
    assert.deepEqual(h.names('CANCELLED-1'), ['cancel:undo']);
    assert.deepEqual(h.names('APPROVED-1'), ['complete:x', 'complete:y']);
    assert.deepEqual(h.names('STARTED-1'), ['complete:x', 'complete:y']);
    assert.deepEqual(h.names('HALF-1'), ['complete:y']);
    const j = Journal.open(journalPath());
    assert.equal(j.get('CANCELLED-1')!.outcome, 'cancelled');
    assert.equal(j.get('APPROVED-1')!.outcome, 'completed');
  });

  it('an event approved and gone between two polls counts as completed, not cancelled', async () => {
    const h = (each.harness = new Harness(
      agentConfig([rule({ onComplete: [logAction('back')], onCancel: [logAction('undo')] })], { pollIntervalSeconds: 0.5 }),
    ));
    h.start();
    const id = create();
    await until('the approval', () => live(id)?.status === 'Started');
    emu.emulator.engine.complete(id);
    await until('recovery', () => h.calls.some((c) => c.eventId === id && c.phase !== 'prepare'), 5_000);
    assert.deepEqual(h.names(id), ['complete:back']);
  });

  it('stops within the grace: a running action is aborted and stays `running` in the journal', async () => {
    const h = (each.harness = new Harness(agentConfig([rule({ actions: [logAction('forever')] })], { shutdownGraceSeconds: 0.2 })));
    h.behaviours.set('forever', async (ctx) => {
      await sleep(60_000, ctx.signal);
      return { ok: false, attempts: 1, error: 'aborted', durationMs: 0 };
    });
    h.start();
    const id = create();
    await until('the action', () => h.names(id).includes('prepare:forever'));
    const t0 = Date.now();
    await h.stop();
    each.harness = null;
    const took = Date.now() - t0;
    assert.ok(took >= 180 && took < 2_000, `stopped in ${took} ms`);
    assert.equal(Journal.open(journalPath()).get(id)!.actions['prepare:0']!.status, 'running');
    assert.deepEqual(h.approvals, []);
  });

  it('stops after a running action that finishes within the grace, recording it', async () => {
    const h = (each.harness = new Harness(
      agentConfig([rule({ actions: [logAction('short'), logAction('next')] })], { shutdownGraceSeconds: 5 }),
    ));
    h.behaviours.set('short', takes(200));
    h.start();
    const id = create();
    await until('the action', () => h.names(id).includes('prepare:short'));
    await h.stop();
    each.harness = null;
    const j = Journal.open(journalPath()).get(id)!;
    assert.equal(j.actions['prepare:0']!.status, 'succeeded');
    assert.equal(j.actions['prepare:1'], undefined, 'nothing new starts while stopping');
    assert.deepEqual(h.approvals, []);
  });

  it('--dry-run: decides everything, runs nothing, approves nothing, writes no journal', async () => {
    const h = (each.harness = new Harness(agentConfig([rule({ actions: [logAction('a')] })]), { dryRun: true }));
    h.start();
    const id = create();
    await until('the would-approve', () => h.has('dry run: would approve', id));
    assert.deepEqual(
      h.calls.map((c) => c.dryRun),
      [true],
    );
    assert.deepEqual(h.approvals, []);
    assert.equal(live(id)!.status, 'Scheduled');
    await h.stop();
    each.harness = null;
    assert.equal(existsSync(journalPath()), false);
  });

  it('keeps going while IMDS is unreachable, counting the errors, and is not ready', async () => {
    const client = new ScheduledEventsClient({ endpoint: 'http://127.0.0.1:1', retry: { maxAttempts: 1, maxDelayMs: 50 } });
    const h = (each.harness = new Harness(agentConfig([rule()], { readyWithinSeconds: 1 }), { client }));
    h.start();
    await until('a few failed reads', () =>
      h.logs.filter((l) => l.msg === 'reading IMDS failed; carrying on').length >= 3 ? true : undefined,
    );
    const text = await h.agent.metrics.text();
    assert.match(text, /forewarn_agent_imds_errors_total\{status="network"\} [3-9]/);
    assert.equal(readiness(client.health, 1).ready, false);
  });

  it('ignores events no rule matches, and counts events seen', async () => {
    const h = (each.harness = new Harness(
      agentConfig([rule({ match: { ...rule().match, eventType: ['Freeze'] }, actions: [logAction('a')] })]),
    ));
    h.start();
    const id = create();
    await until('the log', () => h.has('new event; no rule matches it: nothing to do', id));
    assert.deepEqual(h.calls, []);
    assert.deepEqual(h.approvals, []);
    assert.match(await h.agent.metrics.text(), /forewarn_agent_events_seen_total\{type="Reboot",status="Scheduled"\} 1/);
  });
});
