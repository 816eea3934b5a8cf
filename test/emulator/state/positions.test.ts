// A state file that lies is refused with the place of the lie: file:line:col and the field,
// whether it sits in the snapshot line, in a change record, or in an indented version 1 file.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { StateFileWriter } from '../../../src/emulator/state/file.js';
import { placeOf, stateFileRefusal } from '../../support/state-file.js';
import { tempDir } from '../../support/temp.js';

const root = tempDir('state-positions');
const freshPath = () => join(mkdtempSync(join(root, 'case-')), 'state.json');
const T0 = Date.UTC(2030, 0, 1);

describe('state file positions', () => {
  it('a lie in a change record names its line and the field', () => {
    const path = freshPath();
    const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }] });
    const writer = new StateFileWriter(path, engine);
    writer.start();
    engine.createOperation({ type: 'freeze', vms: ['a'] });
    writer.flush();
    writer.close();
    // Line 3: a record that moves a live event into a tenant nobody is in.
    const record = JSON.parse(readFileSync(path, 'utf8').split('\n')[1]!) as { events: { set: { tenant: string }[] } };
    record.events.set[0]!.tenant = 'ghost';
    appendFileSync(path, `${JSON.stringify({ ...record, seq: 2 })}\n`);
    const text = readFileSync(path, 'utf8');
    const lineStart = text.split('\n').slice(0, 2).join('\n').length + 1;
    const message = stateFileRefusal(path);
    assert.match(
      message,
      new RegExp(
        `^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${placeOf(text, '"tenant":"ghost"', lineStart)}: .*events\\[0\\]\\.tenant`,
      ),
    );
  });

  it('a lie in an indented version 1 file names its line and the field', () => {
    const path = freshPath();
    const snapshot = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }] }).snapshot();
    writeFileSync(path, `${JSON.stringify({ ...snapshot, version: 1, savedAt: 1e300 }, null, 2)}\n`);
    const text = readFileSync(path, 'utf8');
    assert.match(stateFileRefusal(path), new RegExp(`:${placeOf(text, '"savedAt"')}: invalid state file: savedAt: `));
  });

  it('a field that fails the schema in the snapshot line names its place', () => {
    const path = freshPath();
    const snapshot = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }] }).snapshot();
    const text = `${JSON.stringify({ ...snapshot, vms: [{ name: 'a', faultDomain: -3 }] })}\n`;
    writeFileSync(path, text);
    assert.match(
      stateFileRefusal(path),
      new RegExp(`:${placeOf(text, '"faultDomain"', text.indexOf('"vms":'))}: .*vms\\[0\\]\\.faultDomain`),
    );
  });
});
