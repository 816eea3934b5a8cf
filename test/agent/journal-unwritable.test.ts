// The agent when its journal cannot be written: events wait at their step, /readyz says why, and
// nothing that relies on a record (an approval, an action's start) happens before the record.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Agent } from '../../src/agent/agent.js';
import { Journal } from '../../src/agent/journal.js';
import { AgentMetrics } from '../../src/agent/metrics.js';
import type { AgentConfig, Rule } from '../../src/agent/types.js';
import { nodeFileOps, type FileOps } from '../../src/shared/atomic-file.js';
import {
  AgentHarness,
  agentConfig,
  inProcessEmulator,
  perTest,
  type PerTest,
  logAction,
  ok,
  rule,
  testClient,
  until as pollUntil,
  watchApprovals,
} from './support.js';

const emu = inProcessEmulator();
/** Each test's folder and harness. */
let each: PerTest<Harness>;

/** File calls that fail as a full disk does while `full` is set: creating the temp file gets ENOSPC. */
class Disk {
  full = false;
  readonly ops: FileOps = {
    ...nodeFileOps,
    openSync: (path, flags, mode) => {
      if (this.full && path.includes('.tmp-')) {
        throw Object.assign(new Error(`ENOSPC: no space left on device, open '${path}'`), { code: 'ENOSPC' });
      }
      return nodeFileOps.openSync(path, flags, mode);
    },
  };
}

class Harness extends AgentHarness {
  readonly calls: { name: string; eventId: string }[] = [];
  readonly approvals: string[] = [];
  readonly agent: Agent;
  readonly disk = new Disk();
  readonly path = join(each.dir, 'journal.json');

  constructor(rules: Rule[], over: Partial<AgentConfig> = {}) {
    super();
    const client = testClient(emu.imdsUrl);
    watchApprovals(client, (ids) => this.approvals.push(ids));
    const config = agentConfig(emu.imdsUrl, this.path, rules, {
      journalUnwritable: { policy: 'hold', prepareWithinSeconds: 120 },
      listen: '127.0.0.1:0',
      ...over,
    });
    this.agent = new Agent({
      config,
      logger: this.logger(),
      client,
      metrics: new AgentMetrics({ defaultMetrics: false }),
      journal: Journal.open(this.path, { ops: this.disk.ops }),
      runAction: async (action, ctx) => {
        this.calls.push({ name: action.name, eventId: ctx.event.id });
        return (await this.behaviours.get(action.name)?.(ctx)) ?? ok();
      },
    });
  }

  get url(): string {
    return String(this.logs.find((l) => l.msg === 'serving /metrics, /healthz and /readyz')?.url ?? '');
  }

  async readyz(): Promise<{ status: number; reason: string }> {
    const res = await fetch(`${this.url}/readyz`);
    return { status: res.status, reason: ((await res.json()) as { reason: string }).reason };
  }

  async metric(name: string): Promise<number> {
    const line = (await this.agent.metrics.text()).split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? Number.NaN : Number(line.split(' ').pop());
  }

  onDisk(id: string) {
    return Journal.open(this.path).get(id);
  }
}

const HELD = 'the journal cannot be written: this event is held back at this step until it can';

/** A rule for every event: drain, then approve. */
const drainRule = (): Rule => rule({ actions: [logAction('drain')] });

/** This file's waits: up to 8 s, looking every 20 ms. */
const until = <T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>): Promise<T> =>
  pollUntil(what, probe, 8_000, 20);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function create(): string {
  return emu.emulator.engine.createOperation({ type: 'platform-reboot', vms: ['vm0'] }).events[0]!;
}

function live(id: string) {
  return emu.emulator.engine.events().find((e) => e.id === id);
}

