import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock } from '../../src/shared/clock.js';
import { Emulator, urlFor } from '../../src/emulator/emulator.js';
import { waitFor } from '../support/wait.js';

const LOOPBACK = { host: '127.0.0.1', port: 0 };

describe('Emulator', () => {
  it('starts Scheduled events at NotBefore and removes them on time with nobody polling', async () => {
    // 6000x: the Freeze's 15-minute notice is 150 ms and its 1200 s of Started is 200 ms.
    const emulator = await Emulator.create({ timingFactor: 6000, fleet: [{ name: 'a' }] });
    try {
      const changes: { at: number; vms: string[] }[] = [];
      emulator.engine.onChange((vms) => changes.push({ at: Date.now(), vms: [...vms] }));
      const created = Date.now();
      const id = emulator.engine.createOperation({ type: 'freeze', vms: ['a'], durationInSeconds: 1200 }).events[0]!;
      assert.equal(changes.length, 1);
      // Only the timer moves the engine on here: onChange fires without any query.
      await waitFor('the start', () => changes.length >= 2, 2000, 10);
      assert.ok(changes[1]!.at - created >= 140, `started after ${changes[1]!.at - created} ms`);
      assert.deepEqual(changes[1]!.vms, ['a']);
      await waitFor('the removal', () => changes.length >= 3, 2000, 10);
      assert.ok(changes[2]!.at - changes[1]!.at >= 190, `removed ${changes[2]!.at - changes[1]!.at} ms after start`);
      // What the engine shows agrees.
      assert.deepEqual(emulator.engine.events(), []);
      const doc = emulator.engine.documentFor('a');
      assert.deepEqual(doc.events, []);
      assert.equal(doc.incarnation, 4);
      const ended = emulator.engine.operations().items[0]!;
      assert.deepEqual(ended.events, [id]);
    } finally {
      await emulator.close();
    }
  });

  it('shows a Started event to a reader between start and removal', async () => {
    const emulator = await Emulator.create({ timingFactor: 6000 });
    try {
      let started = false;
      emulator.engine.onChange(() => {
        started = true;
      });
      emulator.engine.createOperation({ type: 'freeze', vms: ['vm0'], durationInSeconds: 6000 });
      started = false;
      await waitFor('the start', () => started, 2000, 10);
      const [event] = emulator.engine.events();
      assert.equal(event?.status, 'Started');
      assert.equal(event?.startedBy, 'notBefore');
      assert.equal(emulator.engine.documentFor('vm0').events[0]!.notBefore, null);
    } finally {
      await emulator.close();
    }
  });

  it('keeps time still with a manual clock: no timer', async () => {
    const clock = new ManualClock(Date.parse('2030-01-01T00:00:00Z'));
    const emulator = await Emulator.create({ clock, timingFactor: 6000 });
    try {
      const changes: string[][] = [];
      emulator.engine.onChange((vms) => changes.push([...vms]));
      emulator.engine.createOperation({ type: 'freeze', vms: ['vm0'] });
      await sleep(300);
      assert.equal(changes.length, 1);
      // NotBefore is rounded up to a whole second.
      clock.advanceTo(emulator.engine.events()[0]!.notBefore);
      emulator.engine.tick();
      assert.equal(changes.length, 2);
      assert.equal(emulator.engine.events()[0]?.status, 'Started');
    } finally {
      await emulator.close();
    }
  });

  it('has one standalone VM named vm0 by default, and serves on the ports it reports', async () => {
    const emulator = await Emulator.create({ clock: 'manual' });
    try {
      assert.deepEqual([...emulator.engine.fleet.vms.keys()], ['vm0']);
      assert.equal(emulator.engine.fleet.tenants.get('vm0')?.kind, 'standalone');
      const { imdsUrl, controlUrl } = await emulator.listen({ imds: LOOPBACK, control: LOOPBACK });
      assert.match(imdsUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.notEqual(imdsUrl, controlUrl);
      const doc = await fetch(`${imdsUrl}/metadata/scheduledevents?api-version=2020-07-01`, { headers: { Metadata: 'true' } });
      assert.equal(doc.status, 200);
      assert.deepEqual(await doc.json(), { DocumentIncarnation: 1, Events: [] });
      const clock = await fetch(`${controlUrl}/v1/clock`);
      assert.equal(((await clock.json()) as { mode: string }).mode, 'manual');
    } finally {
      await emulator.close();
    }
  });

  it('requires the token on the control API when one is set', async () => {
    const emulator = await Emulator.create({ clock: 'manual', token: 's3cret' });
    try {
      const { controlUrl } = await emulator.listen({ imds: LOOPBACK, control: LOOPBACK });
      assert.equal((await fetch(`${controlUrl}/v1/fleet`)).status, 401);
      assert.equal((await fetch(`${controlUrl}/v1/fleet`, { headers: { authorization: 'Bearer s3cret' } })).status, 200);
    } finally {
      await emulator.close();
    }
  });

  it('can be closed twice', async () => {
    const emulator = await Emulator.create({ timingFactor: 6000 });
    emulator.engine.createOperation({ type: 'freeze', vms: ['vm0'] });
    await Promise.all([emulator.close(), emulator.close()]);
    await emulator.close();
  });

  it('builds URLs a local client can use', () => {
    assert.equal(urlFor('0.0.0.0', 80), 'http://127.0.0.1:80');
    assert.equal(urlFor('::', 80), 'http://[::1]:80');
    assert.equal(urlFor('::1', 81), 'http://[::1]:81');
    assert.equal(urlFor('localhost', 82), 'http://localhost:82');
  });
});
