// The state file as a log: a snapshot line, then change records; torn tails, bad lines, version 1 files,
// compaction, stale temp files, and names that are Object.prototype's keys.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine, type EngineSnapshot } from '../../../src/emulator/engine/engine.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { StateFileError, StateFileWriter, loadStateFile, readStateFile } from '../../../src/emulator/state/file.js';
import { tempDir } from '../../support/temp.js';

const root = tempDir('state-log');
const freshPath = () => join(mkdtempSync(join(root, 'case-')), 'state.json');
const T0 = Date.UTC(2030, 0, 1);
const asJson = (s: EngineSnapshot) => JSON.parse(JSON.stringify(s)) as EngineSnapshot;
const lines = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** An engine saved to `path` with three saved batches after its first snapshot. */
function savedEngine(path: string) {
  const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }, { name: 'b' }] });
  const writer = new StateFileWriter(path, engine);
  writer.start();
  const freeze = engine.createOperation({ type: 'freeze', vms: ['a'] }).events[0]!;
  writer.flush();
  engine.createOperation({ type: 'restart', vms: ['b'] });
  writer.flush();
  engine.cancel(freeze);
  writer.flush();
  return { engine, writer };
}

describe('state file: log format', () => {
  it('is a version 2 snapshot line, then one numbered change record per saved batch', () => {
    const path = freshPath();
    const { engine, writer } = savedEngine(path);
    writer.close();
    const [head, ...records] = lines(path).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(head!.format, 'forewarn-state');
    assert.equal(head!.version, 2);
    assert.deepEqual(
      records.map((r) => r.seq),
      [1, 2, 3],
    );
    // Only what changed: the cancel's record holds the ended event, not the other live one.
    const cancel = records[2] as { events: { set: unknown[]; del: string[] }; ended: { set: { id: string }[] } };
    assert.equal(cancel.events.set.length, 0);
    assert.equal(cancel.events.del.length, 1);
    assert.equal(cancel.ended.set.length, 1);
    const read = readStateFile(path)!;
    assert.equal(read.records, 3);
    assert.deepEqual(read.warnings, []);
    assert.deepEqual(read.snapshot, asJson(engine.snapshot()));
    assert.equal(statSync(path).mode & 0o777, 0o600);
  });

  it('drops a torn last line (no newline) with a warning naming its place; the next start rewrites the file without it', async () => {
    const path = freshPath();
    const { engine, writer } = savedEngine(path);
    writer.close();
    const good = readFileSync(path, 'utf8');
    appendFileSync(path, '{"seq":4,"savedAt":1893456000000,"events":{"set":[{"id":"X');
    const read = readStateFile(path)!;
    assert.deepEqual(read.snapshot, asJson(engine.snapshot()));
    assert.equal(read.warnings.length, 1);
    assert.match(read.warnings[0]!, new RegExp(`^${escape(path)}:5:1: dropped an incomplete last line`));

    const emulator = await Emulator.create({ clock: 'manual', statePath: path });
    await emulator.close();
    assert.equal(lines(path).length, 1, 'compacted at start: one snapshot line, no tail');
    assert.deepEqual({ ...loadStateFile(path)!, savedAt: 0 }, { ...readStateFile(path)!.snapshot, savedAt: 0 });
    assert.ok(readFileSync(path, 'utf8').length > 0 && good.length > 0);
  });

  it('drops a last line that ends in a newline but is not JSON (a power loss can leave garbage), with a warning', () => {
    const path = freshPath();
    const { engine, writer } = savedEngine(path);
    writer.close();
    appendFileSync(path, '\0\0\0\0{"seq":4\n');
    const read = readStateFile(path)!;
    assert.deepEqual(read.snapshot, asJson(engine.snapshot()));
    assert.match(read.warnings[0]!, new RegExp(`^${escape(path)}:5:\\d+: dropped an unreadable last line`));
  });

  it('refuses a bad line that is not the last, naming file:line:col', () => {
    const path = freshPath();
    savedEngine(path).writer.close();
    const all = lines(path);
    // Position 20 is a digit of savedAt: the parser stops right there.
    all[2] = all[2]!.slice(0, 20) + '@' + all[2]!.slice(21);
    writeFileSync(path, all.join('\n') + '\n');
    assert.throws(
      () => loadStateFile(path),
      (err: unknown) => {
        assert.ok(err instanceof StateFileError);
        assert.match(err.message, new RegExp(`^${escape(path)}:3:21: a change record is not valid JSON`));
        return true;
      },
    );
  });

  it('refuses a change record with a bad field, naming file:line:col and the field path', () => {
    const path = freshPath();
    savedEngine(path).writer.close();
    const all = lines(path);
    const record = JSON.parse(all[1]!) as { events: { set: { status: string }[] } };
    record.events.set[0]!.status = 'Finished';
    all[1] = JSON.stringify(record);
    writeFileSync(path, all.join('\n') + '\n');
    const col = all[1].indexOf('"status":') + 1;
    assert.throws(
      () => loadStateFile(path),
      new RegExp(`: ${escape(path)}:2:${col}: invalid change record: events\\.set\\[0\\]\\.status: `),
    );
  });

  it('refuses a missing or repeated record by its seq', () => {
    const path = freshPath();
    savedEngine(path).writer.close();
    const all = lines(path);
    all.splice(2, 1);
    writeFileSync(path, all.join('\n') + '\n');
    assert.throws(() => loadStateFile(path), new RegExp(`: ${escape(path)}:3:2: invalid change record: seq: expected 2, got 3`));
  });

  it('refuses a version 1 file with something after its object', () => {
    const path = freshPath();
    const snapshot = { ...asJson(new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }] }).snapshot()), version: 1 };
    writeFileSync(path, `${JSON.stringify(snapshot)}\n{"seq":1,"savedAt":0}\n`);
    assert.throws(() => loadStateFile(path), new RegExp(`: ${escape(path)}:2:1: a version 1 state file holds one JSON object`));
  });

  it('loads a version 1 file (one indented object) and rewrites it as version 2 at start, keeping everything', async () => {
    const path = freshPath();
    const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }, { name: 'b' }] });
    engine.createOperation({ type: 'freeze', vms: ['a'] });
    const v1 = { ...asJson(engine.snapshot()), version: 1 };
    writeFileSync(path, `${JSON.stringify(v1, null, 2)}\n`, { mode: 0o644 });
    const read = readStateFile(path)!;
    assert.equal(read.version, 1);
    assert.deepEqual(read.snapshot, asJson(engine.snapshot()));

    const emulator = await Emulator.create({ clock: new ManualClock(T0), statePath: path });
    await emulator.close();
    const [head] = lines(path).map((l) => JSON.parse(l) as { version: number });
    assert.equal(head!.version, 2);
    assert.equal(readStateFile(path)!.version, 2);
    assert.deepEqual(readStateFile(path)!.snapshot, asJson(engine.snapshot()));
    assert.equal(statSync(path).mode & 0o777, 0o600);
  });

  it('compacts the log into one snapshot line once it outgrows the snapshot and the floor, and the result reads the same', () => {
    const path = freshPath();
    const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }] });
    const writer = new StateFileWriter(path, engine, (err) => assert.fail(err), { compactFloorBytes: 2048 });
    writer.start();
    let maxBytes = 0;
    for (let i = 0; i < 60; i++) {
      engine.cancel(engine.createOperation({ type: 'freeze', vms: ['a'] }).events[0]!);
      writer.flush();
      maxBytes = Math.max(maxBytes, writer.bytes);
      assert.deepEqual(loadStateFile(path), asJson(engine.snapshot()));
    }
    assert.ok(writer.compactions > 2, `${writer.compactions} compactions`);
    // The log never grows past twice the larger of the snapshot and the floor, plus one record.
    const snapshotBytes = JSON.stringify(engine.snapshot()).length;
    assert.ok(maxBytes < 2 * Math.max(snapshotBytes, 2048) + 4096, `${maxBytes} bytes at most`);
    writer.close();
    assert.deepEqual(readdirSync(join(path, '..')), ['state.json']);
  });

  it('removes temp files left by killed runs at start, and only those', async () => {
    const path = freshPath();
    const dir = join(path, '..');
    writeFileSync(join(dir, 'state.json.tmp-12345'), 'half a snapshot');
    writeFileSync(join(dir, 'state.json.tmp-0123456789abcdef'), '{');
    writeFileSync(join(dir, 'other.json.tmp-1'), 'not ours');
    const emulator = await Emulator.create({ clock: 'manual', statePath: path });
    await emulator.close();
    assert.deepEqual(readdirSync(dir).sort(), ['other.json.tmp-1', 'state.json']);
  });
});