describe('agent: a journal that cannot be written', () => {
  each = perTest(emu, 'agent-journal');

  it('holds a new event at first sight: nothing runs, no approval, not ready, counted, logged once; then carries on once', async () => {
    const h = (each.harness = new Harness([drainRule()]));
    h.disk.full = true;
    h.start();
    await until('the status server', () => h.url !== '');
    const id = create();
    await until('the event held', () => h.count(HELD, id) > 0);
    // Several retries go by: the failures are counted, the held event is logged once.
    await until('retries', async () => (await h.metric('forewarn_agent_journal_write_failures_total')) >= 4);
    const other = create();
    await until('a later event still seen', () => h.count('new event', other) > 0);
    assert.equal(h.calls.length, 0);
    assert.equal(h.approvals.length, 0);
    assert.equal(h.count(HELD, id), 1, 'one error log per held event, not one per retry');
    assert.equal(await h.metric('forewarn_agent_journal_held_events'), 2);
    const ready = await h.readyz();
    assert.equal(ready.status, 503);
    assert.match(ready.reason, /journal .*journal\.json cannot be written: ENOSPC: no space left on device/);
    assert.match(ready.reason, new RegExp(`${id} \\(first sight\\)`));
    assert.equal(live(id)!.status, 'Scheduled');
    assert.equal(h.onDisk(id), undefined);

    h.disk.full = false;
    await until('both approved', () => live(id)?.status === 'Started' && live(other)?.status === 'Started');
    assert.deepEqual(h.calls.map((c) => c.eventId).sort(), [id, other].sort(), 'each preparation ran once');
    assert.deepEqual([...h.approvals].sort(), [id, other].sort(), 'each approval was sent once');
    assert.equal((await h.readyz()).status, 200);
    assert.equal(await h.metric('forewarn_agent_journal_held_events'), 0);
    const entry = h.onDisk(id)!;
    assert.equal(entry.actions['prepare:0']!.status, 'succeeded');
    assert.notEqual(entry.approval, null);
    assert.equal(h.agent.notReady(), null);
  });

  it('holds the approval until the end of the action is on disk', async () => {
    const h = (each.harness = new Harness([drainRule()]));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    h.behaviours.set('drain', async () => {
      h.disk.full = true; // the disk fills while the action runs
      await released;
      return ok(1);
    });
    h.start();
    const id = create();
    await until('the action', () => h.calls.length > 0);
    release();
    await until('the event held', () => h.count(HELD, id) > 0);
    const held = h.logs.find((l) => l.msg === HELD && l.eventId === id)!;
    assert.equal(held.step, 'prepare:0 end');
    await pause(300);
    assert.equal(h.approvals.length, 0);
    assert.equal(h.onDisk(id)!.actions['prepare:0']!.status, 'running', 'on disk the action still looks unfinished');
    h.disk.full = false;
    await until('the approval', () => live(id)?.status === 'Started');
    assert.deepEqual(h.approvals, [id]);
    assert.equal(h.calls.length, 1);
    assert.equal(h.onDisk(id)!.actions['prepare:0']!.status, 'succeeded');
  });

  it('prepare-before-notbefore: runs the preparation unjournaled once NotBefore is near, never approves, records it later', async () => {
    // NotBefore is ~15 minutes away; a window of a day puts it "near" at once.
    const h = (each.harness = new Harness([drainRule()], {
      journalUnwritable: { policy: 'prepare-before-notbefore', prepareWithinSeconds: 86_400 },
    }));
    h.disk.full = true;
    h.start();
    const id = create();
    await until('the unjournaled preparation', () => h.calls.length > 0);
    await until('the decision not to approve', () => h.count(/prepared without a journal record: not approving/, id) > 0);
    assert.equal(h.count('action started unjournaled: the journal cannot record it', id), 1);
    assert.equal((await h.readyz()).status, 503);
    assert.equal(h.onDisk(id), undefined);
    h.disk.full = false;
    await until('the record', () => h.count('the journal now records the preparation that ran unjournaled', id) > 0);
    const entry = h.onDisk(id)!;
    assert.equal(entry.actions['prepare:0']!.status, 'succeeded');
    assert.equal(entry.actions['prepare:0']!.unjournaled, true);
    assert.equal(entry.approval, null);
    await pause(300);
    assert.equal(h.approvals.length, 0);
    assert.equal(live(id)!.status, 'Scheduled', 'the event starts at NotBefore');
    assert.equal(h.calls.length, 1);
  });

  it('hold: waits however near NotBefore is', async () => {
    const h = (each.harness = new Harness([drainRule()], { journalUnwritable: { policy: 'hold', prepareWithinSeconds: 86_400 } }));
    h.disk.full = true;
    h.start();
    const id = create();
    await until('the event held', () => h.count(HELD, id) > 0);
    await pause(1_300); // past a re-check of the deadline
    assert.equal(h.calls.length, 0);
    assert.equal(h.approvals.length, 0);
  });
});
