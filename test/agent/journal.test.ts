import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Journal } from '../../src/agent/journal.js';
import { nodeFileOps, type FileOps } from '../../src/shared/atomic-file.js';
import type { ScheduledEvent } from '../../src/client/index.js';
import { SCHEDULED_EVENT_FIELDS, scheduledEvent } from '../support/fixtures.js';
import { tempDir } from '../support/temp.js';

const root = tempDir('journal');
let n = 0;
const freshDir = () => {
  const dir = join(root, `d${n++}`);
  return { dir, path: join(dir, 'journal.json') };
};

/** File ops whose temp files cannot be created (ENOSPC) while `full` is set: a disk that fills and frees. */
function fillable(): { ops: FileOps; full: boolean } {
  const disk = {
    full: false,
    ops: {
      ...nodeFileOps,
      openSync: (p: string, flags: number, mode?: number) => {
        if (disk.full && p.includes('.tmp-')) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
        return nodeFileOps.openSync(p, flags, mode);
      },
    },
  };
  return disk;
}

const ev = (id: string, over: Partial<ScheduledEvent> = {}): ScheduledEvent => scheduledEvent({ id, ...over });

/** A clock that moves one second per reading. */
function ticking(start = Date.parse('2030-01-01T00:00:00Z')) {
  let t = start;
  return () => (t += 1000);
}

function capture() {
  const warnings: { obj: object; msg: string | undefined }[] = [];
  return { warnings, logger: { warn: (obj: object, msg?: string) => warnings.push({ obj, msg }) } };
}

