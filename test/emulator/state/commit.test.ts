// An acknowledgement means saved: changes are answered after one fsync per batch, and a failed save answers 503.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { nodeFileOps, type FileOps } from '../../../src/shared/atomic-file.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { StateFileWriter, StateSaveError, loadStateFile } from '../../../src/emulator/state/file.js';
import { caller } from '../../support/control.js';
import { tempDir } from '../../support/temp.js';

const root = tempDir('commit');
const freshPath = () => join(mkdtempSync(join(root, 'case-')), 'state.json');
const T0 = Date.UTC(2030, 0, 1);

/** File calls that count fsyncs and, while `full` is set, fail every write as a full disk does. */
function diskOps() {
  const disk = { fsyncs: 0, full: false, ops: undefined as unknown as FileOps };
  disk.ops = {
    ...nodeFileOps,
    fsyncSync: (fd) => {
      disk.fsyncs++;
      nodeFileOps.fsyncSync(fd);
    },
    writeSync: (fd, buffer, offset, length, position) => {
      if (disk.full) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      return nodeFileOps.writeSync(fd, buffer, offset, length, position);
    },
  };
  return disk;
}

async function start(disk: ReturnType<typeof diskOps>, statePath = freshPath()) {
  const emulator = await Emulator.create({
    clock: new ManualClock(T0),
    fleet: [{ name: 'vm0' }, { name: 'vm1' }, { name: 'vm2' }],
    statePath,
    stateFileOps: disk.ops,
    logger: false,
  });
  const urls = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
  return { emulator, statePath, control: caller(urls.controlUrl), imdsUrl: urls.imdsUrl };
}