describe('state file: names that are Object.prototype keys', () => {
  const NAMES = ['__proto__', 'constructor', 'toString'];

  it('keeps incarnations and activation records of VMs named __proto__, constructor and toString', () => {
    const path = freshPath();
    const engine = new Engine({ clock: new ManualClock(T0), fleet: NAMES.map((name) => ({ name })) });
    const snapshot = asJson(engine.snapshot());
    snapshot.incarnations = Object.fromEntries(NAMES.map((n, i) => [n, 5 + i]));
    snapshot.activation = Object.fromEntries(NAMES.map((n, i) => [n, { enabledAt: T0 + i, enablingAt: null, lastRequestAt: T0 + i }]));
    writeFileSync(path, JSON.stringify(snapshot));
    const loaded = loadStateFile(path)!;
    assert.deepEqual(
      Object.entries(loaded.incarnations),
      NAMES.map((n, i) => [n, 5 + i]),
    );
    assert.deepEqual(Object.keys(loaded.activation!), NAMES);
    assert.equal(Object.getPrototypeOf(loaded.incarnations), Object.prototype, 'no prototype was replaced');
  });

  it('refuses a bad incarnation under __proto__ instead of ignoring it', () => {
    const path = freshPath();
    const snapshot = asJson(new Engine({ clock: new ManualClock(T0), fleet: [{ name: '__proto__' }] }).snapshot());
    writeFileSync(path, JSON.stringify(snapshot).replace('"incarnations":{"__proto__":1}', '"incarnations":{"__proto__":"five"}'));
    assert.throws(() => loadStateFile(path), /invalid state file: incarnations\.__proto__: /);
  });

  it('a restart keeps the incarnation of VM __proto__, and its next change goes one above', async () => {
    const path = freshPath();
    const clock = new ManualClock(T0);
    const run1 = await Emulator.create({ clock, fleet: [{ name: '__proto__' }, { name: 'constructor' }], statePath: path });
    for (let i = 0; i < 2; i++) run1.engine.cancel(run1.engine.createOperation({ type: 'freeze', vms: ['__proto__'] }).events[0]!);
    const before = run1.engine.documentFor('__proto__').incarnation;
    assert.equal(before, 5);
    await run1.close();

    const run2 = await Emulator.create({ clock, statePath: path });
    assert.equal(run2.engine.documentFor('__proto__').incarnation, 5);
    run2.engine.createOperation({ type: 'freeze', vms: ['__proto__'] });
    assert.equal(run2.engine.documentFor('__proto__').incarnation, 6);
    await run2.close();
    const run3 = await Emulator.create({ clock, statePath: path });
    assert.equal(run3.engine.documentFor('__proto__').incarnation, 6);
    await run3.close();
  });
});