describe('Journal', () => {
  it('starts empty when the file is missing, creating its directory', () => {
    const { dir, path } = freshDir();
    const journal = Journal.open(path);
    assert.ok(existsSync(dir));
    assert.deepEqual(journal.entries(), []);
    assert.equal(journal.corruptedTo, null);
    assert.equal(existsSync(path), false);
    journal.flush();
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { format: 'forewarn-agent-journal', version: 1, entries: [] });
  });

  it('writes every change, and a new Journal reads it back', () => {
    const { path } = freshDir();
    const journal = Journal.open(path, { now: ticking() });
    const created = journal.ensure(ev('AAA-1'), 'drain');
    assert.equal(created.firstSeenAt, '2030-01-01T00:00:01.000Z');
    journal.actionStarted('AAA-1', 'prepare:0');
    assert.equal(Journal.open(path).get('AAA-1')!.actions['prepare:0']!.status, 'running');
    journal.actionFinished('AAA-1', 'prepare:0', { ok: true, attempts: 2, error: null, durationMs: 12 });
    journal.actionStarted('AAA-1', 'prepare:1');
    journal.actionFinished('AAA-1', 'prepare:1', { ok: false, attempts: 3, error: 'HTTP 500', durationMs: 40 });
    journal.approved('AAA-1', 'leader');
    journal.ended('AAA-1', 'completed');
    journal.recovered('AAA-1');

    const expected = {
      eventId: 'AAA-1',
      firstSeenAt: '2030-01-01T00:00:01.000Z',
      rule: 'drain',
      event: { ...SCHEDULED_EVENT_FIELDS, durationInSeconds: -1 },
      actions: {
        'prepare:0': {
          status: 'succeeded',
          startedAt: '2030-01-01T00:00:02.000Z',
          endedAt: '2030-01-01T00:00:03.000Z',
          attempts: 2,
          error: null,
        },
        'prepare:1': {
          status: 'failed',
          startedAt: '2030-01-01T00:00:04.000Z',
          endedAt: '2030-01-01T00:00:05.000Z',
          attempts: 3,
          error: 'HTTP 500',
        },
      },
      approval: { sentAt: '2030-01-01T00:00:06.000Z', as: 'leader' },
      outcome: 'completed',
      recoveredAt: '2030-01-01T00:00:07.000Z',
    };
    assert.deepEqual(journal.get('AAA-1'), expected);
    const reopened = Journal.open(path);
    assert.deepEqual(reopened.entries(), [expected]);
    const file = JSON.parse(readFileSync(path, 'utf8'));
    assert.equal(file.format, 'forewarn-agent-journal');
    assert.equal(file.version, 1);
  });

  it('refreshes the event on ensure, keeping the first rule and firstSeenAt, and writes only on change', () => {
    const { path } = freshDir();
    const journal = Journal.open(path, { now: ticking() });
    journal.ensure(ev('E'), 'drain');
    const ino = statSync(path).ino;
    journal.ensure(ev('E'), 'other');
    assert.equal(statSync(path).ino, ino, 'an unchanged event is not rewritten');
    const started = journal.ensure(ev('E', { status: 'Started', notBefore: null }), 'other');
    assert.notEqual(statSync(path).ino, ino);
    assert.equal(started.rule, 'drain');
    assert.equal(started.firstSeenAt, '2030-01-01T00:00:01.000Z');
    assert.equal(started.event.status, 'Started');
    assert.equal(started.event.notBefore, null);
    assert.equal(Journal.open(path).get('E')!.event.status, 'Started');
  });

  it('compares event ids ignoring case', () => {
    const { path } = freshDir();
    const journal = Journal.open(path);
    journal.ensure(ev('ABC-def'), null);
    assert.equal(journal.get('abc-DEF')!.eventId, 'ABC-def');
    journal.actionStarted('abc-def', 'complete:0');
    journal.ensure(ev('ABC-DEF', { status: 'Started' }), null);
    assert.equal(journal.entries().length, 1);
    assert.ok(Journal.open(path).get('Abc-Def')!.actions['complete:0']);
  });

  it('hands out copies, so only its methods change it', () => {
    const { path } = freshDir();
    const journal = Journal.open(path);
    journal.ensure(ev('E'), null).outcome = 'cancelled';
    journal.get('E')!.rule = 'tampered';
    assert.equal(journal.get('E')!.outcome, null);
    assert.equal(journal.get('E')!.rule, null);
  });

  it('refuses changes to an event it has not seen', () => {
    const journal = Journal.open(freshDir().path);
    assert.throws(() => journal.approved('nope', 'leader'), /no entry for event nope/);
  });

  it('creates its directory 0700 and its file 0600, and removes temp files a killed run left', () => {
    const { dir, path } = freshDir();
    const first = Journal.open(path);
    first.ensure(ev('E1'), null);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    writeFileSync(`${path}.tmp-0123456789abcdef`, '{"half": ');
    writeFileSync(join(dir, 'other.tmp-1'), 'not ours');
    const again = Journal.open(path);
    assert.deepEqual(readdirSync(dir).sort(), ['journal.json', 'other.tmp-1']);
    assert.equal(again.get('E1')?.eventId, 'E1');
  });

  it('keeps a change that could not be written in memory, pending, until a flush takes it', () => {
    const { dir, path } = freshDir();
    const disk = fillable();
    const ops = disk.ops;
    const journal = Journal.open(path, { ops });
    journal.ensure(ev('E1'), 'r');
    assert.equal(journal.pending, false);
    disk.full = true;
    assert.throws(() => journal.actionStarted('E1', 'prepare:0'), { code: 'ENOSPC' });
    assert.equal(journal.pending, true);
    assert.equal(journal.get('E1')!.actions['prepare:0']!.status, 'running', 'the change stays in memory');
    assert.deepEqual(Journal.open(path).get('E1')!.actions, {}, 'the file keeps the last good write');
    assert.deepEqual(readdirSync(dir), ['journal.json']);
    assert.throws(() => journal.flush(), { code: 'ENOSPC' });
    disk.full = false;
    journal.flush();
    assert.equal(journal.pending, false);
    assert.equal(Journal.open(path).get('E1')!.actions['prepare:0']!.status, 'running');
  });

  it('batch(): the changes made in it are written once, at its end (nested batches at the outermost end)', () => {
    // The controller's group commit: a delivery's record and the runner's first sight of its events in one write.
    const { path } = freshDir();
    let renames = 0;
    const journal = Journal.open(path, { ops: { ...nodeFileOps, renameSync: (a, b) => (renames++, nodeFileOps.renameSync(a, b)) } });
    const result = journal.batch(() => {
      journal.ensure(ev('B1'), 'r');
      journal.batch(() => journal.ensure(ev('B2'), 'r'));
      journal.actionStarted('B1', 'prepare:0');
      assert.equal(renames, 0, 'nothing written inside');
      assert.equal(Journal.open(path).get('B1'), undefined);
      return 'done';
    });
    assert.equal(result, 'done');
    assert.equal(renames, 1);
    const onDisk = Journal.open(path);
    assert.equal(onDisk.get('B1')!.actions['prepare:0']!.status, 'running');
    assert.equal(onDisk.get('B2')!.rule, 'r');
    journal.batch(() => undefined);
    assert.equal(renames, 1, 'a batch with no change writes nothing');
  });

  it('batch(): a write that fails at its end throws, the changes kept in memory and pending; a throw inside still writes what changed', () => {
    const { path } = freshDir();
    const disk = fillable();
    const ops = disk.ops;
    const journal = Journal.open(path, { ops });
    disk.full = true;
    assert.throws(() => journal.batch(() => journal.ensure(ev('F1'), 'r')), { code: 'ENOSPC' });
    assert.equal(journal.pending, true);
    assert.equal(journal.get('F1')?.rule, 'r');
    disk.full = false;
    journal.flush();
    assert.equal(Journal.open(path).get('F1')?.rule, 'r');
    assert.throws(
      () =>
        journal.batch(() => {
          journal.ensure(ev('F2'), 'r');
          throw new Error('a bug');
        }),
      /a bug/,
    );
    assert.equal(Journal.open(path).get('F2')?.rule, 'r', 'what changed before the throw is written');
  });

  it('records the process group of a running action, and an action that ran unjournaled', () => {
    const { path } = freshDir();
    const journal = Journal.open(path, { now: ticking() });
    journal.ensure(ev('E1'), 'r');
    assert.throws(() => journal.actionProcess('E1', 'prepare:0', { pgid: 42, startTime: '7' }), /no action prepare:0/);
    journal.actionStarted('E1', 'prepare:0');
    journal.actionProcess('E1', 'prepare:0', { pgid: 4242, startTime: '123456' });
    assert.deepEqual(Journal.open(path).get('E1')!.actions['prepare:0']!.process, {
      pgid: 4242,
      startTime: '123456',
      startedAt: '2030-01-01T00:00:03.000Z',
    });
    const marker = '0b6a4d5e-8f3c-4d2a-9e1b-7c6d5e4f3a2b';
    journal.actionProcess('E1', 'prepare:0', { pgid: 4243, startTime: '123457', marker });
    assert.equal(Journal.open(path).get('E1')!.actions['prepare:0']!.process!.marker, marker);
    journal.actionFinished('E1', 'prepare:0', { ok: true, attempts: 1, error: null, durationMs: 1 }, { unjournaled: true });
    const done = Journal.open(path).get('E1')!.actions['prepare:0']!;
    assert.equal(done.process, undefined, 'a finished action has no live group to look for');
    assert.equal(done.unjournaled, true);
  });

  it('writes atomically, leaving no temporary file', () => {
    const { dir, path } = freshDir();
    const journal = Journal.open(path);
    for (let i = 0; i < 5; i++) {
      journal.ensure(ev(`E${i}`), null);
      journal.ended(`E${i}`, 'completed');
    }
    assert.deepEqual(readdirSync(dir), ['journal.json']);
    assert.equal(Journal.open(path).entries().length, 5);
  });

  for (const [label, text] of [
    ['bad JSON', '{"format": "forewarn-agent-journal", "version": 1, "entries": ['],
    ['an empty file', ''],
    ['another format', '{"format": "something-else", "version": 1, "entries": []}'],
    ['another version', '{"format": "forewarn-agent-journal", "version": 2, "entries": []}'],
    ['a bad entry', '{"format": "forewarn-agent-journal", "version": 1, "entries": [{"eventId": "E"}]}'],
  ] as const) {
    it(`moves ${label} aside with a warning and starts empty`, () => {
      const { dir, path } = freshDir();
      Journal.open(path).flush();
      writeFileSync(path, text);
      const { warnings, logger } = capture();
      const journal = Journal.open(path, { logger, now: () => Date.parse('2030-01-02T03:04:05.678Z') });
      assert.deepEqual(journal.entries(), []);
      assert.equal(journal.corruptedTo, `${path}.corrupt-2030-01-02T03-04-05-678Z`);
      assert.equal(readFileSync(journal.corruptedTo, 'utf8'), text);
      assert.equal(existsSync(path), false);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!.msg!, /moved it aside/);
      assert.equal((warnings[0]!.obj as { movedTo: string }).movedTo, journal.corruptedTo);
      // It goes on: the next change writes a good file.
      journal.ensure(ev('E'), null);
      assert.equal(Journal.open(path).entries().length, 1);
      assert.deepEqual(readdirSync(dir).sort(), ['journal.json', 'journal.json.corrupt-2030-01-02T03-04-05-678Z']);
    });
  }

  for (const pgid of [1, 0, -1]) {
    it(`refuses a journaled process group id of ${pgid} at load, naming its place`, () => {
      const { path } = freshDir();
      const journal = Journal.open(path, { now: ticking() });
      journal.ensure(ev('E1'), 'r');
      journal.actionStarted('E1', 'prepare:0');
      journal.actionProcess('E1', 'prepare:0', { pgid: 4242, startTime: '1' });
      writeFileSync(path, readFileSync(path, 'utf8').replace('"pgid": 4242', `"pgid": ${pgid}`));
      const { warnings, logger } = capture();
      const reopened = Journal.open(path, { logger });
      assert.deepEqual(reopened.entries(), [], 'the record is never acted on');
      assert.notEqual(reopened.corruptedTo, null);
      const problem = (warnings[0]!.obj as { problem: string }).problem;
      assert.match(problem, /^entries\.0\.actions\.prepare:0\.process\.pgid: /);
      assert.match(problem, /2 or more/);
    });
  }

  it('loads a process record written before markers (it can then never be proven ours), and refuses a marker that is not a UUID', () => {
    const { path } = freshDir();
    const journal = Journal.open(path, { now: ticking() });
    journal.ensure(ev('E1'), 'r');
    journal.actionStarted('E1', 'prepare:0');
    journal.actionProcess('E1', 'prepare:0', { pgid: 4242, startTime: '1' });
    assert.equal(JSON.parse(readFileSync(path, 'utf8')).entries[0].actions['prepare:0'].process.marker, undefined);
    const old = Journal.open(path).get('E1')!.actions['prepare:0']!.process!;
    assert.deepEqual({ pgid: old.pgid, marker: old.marker }, { pgid: 4242, marker: undefined });
    writeFileSync(path, readFileSync(path, 'utf8').replace('"pgid": 4242,', '"pgid": 4242, "marker": "",'));
    const { warnings, logger } = capture();
    assert.notEqual(Journal.open(path, { logger }).corruptedTo, null);
    assert.match((warnings[0]!.obj as { problem: string }).problem, /^entries\.0\.actions\.prepare:0\.process\.marker: /);
  });

  it('does not overwrite an earlier corrupt copy', () => {
    const { path } = freshDir();
    const now = () => 0;
    Journal.open(path).flush();
    writeFileSync(path, 'one');
    const first = Journal.open(path, { now }).corruptedTo;
    writeFileSync(path, 'two');
    const second = Journal.open(path, { now }).corruptedTo;
    assert.notEqual(first, second);
    assert.equal(readFileSync(first!, 'utf8'), 'one');
    assert.equal(readFileSync(second!, 'utf8'), 'two');
  });

  it('prunes the oldest recovered entries beyond the limit, keeping the rest', () => {
    const { path } = freshDir();
    const journal = Journal.open(path, { now: ticking() });
    for (const id of ['R1', 'R2', 'R3', 'R4', 'open', 'ended']) journal.ensure(ev(id), null);
    journal.ended('ended', 'cancelled'); // ended but not yet recovered: never pruned
    for (const id of ['R3', 'R1', 'R4', 'R2']) {
      journal.ended(id, 'completed');
      journal.recovered(id);
    }
    assert.equal(journal.prune(2), 2);
    const left = (j: Journal) =>
      j
        .entries()
        .map((e) => e.eventId)
        .sort();
    assert.deepEqual(left(journal), ['R2', 'R4', 'ended', 'open']);
    assert.deepEqual(left(Journal.open(path)), ['R2', 'R4', 'ended', 'open']);
    assert.equal(journal.prune(2), 0);
    assert.equal(journal.prune(0), 2);
    assert.deepEqual(left(journal), ['ended', 'open']);
    assert.equal(journal.prune(), 0);
  });
});
