// A live event in a state file that names a VM the state never had, or a Started event with no
// endsAt, is refused at load with its place (file:line:col and the field), and `forewarn emulator
// --state FILE` exits 2 with that message instead of serving the event in other VMs' documents.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine, type EngineSnapshot } from '../../../src/emulator/engine/engine.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { StateFileWriter } from '../../../src/emulator/state/file.js';
import { assertNoStack, emulatorArgs, spawnCli } from '../../support/cli.js';
import { placeOf, stateFileRefusal } from '../../support/state-file.js';
import { tempDir } from '../../support/temp.js';

const root = tempDir('state-live-references');
const freshPath = () => join(mkdtempSync(join(root, 'case-')), 'state.json');
const T0 = Date.UTC(2030, 0, 1);
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Two VMs of tenant web; a's Reboot approved (Started) and b's Freeze Scheduled: the others' documents show both. */
function liveState(): EngineSnapshot {
  const engine = new Engine({
    clock: new ManualClock(T0),
    fleet: [
      { name: 'a', tenant: 'web' },
      { name: 'b', tenant: 'web' },
    ],
  });
  const reboot = engine.createOperation({ type: 'restart', vms: ['a'] }).events[0]!;
  engine.approve('a', [reboot]);
  engine.createOperation({ type: 'freeze', vms: ['b'] });
  return JSON.parse(JSON.stringify(engine.snapshot())) as EngineSnapshot;
}

describe('a state file whose live event names a VM the state never had', () => {
  const lies: [string, (s: EngineSnapshot) => number, string, string, RegExp][] = [
    [
      'in its resources',
      (s) => {
        const i = s.events.findIndex((e) => e.status === 'Started');
        s.events[i]!.resources = ['ghost'];
        return i;
      },
      'resources[0]',
      '"resources":',
      /VM 'ghost' is not in the fleet and never was/,
    ],
    [
      'in its approvals',
      (s) => {
        const i = s.events.findIndex((e) => e.approvals.length > 0);
        s.events[i]!.approvals[0]!.vm = 'ghost';
        return i;
      },
      'approvals[0].vm',
      '"vm":',
      /VM 'ghost' approved it, but is not in the fleet and never was/,
    ],
  ];
  for (const [where, lie, field, key, expected] of lies) {
    it(`is refused at load ${where}, naming file:line:col and the field`, () => {
      const path = freshPath();
      const s = liveState();
      const i = lie(s);
      const text = `${JSON.stringify(s)}\n`;
      writeFileSync(path, text);
      const eventAt = text.indexOf(JSON.stringify(s.events[i]!.id), text.indexOf('"events":'));
      assert.match(
        stateFileRefusal(path),
        new RegExp(
          `^${escape(path)}:${placeOf(text, key, eventAt)}: invalid state file: events\\[${i}\\]\\.${escape(field)}: ${expected.source}`,
        ),
      );
      assert.equal(readFileSync(path, 'utf8'), text, 'left untouched');
    });
  }

  it('is refused when the lie is in a change record, naming that line', () => {
    const path = freshPath();
    const engine = new Engine({
      clock: new ManualClock(T0),
      fleet: [
        { name: 'a', tenant: 'web' },
        { name: 'b', tenant: 'web' },
      ],
    });
    const writer = new StateFileWriter(path, engine);
    writer.start();
    engine.createOperation({ type: 'freeze', vms: ['a'] });
    writer.flush();
    writer.close();
    // Line 3: a record that moves the live Freeze onto a VM nobody ever had.
    const record = JSON.parse(readFileSync(path, 'utf8').split('\n')[1]!) as { events: { set: { resources: string[] }[] } };
    record.events.set[0]!.resources = ['ghost'];
    appendFileSync(path, `${JSON.stringify({ ...record, seq: 2 })}\n`);
    const text = readFileSync(path, 'utf8');
    const lineStart = text.split('\n').slice(0, 2).join('\n').length + 1;
    assert.match(
      stateFileRefusal(path),
      new RegExp(`^${escape(path)}:${placeOf(text, '"resources":', lineStart)}: invalid state file: events\\[0\\]\\.resources\\[0\\]: `),
    );
  });

  it('still loads when the VM has left the fleet (its incarnation stays), as after a control-API removal', async () => {
    const path = freshPath();
    const s = liveState();
    const i = s.events.findIndex((e) => e.status === 'Started');
    s.events[i]!.resources = ['gone'];
    s.incarnations.gone = 4;
    writeFileSync(path, `${JSON.stringify(s)}\n`);
    const emulator = await Emulator.create({ clock: 'manual', statePath: path });
    try {
      assert.deepEqual(
        emulator.engine.documentFor('b').events.map((e) => e.resources),
        [['gone'], ['b']],
      );
    } finally {
      await emulator.close();
    }
  });
});

describe('a state file whose live event is Started with no endsAt', () => {
  it('is refused at load, naming file:line:col and the field', () => {
    const path = freshPath();
    const s = liveState();
    const i = s.events.findIndex((e) => e.status === 'Started');
    s.events[i]!.endsAt = null;
    const text = `${JSON.stringify(s)}\n`;
    writeFileSync(path, text);
    const eventAt = text.indexOf(JSON.stringify(s.events[i]!.id), text.indexOf('"events":'));
    assert.match(
      stateFileRefusal(path),
      new RegExp(
        `^${escape(path)}:${placeOf(text, '"endsAt":', eventAt)}: invalid state file: events\\[${i}\\]\\.endsAt: a Started event has an endsAt`,
      ),
    );
  });
});

describe('forewarn emulator --state with a live event naming a VM the state never had', () => {
  it('exits 2 with file:line:col: field: problem, serves nothing and leaves the file untouched', async () => {
    const path = freshPath();
    const s = liveState();
    const i = s.events.findIndex((e) => e.status === 'Started');
    s.events[i]!.resources = ['ghost'];
    const text = `${JSON.stringify(s)}\n`;
    writeFileSync(path, text);
    // With --json a process that serves prints a ready line; it is stopped at once, and the test fails.
    const child = spawnCli([...emulatorArgs({ state: path, logLevel: 'silent' }), '--json']);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
      if (stdout.includes('"event":"ready"')) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.doesNotMatch(stdout, /"event":"ready"/, `it served the state file\n${stderr}`);
    assert.equal(code, 2, stderr);
    assert.match(
      stderr,
      new RegExp(
        `^forewarn: ${escape(path)}:\\d+:\\d+: invalid state file: events\\[${i}\\]\\.resources\\[0\\]: VM 'ghost' is not in the fleet and never was`,
      ),
    );
    assertNoStack(stderr);
    assert.equal(readFileSync(path, 'utf8'), text);
  });
});