describe('group commit', () => {
  it('settles every waiter of one turn after a single append and fsync', async () => {
    const disk = diskOps();
    const path = freshPath();
    const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] });
    const writer = new StateFileWriter(path, engine, undefined, { ops: disk.ops });
    writer.start();
    const fsyncsAtStart = disk.fsyncs;
    const waits = ['a', 'b', 'c'].map((vm) => {
      engine.createOperation({ type: 'freeze', vms: [vm] });
      return writer.durable();
    });
    await Promise.all(waits);
    assert.equal(disk.fsyncs - fsyncsAtStart, 1, 'one fsync for the batch');
    assert.equal(loadStateFile(path)!.events.length, 3);
    // Nothing changed since: durable() needs no save.
    await writer.durable();
    assert.equal(disk.fsyncs - fsyncsAtStart, 1);
    writer.close();
  });

  it('answers concurrent control changes only once they are on disk, several to an fsync', async () => {
    const disk = diskOps();
    const { emulator, statePath } = await start(disk);
    try {
      const fsyncsAtStart = disk.fsyncs;
      const N = 12;
      const answers = await Promise.all(
        Array.from({ length: N }, async (_, i) => {
          const res = await emulator.control.inject({
            method: 'POST',
            url: '/v1/operations',
            payload: { type: 'freeze', vms: [`vm${i % 3}`] },
          });
          // Read the moment the answer arrives: the change must already be in the file.
          const saved = loadStateFile(statePath)!;
          const id = (res.json() as { operation: string }).operation;
          return { status: res.statusCode, id, saved: saved.operations.some((o) => o.id === id) };
        }),
      );
      assert.deepEqual(
        answers.map((a) => [a.status, a.saved]),
        answers.map(() => [201, true]),
      );
      const fsyncs = disk.fsyncs - fsyncsAtStart;
      assert.ok(fsyncs >= 1 && fsyncs < N, `${fsyncs} fsyncs for ${N} changes`);
    } finally {
      await emulator.close();
    }
  });

  it('answers over HTTP after the save: each 2xx change is in the file when its answer arrives', async () => {
    const disk = diskOps();
    const { emulator, statePath, control } = await start(disk);
    try {
      const created = await Promise.all(
        ['vm0', 'vm1', 'vm2'].map((vm) => control('POST', '/v1/operations', { type: 'freeze', vms: [vm] })),
      );
      const events: string[] = [];
      for (const res of created) {
        assert.equal(res.status, 201);
        events.push(res.json.events[0]);
      }
      const answers = await Promise.all(
        events.map(async (id, i) => {
          const res = await control('POST', `/v1/events/${id}/${i === 0 ? 'cancel' : 'approve'}`, i === 0 ? undefined : { vm: `vm${i}` });
          const saved = loadStateFile(statePath)!;
          return {
            status: res.status,
            ended: saved.ended.some((e) => e.id === id),
            approved: saved.events.find((e) => e.id === id)?.approvals.length,
          };
        }),
      );
      assert.deepEqual(answers, [
        { status: 200, ended: true, approved: undefined },
        { status: 200, ended: false, approved: 1 },
        { status: 200, ended: false, approved: 1 },
      ]);
    } finally {
      await emulator.close();
    }
  });

  it('answers 503 naming the file and the cause when the save fails, nothing 2xx until saved, then recovers', async () => {
    const disk = diskOps();
    const { emulator, statePath, control, imdsUrl } = await start(disk);
    try {
      const first = await control('POST', '/v1/operations', { type: 'freeze', vms: ['vm0'] });
      assert.equal(first.status, 201);
      const eventId = first.json.events[0] as string;

      disk.full = true;
      const during = await Promise.all([
        control('POST', '/v1/operations', { type: 'freeze', vms: ['vm1'] }),
        control('POST', '/v1/vms', { name: 'vm9' }),
        control('POST', '/v1/operations', { type: 'freeze', vms: ['vm2'] }),
      ]);
      for (const res of during) {
        assert.equal(res.status, 503, res.text);
        assert.equal(
          res.json.error,
          `the change was applied in memory but could not be saved to ${statePath}: ENOSPC: no space left on device, write`,
        );
        assert.equal(res.headers.get('location'), null);
      }
      // The VM's approval through IMDS: applied, not acknowledged.
      const approval = await fetch(`${imdsUrl}/vms/vm0/metadata/scheduledevents?api-version=2020-07-01`, {
        method: 'POST',
        headers: { metadata: 'true', 'content-type': 'application/json' },
        body: JSON.stringify({ StartRequests: [{ EventId: eventId }] }),
      });
      assert.equal(approval.status, 503);
      assert.match(((await approval.json()) as { error: string }).error, /could not be saved to .*: ENOSPC/);
      // A refusal stays a refusal; reads do not wait.
      assert.equal((await control('POST', '/v1/operations', { type: 'nonsense', vms: ['vm0'] })).status, 400);
      assert.equal((await control('GET', '/v1/operations')).status, 200);
      // The changes are in memory, not in the file.
      assert.equal(emulator.engine.operations().items.length, 3);
      assert.equal(loadStateFile(statePath)!.operations.length, 1);

      disk.full = false;
      const next = await control('POST', '/v1/operations', { type: 'freeze', vms: ['vm9'] });
      assert.equal(next.status, 201);
      // The retry saved everything applied in memory, the unacknowledged changes too.
      const saved = loadStateFile(statePath)!;
      assert.equal(saved.operations.length, 4);
      assert.ok(saved.vms.some((v) => v.name === 'vm9'));
      assert.equal(saved.events.find((e) => e.id === eventId)?.status, 'Started');
    } finally {
      await emulator.close();
    }
  });

  it('retries a failed save on a timer when nothing else changes', async () => {
    const disk = diskOps();
    const path = freshPath();
    const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'a' }] });
    const errors: Error[] = [];
    const writer = new StateFileWriter(path, engine, (err) => errors.push(err), { ops: disk.ops });
    writer.start();
    disk.full = true;
    engine.createOperation({ type: 'freeze', vms: ['a'] });
    await assert.rejects(writer.durable(), StateSaveError);
    engine.createOperation({ type: 'restart', vms: ['a'] });
    await assert.rejects(writer.durable(), StateSaveError);
    assert.equal(errors.length, 1, 'logged once per failure streak');
    disk.full = false;
    // No further change: the backoff timer saves it.
    for (let i = 0; i < 100 && loadStateFile(path)!.operations.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(loadStateFile(path)!.operations.length, 2);
    await writer.durable();
    writer.close();
  });
});
