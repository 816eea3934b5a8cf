import assert from 'node:assert/strict';
import { constants, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { nodeFileOps, type FileOps } from '../../../src/shared/atomic-file.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { StateFileError, StateFileWriter, loadStateFile, writeStateFileSync } from '../../../src/emulator/state/file.js';
import { tempDir } from '../../support/temp.js';

const root = tempDir('state');
const freshDir = () => mkdtempSync(join(root, 'case-'));

const T0 = Date.parse('2030-01-01T00:00:00Z');
const MIN = 60_000;
const immediate = () => new Promise((resolve) => setImmediate(resolve));

describe('state file writing', () => {
  it('writes atomically and leaves no temporary file', () => {
    const dir = freshDir();
    const path = join(dir, 'state.json');
    const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }] });
    writeStateFileSync(path, engine.snapshot());
    engine.createOperation({ type: 'freeze', vms: ['a'] });
    writeStateFileSync(path, engine.snapshot());
    assert.deepEqual(readdirSync(dir), ['state.json']);
    const loaded = loadStateFile(path)!;
    assert.equal(loaded.events.length, 1);
    assert.deepEqual(loaded, JSON.parse(JSON.stringify(engine.snapshot())));
  });

  it('coalesces a burst of mutations into one write that holds the last state', async () => {
    const dir = freshDir();
    const path = join(dir, 'state.json');
    const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] });
    const writer = new StateFileWriter(path, engine);
    writer.start();
    assert.equal(writer.writes, 1);
    for (const vm of ['a', 'b', 'c']) engine.createOperation({ type: 'freeze', vms: [vm] });
    assert.equal(writer.writes, 1);
    await immediate();
    assert.equal(writer.writes, 2);
    assert.equal(loadStateFile(path)!.events.length, 3);
    // A mutation right before close is not lost.
    engine.cancel(engine.events()[0]!.id);
    writer.close();
    assert.equal(loadStateFile(path)!.events.length, 2);
    assert.deepEqual(readdirSync(dir), ['state.json']);
  });

  it('treats a missing file as a fresh start', () => {
    assert.equal(loadStateFile(join(freshDir(), 'none.json')), undefined);
  });
});

