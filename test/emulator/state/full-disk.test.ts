// A real full disk (a tmpfs filled up): changes are answered 503 while they cannot be saved, the file
// keeps the last saved state whole, and once space is back the next save holds everything.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../src/shared/clock.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { loadStateFile } from '../../../src/emulator/state/file.js';
import { caller } from '../../support/control.js';
import { tmpfsMounts } from '../../support/tmpfs.js';

const mount = tmpfsMounts();

describe('the state file on a full disk (real tmpfs)', () => {
  it('answers 503 while full, keeps the file whole, and saves everything once space is back', async (t) => {
    const disk = await mount(t, 1024);
    if (!disk) return;
    const statePath = `${disk.dir}/state.json`;
    const emulator = await Emulator.create({
      clock: new ManualClock(Date.UTC(2030, 0, 1)),
      fleet: [{ name: 'vm0' }],
      statePath,
      logger: false,
    });
    t.after(() => emulator.close());
    const urls = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
    const control = caller(urls.controlUrl);
    const create = () => control('POST', '/v1/operations', { type: 'freeze', vms: ['vm0'] });

    const saved = await create();
    assert.equal(saved.status, 201);
    disk.fill();
    // The file's last page may still take a record or two; after that, nothing fits.
    const answers = [];
    for (let i = 0; i < 20; i++) answers.push(await create());
    const statuses = answers.map((a) => a.status);
    const firstRefused = statuses.indexOf(503);
    assert.ok(firstRefused >= 0, `some change was refused: ${statuses.join(' ')}`);
    assert.deepEqual(
      statuses.slice(firstRefused),
      statuses.slice(firstRefused).map(() => 503),
      'once full, nothing is answered 2xx',
    );
    for (const res of answers.slice(firstRefused)) assert.match(res.json.error, new RegExp(`could not be saved to ${statePath}: ENOSPC`));
    // The file holds every acknowledged change and none of the refused ones, whole: the failed appends were cut back.
    const acknowledged = [saved, ...answers.slice(0, firstRefused)].map((a) => a.json.operation as string);
    assert.deepEqual(
      loadStateFile(statePath)!.operations.map((o) => o.id),
      acknowledged,
    );
    assert.deepEqual(
      readdirSync(disk.dir).filter((n) => n.includes('.tmp-')),
      [],
      'no temp file is left',
    );
    t.diagnostic(`${firstRefused} changes fitted after the fill, ${statuses.length - firstRefused} were refused`);

    disk.free();
    const after = await create();
    assert.equal(after.status, 201);
    const healed = loadStateFile(statePath)!;
    assert.equal(healed.operations.length, 22, 'the changes answered 503 were kept in memory and are saved now');
    assert.ok(healed.operations.some((o) => o.id === after.json.operation));
  });
});
