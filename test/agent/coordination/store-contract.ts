// What every FleetStore backend must do, run against each real server (etcd, Azurite): the budget's
// exclusivity (also under a race), shared claims, renewal, a dead holder's expiry, a restart taking
// its slot back, the registry, and an unreachable store failing fast with StoreError.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { StoreError, eventClaim, vmClaim, type FleetStore, type StoreOptions } from '../../../src/agent/coordination/store.js';
import { delay } from '../../support/wait.js';

export interface ContractFixture {
  /** A store on the running server. */
  make(options: StoreOptions): Promise<FleetStore>;
  /** A store whose server does not answer (nothing listens there). */
  unreachable(options: StoreOptions): Promise<FleetStore>;
  /** Short enough for tests, long enough for the backend (etcd's smallest TTL, Blob's clock). */
  leaseSeconds: number;
}

let groups = 0;

export function storeContract(name: string, fixture: () => ContractFixture): void {
  describe(`${name}: the FleetStore contract`, () => {
    const open: FleetStore[] = [];
    after(async () => {
      await Promise.allSettled(open.map((s) => s.close()));
    });

    /** Stores for `vms` in a group of their own, opened. */
    async function group(vms: string[], slots: number): Promise<FleetStore[]> {
      const g = `contract-${process.pid}-${++groups}`;
      const f = fixture();
      const stores: FleetStore[] = [];
      for (const vm of vms) {
        const store = await f.make({ group: g, vm, slots, leaseSeconds: f.leaseSeconds, requestTimeoutMs: 5_000 });
        await store.open();
        open.push(store);
        stores.push(store);
      }
      return stores;
    }

    it('one slot: the first claim takes it, another gets null, the holder gets the same slot again', async () => {
      const [a, b] = await group(['vm-a', 'vm-b'], 1);
      const slot = await a!.tryAcquire(vmClaim('vm-a'));
      assert.equal(typeof slot, 'string');
      assert.equal(await b!.tryAcquire(vmClaim('vm-b')), null);
      assert.equal(await a!.tryAcquire(vmClaim('vm-a')), slot);
      assert.equal(await a!.renew(slot!, vmClaim('vm-a')), true);
      await a!.release(slot!, vmClaim('vm-a'));
      assert.equal(await b!.tryAcquire(vmClaim('vm-b')), slot, 'released, the slot is free for the next claim');
    });

    it('N slots hold N claims and no more', async () => {
      const stores = await group(['vm-a', 'vm-b', 'vm-c', 'vm-d'], 3);
      const taken = [];
      for (const [i, s] of stores.slice(0, 3).entries()) taken.push(await s.tryAcquire(vmClaim(`vm-${'abc'[i]}`)));
      assert.ok(taken.every((t) => typeof t === 'string'));
      assert.equal(new Set(taken).size, 3, 'three claims, three different slots');
      assert.equal(await stores[3]!.tryAcquire(vmClaim('vm-d')), null);
    });

    it('an event claim is one slot for every VM it names, freed once the last of them gives its share back', async () => {
      const [a, b, c] = await group(['vm-a', 'vm-b', 'vm-c'], 1);
      const claim = eventClaim('E1-ABC');
      const slot = await a!.tryAcquire(claim);
      assert.notEqual(slot, null);
      assert.equal(await b!.tryAcquire(claim), slot, 'vm-b joins the slot vm-a took for the same event');
      assert.equal(await c!.tryAcquire(vmClaim('vm-c')), null);
      await a!.release(slot!, claim);
      assert.equal(await c!.tryAcquire(vmClaim('vm-c')), null, 'vm-b still holds its share');
      assert.equal(await b!.renew(slot!, claim), true);
      await b!.release(slot!, claim);
      assert.equal(await c!.tryAcquire(vmClaim('vm-c')), slot);
    });

    it('a race of many VMs for two slots: at most two claims win', async () => {
      const vms = ['vm-1', 'vm-2', 'vm-3', 'vm-4', 'vm-5', 'vm-6'];
      for (let round = 0; round < 3; round++) {
        const stores = await group(vms, 2);
        const won = await Promise.all(stores.map((s, i) => s.tryAcquire(vmClaim(vms[i]!)).catch(() => null)));
        const winners = won.filter((w) => w !== null);
        assert.ok(winners.length <= 2, `round ${round}: ${winners.length} claims took 2 slots: ${JSON.stringify(won)}`);
        assert.equal(new Set(winners).size, winners.length, `round ${round}: two claims share a slot: ${JSON.stringify(won)}`);
        assert.ok(winners.length >= 1, `round ${round}: nobody won`);
      }
    });

    it('a holder that renews keeps its slot past leaseSeconds; one that stops loses it after leaseSeconds', async () => {
      const [a, b] = await group(['vm-a', 'vm-b'], 1);
      const lease = fixture().leaseSeconds * 1000;
      const slot = await a!.tryAcquire(vmClaim('vm-a'));
      assert.notEqual(slot, null);
      const renewUntil = Date.now() + lease * 2;
      while (Date.now() < renewUntil) {
        assert.equal(await a!.renew(slot!, vmClaim('vm-a')), true);
        assert.equal(await b!.tryAcquire(vmClaim('vm-b')), null, 'held and renewed: not free');
        await delay(lease / 4);
      }
      // A dead holder: it stops renewing (its connection closed, as a SIGKILL closes it).
      await a!.close();
      assert.equal(await b!.tryAcquire(vmClaim('vm-b')), null, 'not free the moment its holder stops');
      const freeBy = Date.now() + lease * 3 + 10_000;
      let got: string | null = null;
      while (got === null && Date.now() < freeBy) {
        await delay(500);
        got = await b!.tryAcquire(vmClaim('vm-b'));
      }
      assert.equal(got, slot, 'the dead holder’s slot frees after leaseSeconds');
      // The old holder, restarted, finds it lost and does not take it back.
      const f = fixture();
      const restarted = await f.make({ group: groupOf(b!), vm: 'vm-a', slots: 1, leaseSeconds: f.leaseSeconds, requestTimeoutMs: 5_000 });
      await restarted.open();
      open.push(restarted);
      assert.equal(await restarted.renew(slot!, vmClaim('vm-a')), false);
      assert.equal(await restarted.tryAcquire(vmClaim('vm-a')), null);
    });

    it('a restarted holder renews its slot from the journal’s name and claim, within leaseSeconds', async () => {
      const [a, b] = await group(['vm-a', 'vm-b'], 1);
      const slot = await a!.tryAcquire(vmClaim('vm-a'));
      await a!.close();
      const f = fixture();
      const restarted = await f.make({ group: groupOf(b!), vm: 'vm-a', slots: 1, leaseSeconds: f.leaseSeconds, requestTimeoutMs: 5_000 });
      await restarted.open();
      open.push(restarted);
      assert.equal(await restarted.renew(slot!, vmClaim('vm-a')), true);
      const until = Date.now() + f.leaseSeconds * 2000;
      while (Date.now() < until) {
        assert.equal(await restarted.renew(slot!, vmClaim('vm-a')), true);
        assert.equal(await b!.tryAcquire(vmClaim('vm-b')), null);
        await delay((f.leaseSeconds * 1000) / 4);
      }
      await restarted.release(slot!, vmClaim('vm-a'));
      assert.equal(await b!.tryAcquire(vmClaim('vm-b')), slot);
    });

    it('releasing a slot it does not hold changes nothing', async () => {
      const [a, b] = await group(['vm-a', 'vm-b'], 1);
      const slot = await a!.tryAcquire(vmClaim('vm-a'));
      await b!.release(slot!, vmClaim('vm-b'));
      await b!.release(slot!, vmClaim('vm-a'));
      assert.equal(await a!.renew(slot!, vmClaim('vm-a')), true, 'still vm-a’s');
      assert.equal(await b!.tryAcquire(vmClaim('vm-b')), null);
    });

    it('the registry: members and what each is prepared for', async () => {
      const [a, b] = await group(['vm-a', 'VM-B'], 1);
      await a!.register();
      await a!.register();
      await b!.register();
      const names = (await a!.members()).map((m) => m.vm.toLowerCase()).sort();
      assert.deepEqual(names, ['vm-a', 'vm-b']);
      await a!.markPrepared('E1-ABC');
      await a!.markPrepared('e1-abc');
      await b!.markPrepared('E2');
      const byVm = new Map((await b!.members()).map((m) => [m.vm.toLowerCase(), m.prepared]));
      assert.deepEqual(byVm.get('vm-a'), ['e1-abc']);
      assert.deepEqual(byVm.get('vm-b'), ['e2']);
      await a!.unmarkPrepared('E1-ABC');
      await a!.unmarkPrepared('E1-ABC');
      assert.deepEqual(new Map((await a!.members()).map((m) => [m.vm.toLowerCase(), m.prepared])).get('vm-a'), []);
    });

    it('an unreachable store fails with StoreError within its request timeout', async () => {
      const f = fixture();
      const store = await f.unreachable({ group: 'nowhere', vm: 'vm-a', slots: 1, leaseSeconds: f.leaseSeconds, requestTimeoutMs: 1_500 });
      open.push(store);
      const started = Date.now();
      await assert.rejects(async () => {
        await store.open();
        await store.tryAcquire(vmClaim('vm-a'));
      }, StoreError);
      assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
    });
  });
}

function groupOf(store: FleetStore): string {
  return store.options.group;
}
