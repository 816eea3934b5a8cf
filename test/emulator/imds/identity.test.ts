// SPEC §4 "Which VM is asking": source address, then path prefix, then the only VM.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ScheduledEventsDocument } from '../../../src/protocol/types.js';
import { computePath, eventsPath, startImds, type ImdsHarness } from '../../support/imds-server.js';

const nameOf = async (h: ImdsHarness, path: string) => {
  const res = await h.client.get(path);
  assert.equal(res.status, 200, res.text);
  return (res.body as { name: string }).name;
};

describe('IMDS identity with one VM', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({ fleet: [{ name: 'solo' }] });
  });
  after(() => h.close());

  it('a request without a prefix is that VM', async () => {
    h.engine.createOperation({ type: 'freeze', vms: ['solo'] });
    const res = await h.client.get(eventsPath());
    assert.equal(res.status, 200);
    assert.deepEqual((res.body as ScheduledEventsDocument).Events[0]!.Resources, ['solo']);
    assert.equal(await nameOf(h, computePath()), 'solo');
  });

  it('its prefix works too; another name gets 404', async () => {
    assert.equal((await h.client.get(eventsPath('2020-07-01', 'solo'))).status, 200);
    const res = await h.client.get(eventsPath('2020-07-01', 'other'));
    assert.equal(res.status, 404);
    assert.deepEqual(res.body, { error: "No VM named 'other' in the fleet" });
  });
});

describe('IMDS identity with several VMs', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({ fleet: [{ name: 'web0' }, { name: 'web1' }] });
  });
  after(() => h.close());

  it('a request without a prefix gets 404 naming both ways', async () => {
    for (const method of ['GET', 'POST']) {
      const res = await h.client.request(method, eventsPath(), { body: method === 'POST' ? '{}' : undefined });
      assert.equal(res.status, 404, method);
      const error = (res.body as { error: string }).error;
      assert.match(error, /source address/);
      assert.match(error, /"address"/);
      assert.match(error, /\/vms\/NAME\/metadata\/scheduledevents/);
    }
    const compute = await h.client.get(computePath());
    assert.equal(compute.status, 404);
    assert.match((compute.body as { error: string }).error, /\/vms\/NAME\/metadata\/instance\/compute/);
  });

  it('the path prefix selects the VM', async () => {
    const id = h.engine.createOperation({ type: 'freeze', vms: ['web1'] }).events[0]!;
    const one = await h.client.get(eventsPath('2020-07-01', 'web1'));
    const zero = await h.client.get(eventsPath('2020-07-01', 'web0'));
    assert.deepEqual(
      (one.body as ScheduledEventsDocument).Events.map((e) => e.EventId),
      [id],
    );
    assert.deepEqual((zero.body as ScheduledEventsDocument).Events, []);
    assert.equal(await nameOf(h, computePath('2021-02-01', 'web0')), 'web0');
    assert.equal(await nameOf(h, computePath('2021-02-01', 'web1')), 'web1');
  });

  it('an unknown or over-long prefix gets 404', async () => {
    const res = await h.client.get(eventsPath('2020-07-01', 'nope'));
    assert.equal(res.status, 404);
    assert.deepEqual(res.body, { error: "No VM named 'nope' in the fleet" });
    const long = 'x'.repeat(300);
    const longRes = await h.client.get(eventsPath('2020-07-01', long));
    assert.equal(longRes.status, 404);
    assert.deepEqual(longRes.body, { error: `No VM named '${long}' in the fleet` });
    const huge = await h.client.get(eventsPath('2020-07-01', 'x'.repeat(2000)));
    assert.equal(huge.status, 404);
  });

  it('a percent-encoded name is decoded', async () => {
    assert.equal(await nameOf(h, '/vms/web%30/metadata/instance/compute?api-version=2021-02-01'), 'web0');
  });

  it('a VM with the source address is chosen, and wins over the prefix', async () => {
    h.engine.addVm({ name: 'local', address: '127.0.0.1' });
    try {
      const id = h.engine.createOperation({ type: 'freeze', vms: ['local'] }).events[0]!;
      const plain = await h.client.get(eventsPath());
      assert.equal(plain.status, 200);
      assert.deepEqual(
        (plain.body as ScheduledEventsDocument).Events.map((e) => e.EventId),
        [id],
      );
      assert.equal(await nameOf(h, computePath()), 'local');
      assert.equal(await nameOf(h, computePath('2021-02-01', 'web0')), 'local');
      assert.equal(await nameOf(h, computePath('2021-02-01', 'nope')), 'local');
      const approved = await h.client.approve(eventsPath('2020-07-01', 'web1'), [id]);
      assert.equal(approved.status, 200);
      assert.equal(h.engine.event(id).approvals[0]!.vm, 'local');
    } finally {
      h.engine.removeVm('local');
    }
    assert.equal((await h.client.get(eventsPath())).status, 404);
  });

  it('an IPv4-mapped address matches the same VM', async () => {
    h.engine.addVm({ name: 'mapped', address: '::ffff:127.0.0.1' });
    try {
      assert.equal(await nameOf(h, computePath()), 'mapped');
    } finally {
      h.engine.removeVm('mapped');
    }
  });
});

describe('IMDS identity with no VMs', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({ fleet: [] });
  });
  after(() => h.close());

  it('every request gets 404', async () => {
    const res = await h.client.get(eventsPath());
    assert.equal(res.status, 404);
    assert.match((res.body as { error: string }).error, /No VMs/);
    assert.equal((await h.client.get(eventsPath('2020-07-01', 'vm0'))).status, 404);
  });
});
