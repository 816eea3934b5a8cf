// The etcd backend against a real three-member cluster: the FleetStore contract, then what only a
// cluster shows: the leader killed under a held slot, the whole cluster down for longer than a
// lease, and a heavier race for the fence.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { EtcdStore } from '../../../src/agent/coordination/etcd.js';
import { StoreError, eventClaim, vmClaim, type Claim, type StoreOptions } from '../../../src/agent/coordination/store.js';
import { etcdSkipReason, startEtcdCluster, unusedPort, type EtcdCluster } from '../../support/etcd-cluster.js';
import { delay, waitFor } from '../../support/wait.js';
import { storeContract } from './store-contract.js';

// etcd's smallest TTL is 1.5 election timeouts, rounded up: 1 s with the cluster's 500 ms.
const LEASE_SECONDS = 3;

describe('EtcdStore on a three-member cluster', { skip: etcdSkipReason() }, () => {
  let cluster: EtcdCluster;
  let refused: number;
  const opened: EtcdStore[] = [];
  let groups = 0;

  before(async () => {
    cluster = await startEtcdCluster({ members: 3 });
    refused = await unusedPort();
  });
  after(async () => {
    await Promise.allSettled(opened.map((s) => s.close()));
    await cluster?.close();
  });

  storeContract('etcd', () => ({
    make: async (options: StoreOptions) => new EtcdStore({ ...options, endpoints: cluster.endpoints }),
    unreachable: async (options: StoreOptions) => new EtcdStore({ ...options, endpoints: [`http://127.0.0.1:${refused}`] }),
    leaseSeconds: LEASE_SECONDS,
  }));

  /** Opened stores for `vms`, in a group of their own. */
  async function group(vms: string[], slots: number, requestTimeoutMs = 5_000): Promise<EtcdStore[]> {
    const name = `etcd-${process.pid}-${++groups}`;
    const stores = vms.map(
      (vm) => new EtcdStore({ group: name, vm, slots, leaseSeconds: LEASE_SECONDS, requestTimeoutMs, endpoints: cluster.endpoints }),
    );
    opened.push(...stores);
    await Promise.all(stores.map((s) => s.open()));
    return stores;
  }

  /** A raw client, to look at keys and leases the way etcd sees them. */
  function raw(): Etcd3 {
    const client = new Etcd3({ hosts: cluster.endpoints });
    after(() => client.close());
    return client;
  }

  it('names its endpoints and lays its keys out under /forewarn/<group>/: shares and marks on a lease, members on none', async () => {
    const [a] = await group(['VM-A'], 1);
    assert.equal(a!.backend, 'etcd');
    assert.equal(a!.where, cluster.endpoints.join(','));
    const slot = await a!.tryAcquire(eventClaim('E1'));
    assert.equal(slot, 'slots/0');
    await a!.register();
    await a!.markPrepared('E1');
    const root = `/forewarn/${a!.options.group}/`;
    const client = raw();
    const share = await client.get(`${root}holders/event:e1/vm-a`).exec();
    assert.notEqual(share.kvs[0]?.lease ?? '0', '0', 'a share is on the session lease');
    assert.deepEqual(
      { ...(JSON.parse(share.kvs[0]!.value.toString()) as object), since: 'x' },
      { vm: 'VM-A', claim: 'event:e1', slot: 0, since: 'x' },
    );
    const member = await client.get(`${root}members/vm-a`).exec();
    assert.equal(member.kvs[0]?.lease, '0', 'membership is permanent');
    assert.equal((JSON.parse(member.kvs[0]!.value.toString()) as { vm: string }).vm, 'VM-A', 'the name as given');
    const mark = await client.get(`${root}prepared/e1/vm-a`).exec();
    assert.equal(mark.kvs[0]?.lease, share.kvs[0]!.lease, 'a mark is on the same session lease');
    assert.ok(await client.get(`${root}fence`).exists(), 'the take wrote the fence');
  });

  it('a heavier race: 20 rounds of 8 agents, some joining one event, never more claims than slots', async () => {
    const vms = Array.from({ length: 8 }, (_, i) => `vm-${i}`);
    for (let round = 0; round < 20; round++) {
      const slots = 1 + (round % 2);
      const stores = await group(vms, slots);
      // Half of them race for one event's claim (they may all win it together), half for their own.
      const claims: Claim[] = vms.map((vm, i) => (i % 2 === 0 ? eventClaim(`E-${round}`) : vmClaim(vm)));
      const won = await Promise.all(stores.map((s, i) => s.tryAcquire(claims[i]!)));
      const slotOf = new Map<string, string>();
      const claimOf = new Map<string, string>();
      won.forEach((slot, i) => {
        if (slot === null) return;
        const claim = claims[i]!;
        assert.equal(slotOf.get(claim) ?? slot, slot, `round ${round}: one claim in two slots: ${JSON.stringify(won)}`);
        assert.equal(claimOf.get(slot) ?? claim, claim, `round ${round}: two claims in ${slot}: ${JSON.stringify(won)}`);
        slotOf.set(claim, slot);
        claimOf.set(slot, claim);
      });
      assert.ok(
        slotOf.size >= 1 && slotOf.size <= slots,
        `round ${round}: ${slotOf.size} claims won ${slots} slots: ${JSON.stringify(won)}`,
      );
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('the leader SIGKILLed under a held slot: renewals stay true, nobody else takes it, calls answer within seconds', async () => {
    const [a, b] = await group(['vm-a', 'vm-b'], 1);
    const claim = vmClaim('vm-a');
    const slot = (await a!.tryAcquire(claim))!;
    assert.notEqual(slot, null);
    const client = raw();
    const shareKey = `/forewarn/${a!.options.group}/holders/vm:vm-a/vm-a`;
    const leaseBefore = (await client.get(shareKey).exec()).kvs[0]?.lease;
    const leader = await cluster.leader();
    await cluster.kill(leader);
    const killedAt = Date.now();
    let answeredAfter: number | undefined;
    const failures: string[] = [];
    // Three leases long: only keep-alives that survived the election keep it.
    while (Date.now() - killedAt < LEASE_SECONDS * 3_000) {
      const started = Date.now();
      try {
        assert.equal(await a!.renew(slot, claim), true);
        assert.equal(await b!.tryAcquire(vmClaim('vm-b')), null);
        answeredAfter ??= Date.now() - killedAt;
      } catch (err) {
        if (!(err instanceof StoreError)) throw err;
        failures.push(err.message);
        assert.ok(Date.now() - started < 5_000 + 1_000, `a call took ${Date.now() - started} ms`);
      }
      await delay(200);
    }
    assert.ok(
      answeredAfter !== undefined && answeredAfter < 5_000,
      `first answer after ${answeredAfter} ms; failures: ${failures.join('; ')}`,
    );
    assert.notEqual(await cluster.leader(), leader, 'another member leads');
    assert.equal((await client.get(shareKey).exec()).kvs[0]?.lease, leaseBefore, 'the keep-alives rode the election: the same lease');
    await cluster.restart(leader);
    assert.equal(await a!.renew(slot, claim), true);
    assert.equal(await b!.tryAcquire(vmClaim('vm-b')), null);
  });

  it('the whole cluster down longer than a lease: calls fail fast with StoreError; back up, the holder still holds its slot', async () => {
    const timeoutMs = 1_500;
    const [a, b] = await group(['vm-a', 'vm-b'], 1, timeoutMs);
    const claim = vmClaim('vm-a');
    const slot = (await a!.tryAcquire(claim))!;
    assert.notEqual(slot, null);
    // A lease nobody keeps alive, to see what etcd itself does with it across the outage.
    const client = raw();
    const bare = client.lease(LEASE_SECONDS, { autoKeepAlive: false });
    const bareId = await bare.grant();
    await bare.put('/forewarn-test/bare').value('x');

    await cluster.stopAll();
    const downAt = Date.now();
    while (Date.now() - downAt < (LEASE_SECONDS + 2) * 1_000) {
      for (const call of [() => a!.renew(slot, claim), () => b!.tryAcquire(vmClaim('vm-b')), () => a!.members()]) {
        const started = Date.now();
        await assert.rejects(call(), StoreError);
        assert.ok(Date.now() - started < timeoutMs + 500, `a call took ${Date.now() - started} ms`);
      }
      await delay(200);
    }
    await cluster.startAll();

    // etcd 3.4 renews every lease by its full TTL when a leader is elected, also after a restart:
    // the unkept lease outlived the outage, and expires a TTL later. (etcd3 gives up on a lease
    // after 2×TTL without an answer, as here: renew then moves the share onto a new one.)
    const left = await client.leaseClient.leaseTimeToLive({ ID: bareId });
    assert.ok(Number(left.TTL) >= 1, `the bare lease has ${left.TTL} s left after the outage`);
    assert.equal(await client.get('/forewarn-test/bare').string(), 'x');

    const renewed = await waitFor(
      'the holder renewing after the outage',
      async () => {
        try {
          return (await a!.renew(slot, claim)) ? 'held' : 'lost';
        } catch (err) {
          if (err instanceof StoreError) return false;
          throw err;
        }
      },
      5_000,
      100,
    );
    assert.equal(renewed, 'held');
    // Held past another two leases: on a lease kept alive again (or moved onto a new one).
    const until = Date.now() + LEASE_SECONDS * 2_000;
    while (Date.now() < until) {
      assert.equal(await a!.renew(slot, claim), true);
      assert.equal(await b!.tryAcquire(vmClaim('vm-b')), null);
      await delay(500);
    }
    await waitFor('the bare lease to expire', async () => !(await client.get('/forewarn-test/bare').exists()), LEASE_SECONDS * 2_000, 200);
  });
});