describe('state file validation', () => {
  const cases: [string, string, RegExp][] = [
    ['not JSON', '{"format": "forewarn-state", "version": 1,', /is not valid JSON/],
    ['empty', '', /is empty/],
    ['another format', '{"hello": 1}', /not a forewarn state file/],
    ['another version', '{"format": "forewarn-state", "version": 3}', /version 3 is not supported; this forewarn reads versions 1 and 2/],
  ];
  for (const [name, text, expected] of cases) {
    it(`rejects a file that is ${name}, naming it, and leaves it untouched`, async () => {
      const dir = freshDir();
      const path = join(dir, 'state.json');
      writeFileSync(path, text);
      await assert.rejects(Emulator.create({ clock: 'manual', statePath: path }), (err: unknown) => {
        assert.ok(err instanceof StateFileError);
        assert.ok(err.message.startsWith(`${path}: `), err.message);
        assert.match(err.message, expected);
        return true;
      });
      assert.equal(readFileSync(path, 'utf8'), text);
      assert.deepEqual(readdirSync(dir), ['state.json']);
    });
  }

  it('names the field path of an invalid field', async () => {
    const path = join(freshDir(), 'state.json');
    const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }] });
    engine.createOperation({ type: 'freeze', vms: ['a'] });
    const snapshot = JSON.parse(JSON.stringify(engine.snapshot()));
    snapshot.events[0].status = 'Completed';
    const text = JSON.stringify(snapshot);
    writeFileSync(path, text);
    await assert.rejects(Emulator.create({ clock: 'manual', statePath: path }), (err: unknown) => {
      assert.ok(err instanceof StateFileError);
      assert.match(
        err.message,
        new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1:\\d+: invalid state file: events\\[0\\]\\.status: `),
      );
      return true;
    });
    assert.equal(readFileSync(path, 'utf8'), text);
  });

  it('refuses a state the engine could not restore, naming the field', async () => {
    const path = join(freshDir(), 'state.json');
    const snapshot = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }] }).snapshot();
    snapshot.vms.push({ ...snapshot.vms[0]! });
    writeFileSync(path, JSON.stringify(snapshot));
    await assert.rejects(
      Emulator.create({ clock: 'manual', statePath: path }),
      /invalid state file: vms\[1\]\.name: VM 'a': a VM named 'a' already exists/,
    );
  });

  it('creates a missing state directory, private (0700), and the file 0600', async () => {
    const path = join(freshDir(), 'new', 'deeper', 'state.json');
    const emulator = await Emulator.create({ clock: 'manual', statePath: path });
    await emulator.close();
    assert.equal(statSync(dirname(path)).mode & 0o777, 0o700);
    assert.equal(statSync(path).mode & 0o777, 0o600);
  });

  it('fails at start when the state file cannot be written', async () => {
    const dir = freshDir();
    const path = join(dir, 'state.json');
    // Root writes anywhere, so the refusal is injected: every open for writing fails as on a read-only mount.
    const readOnly: FileOps = {
      ...nodeFileOps,
      openSync: (p, flags, mode) => {
        if (flags & constants.O_WRONLY) throw Object.assign(new Error(`EROFS: read-only file system, open '${p}'`), { code: 'EROFS' });
        return nodeFileOps.openSync(p, flags, mode);
      },
    };
    await assert.rejects(Emulator.create({ clock: 'manual', statePath: path, stateFileOps: readOnly }), (err: unknown) => {
      assert.ok(err instanceof StateFileError);
      assert.match(err.message, /cannot write the state file: EROFS/);
      return true;
    });
    assert.deepEqual(readdirSync(dir), []);
  });
});

describe('restarting from a state file', () => {
  it('carries on: same EventIds and statuses, incarnations only go up, due events are applied', async () => {
    const dir = freshDir();
    const statePath = join(dir, 'state.json');
    const clock = new ManualClock(T0);
    const fleet = [{ name: 'a' }, { name: 'b' }];

    // Run 1: a Scheduled Freeze on a, and a Reboot on b that b approves (Started).
    const run1 = await Emulator.create({ clock, fleet, statePath });
    const freeze = run1.engine.createOperation({ type: 'freeze', vms: ['a'] }).events[0]!;
    const reboot = run1.engine.createOperation({ type: 'restart', vms: ['b'], durationInSeconds: 3600 }).events[0]!;
    run1.engine.approve('b', [reboot]);
    const before = { a: run1.engine.documentFor('a'), b: run1.engine.documentFor('b') };
    assert.equal(before.b.events[0]!.status, 'Started');
    await run1.close();
    assert.deepEqual(readdirSync(dir), ['state.json']);

    // Run 2: nothing fell due. The state file wins over the fleet given alongside it.
    const run2 = await Emulator.create({ clock, fleet: [{ name: 'other' }], statePath });
    assert.equal(run2.restoredFrom, statePath);
    assert.deepEqual([...run2.engine.fleet.vms.keys()], ['a', 'b']);
    const after2 = { a: run2.engine.documentFor('a'), b: run2.engine.documentFor('b') };
    assert.deepEqual(after2, before);
    // The next change bumps above the saved incarnation.
    run2.engine.cancel(freeze);
    const cancelled = run2.engine.documentFor('a');
    assert.ok(cancelled.incarnation > before.a.incarnation);
    assert.deepEqual(cancelled.events, []);
    const freeze2 = run2.engine.createOperation({ type: 'freeze', vms: ['a'], durationInSeconds: 600 }).events[0]!;
    const savedA = run2.engine.documentFor('a').incarnation;
    const savedB = run2.engine.documentFor('b').incarnation;
    await run2.close();

    // Stopped for 20 minutes: the Freeze passed NotBefore (Started); the Reboot is still Started.
    clock.advance(20 * MIN);
    const changes: string[][] = [];
    const run3 = await Emulator.create({ clock, statePath });
    run3.engine.onChange((vms) => changes.push([...vms]));
    const a3 = run3.engine.documentFor('a');
    assert.deepEqual(
      a3.events.map((e) => [e.id, e.status]),
      [[freeze2, 'Started']],
    );
    assert.ok(a3.incarnation > savedA, `incarnation ${a3.incarnation} after ${savedA}`);
    const b3 = run3.engine.documentFor('b');
    assert.deepEqual(
      b3.events.map((e) => [e.id, e.status]),
      [[reboot, 'Started']],
    );
    assert.equal(b3.incarnation, savedB);
    // An approval of the ended Freeze is still recognised after a restart.
    assert.doesNotThrow(() => run3.engine.approve('a', [freeze]));
    await run3.close();

    // Stopped for two hours: everything has ended.
    clock.advance(120 * MIN);
    const run4 = await Emulator.create({ clock, statePath });
    assert.deepEqual(run4.engine.events(), []);
    assert.ok(run4.engine.documentFor('a').incarnation > a3.incarnation);
    assert.ok(run4.engine.documentFor('b').incarnation > b3.incarnation);
    await run4.close();
    assert.deepEqual(readdirSync(dir), ['state.json']);
    assert.deepEqual(changes, []);
  });

  it('resumes a manual clock from the saved time, never before it', async () => {
    const statePath = join(freshDir(), 'state.json');
    const clock = new ManualClock(Date.now() + 365 * 24 * 60 * MIN);
    const run1 = await Emulator.create({ clock, statePath });
    run1.engine.createOperation({ type: 'freeze', vms: ['vm0'] });
    await run1.close();
    const run2 = await Emulator.create({ clock: 'manual', statePath });
    assert.ok(run2.clock.now() >= clock.now());
    assert.equal(run2.engine.events()[0]!.status, 'Scheduled');
    await run2.close();
  });
});
