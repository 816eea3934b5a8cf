// The Azure Blob leases backend against a real Azurite: the FleetStore contract, then what is Blob's own: an
// outage of the store, a partitioned holder, many racers for one slot, and bearer tokens over HTTPS.
import assert from 'node:assert/strict';
import { Agent as HttpsAgent } from 'node:https';
import { after, before, describe, it } from 'node:test';
import type { TokenCredential } from '@azure/identity';
import { AzureBlobStore, type AzureBlobStoreDeps } from '../../../src/agent/coordination/azure-blob.js';
import { StoreError, eventClaim, vmClaim, type FleetStore, type StoreOptions } from '../../../src/agent/coordination/store.js';
import { startAzurite, freePort, AZURITE_ACCOUNT, AZURITE_KEY, type Azurite } from '../../support/azurite.js';
import { delay, waitFor } from '../../support/wait.js';
import { storeContract, type ContractFixture } from './store-contract.js';

const CONTAINER = 'fleet';
const LEASE_SECONDS = 3;

let azurite: Azurite;
let fixture: ContractFixture;
const opened: FleetStore[] = [];

before(async () => {
  azurite = await startAzurite();
  await azurite.createContainer(CONTAINER);
  // Free a moment ago, and nothing of ours listens there.
  const deadPort = await freePort();
  fixture = {
    leaseSeconds: LEASE_SECONDS,
    make: async (options) => connectionStringStore(azurite, options),
    unreachable: async (options) => {
      const url = `http://127.0.0.1:${deadPort}/${AZURITE_ACCOUNT}`;
      const env = { AZURE_STORAGE_CONNECTION_STRING: connectionString(url) };
      return new AzureBlobStore({ ...options, containerUrl: `${url}/${CONTAINER}`, env });
    },
  };
});

after(async () => {
  await Promise.allSettled(opened.map((s) => s.close()));
  await azurite?.close();
});

function connectionString(blobEndpoint: string): string {
  return `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};BlobEndpoint=${blobEndpoint};`;
}

function connectionStringStore(server: Azurite, options: StoreOptions): AzureBlobStore {
  const env = { AZURE_STORAGE_CONNECTION_STRING: server.connectionString };
  return new AzureBlobStore({ ...options, containerUrl: server.containerUrl(CONTAINER), env });
}

let groups = 0;

/** Opened stores for `vms` in a fresh group on `server`. */
async function group(server: Azurite, vms: string[], slots: number, leaseSeconds = LEASE_SECONDS): Promise<AzureBlobStore[]> {
  const g = `blob-${process.pid}-${++groups}`;
  const stores: AzureBlobStore[] = [];
  for (const vm of vms) {
    const store = connectionStringStore(server, { group: g, vm, slots, leaseSeconds, requestTimeoutMs: 1_500 });
    await store.open();
    opened.push(store);
    stores.push(store);
  }
  return stores;
}

storeContract('azure-blob', () => fixture);

describe('azure-blob: what Blob adds', () => {
  it('an outage of the store: calls fail fast with StoreError, and after a restart the holder still has its slot', async () => {
    const server = await startAzurite();
    try {
      await server.createContainer(CONTAINER);
      // leaseSeconds longer than the outage: the slot must survive it, whatever the blob lease does meanwhile.
      const [a, b] = await group(server, ['vm-a', 'vm-b'], 1, 15);
      const slot = await a!.tryAcquire(vmClaim('vm-a'));
      assert.equal(slot, 'slots/0');
      await server.stop();
      for (const call of [() => a!.renew(slot!, vmClaim('vm-a')), () => b!.tryAcquire(vmClaim('vm-b')), () => b!.members()]) {
        const started = Date.now();
        await assert.rejects(call, (err: unknown) => err instanceof StoreError && err.message.includes(server.containerUrl(CONTAINER)));
        assert.ok(Date.now() - started < 3_000, `a call to a stopped store took ${Date.now() - started} ms`);
      }
      await server.start();
      assert.equal(await b!.tryAcquire(vmClaim('vm-b')), null, 'nobody took the slot over the restart');
      assert.equal(await a!.renew(slot!, vmClaim('vm-a')), true, 'the holder’s slot is still its own');
      assert.equal(await b!.tryAcquire(vmClaim('vm-b')), null);
    } finally {
      await server.close();
    }
  });

  it('a partitioned holder loses its slot to another VM, and then neither renews nor frees it', async () => {
    const [a, b, c] = await group(azurite, ['vm-a', 'vm-b', 'vm-c'], 1);
    const slot = await a!.tryAcquire(eventClaim('E-PART'));
    assert.notEqual(slot, null);
    // vm-a goes silent; vm-b polls until the heartbeat is leaseSeconds old by the server's clock.
    const started = Date.now();
    const taken = await waitFor(
      'vm-b to take the silent holder’s slot',
      async () => (await b!.tryAcquire(vmClaim('vm-b'))) ?? false,
      15_000,
      250,
    );
    assert.equal(taken, slot);
    assert.ok(Date.now() - started >= LEASE_SECONDS * 1000 - 500, `taken after ${Date.now() - started} ms, before leaseSeconds`);
    // vm-a comes back: its lease was broken and the slot is vm-b's.
    assert.equal(await a!.renew(slot!, eventClaim('E-PART')), false);
    await a!.release(slot!, eventClaim('E-PART'));
    assert.equal(await c!.tryAcquire(vmClaim('vm-c')), null, 'vm-a’s release left vm-b’s slot alone');
    assert.equal(await b!.renew(slot!, vmClaim('vm-b')), true);
    assert.equal(await a!.tryAcquire(eventClaim('E-PART')), null);
  });

  it('20 rounds of 8 racers for one slot: exactly one wins each round, also on a slot untouched for long', async () => {
    const vms = Array.from({ length: 8 }, (_, i) => `vm-${i}`);
    // Every round's group made first, then left alone past leaseSeconds: a racer's lease on a slot that names no
    // holder must read as an acquire in progress (skipped), not as a dead holder's (broken).
    const rounds = [];
    for (let round = 0; round < 20; round++) rounds.push(await group(azurite, vms, 1));
    const [late] = await group(azurite, ['vm-late'], 1);
    await delay((LEASE_SECONDS + 2) * 1000);
    // A racer that has leased the old slot but not yet written its name: skipped, its lease left alone.
    const { ContainerClient } = await import('@azure/storage-blob');
    const slotBlob = new ContainerClient(azurite.connectionString, CONTAINER).getBlobClient(`${late!.options.group}/slots/0`);
    const racer = slotBlob.getBlobLeaseClient('0badc0de-0000-4000-8000-000000000001');
    await racer.acquireLease(15);
    assert.equal(await late!.tryAcquire(vmClaim('vm-late')), null);
    await racer.renewLease();
    for (const [round, stores] of rounds.entries()) {
      const won = await Promise.all(stores.map((s, i) => s.tryAcquire(vmClaim(vms[i]!))));
      const winners = won.flatMap((w, i) => (w === null ? [] : [i]));
      assert.equal(winners.length, 1, `round ${round}: ${JSON.stringify(won)}`);
      const w = winners[0]!;
      assert.equal(await stores[w]!.renew(won[w]!, vmClaim(vms[w]!)), true);
      for (const [i, s] of stores.entries()) if (i !== w) assert.equal(await s.renew('slots/0', vmClaim(vms[i]!)), false);
    }
  });

  it('a missing container: open() says to create it', async () => {
    const store = new AzureBlobStore({
      group: 'g',
      vm: 'vm-a',
      slots: 1,
      leaseSeconds: LEASE_SECONDS,
      requestTimeoutMs: 1_500,
      containerUrl: azurite.containerUrl('absent'),
      env: { AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString },
    });
    await assert.rejects(
      store.open(),
      (err: unknown) => err instanceof StoreError && /404 ContainerNotFound.*create the container/.test(err.message),
    );
  });

  describe('bearer tokens over HTTPS (Azurite --oauth basic)', () => {
    let server: Azurite;
    let agent: HttpsAgent;
    before(async () => {
      server = await startAzurite({ https: { oauth: true } });
      await server.createContainer(CONTAINER);
      agent = new HttpsAgent({ ca: server.ca!, keepAlive: true });
    });
    after(async () => {
      agent?.destroy();
      await server?.close();
    });

    function tokenStore(vm: string, g: string, token: string, clientIds: (string | undefined)[] = []): AzureBlobStore {
      const credential: TokenCredential = { getToken: async () => ({ token, expiresOnTimestamp: Date.now() + 3_600_000 }) };
      const deps: AzureBlobStoreDeps = {
        httpsAgent: agent,
        credential: (clientId) => {
          clientIds.push(clientId);
          return credential;
        },
      };
      const store = new AzureBlobStore(
        {
          group: g,
          vm,
          slots: 1,
          leaseSeconds: LEASE_SECONDS,
          requestTimeoutMs: 3_000,
          containerUrl: `${server.containerUrl(CONTAINER)}?sv=2024&sig=SECRET`,
          clientId: 'client-1',
          // No connection string: the credential signs the requests.
          env: {},
        },
        deps,
      );
      opened.push(store);
      return store;
    }

    it('a token for storage works: slots, the registry, and no secret in `where`', async () => {
      const clientIds: (string | undefined)[] = [];
      const [a, b] = [tokenStore('vm-a', 'oauth', jwt(), clientIds), tokenStore('vm-b', 'oauth', jwt())];
      assert.equal(a.credentialSource, 'token');
      assert.equal(a.where, server.containerUrl(CONTAINER));
      await a.open();
      await b.open();
      assert.deepEqual(clientIds, ['client-1'], 'the credential is made once, for the configured identity');
      const slot = await a.tryAcquire(vmClaim('vm-a'));
      assert.equal(slot, 'slots/0');
      assert.equal(await b.tryAcquire(vmClaim('vm-b')), null);
      assert.equal(await a.renew(slot!, vmClaim('vm-a')), true);
      await a.register();
      await a.markPrepared('E1');
      assert.deepEqual(await b.members(), [{ vm: 'vm-a', prepared: ['e1'] }]);
      await a.release(slot!, vmClaim('vm-a'));
      assert.equal(await b.tryAcquire(vmClaim('vm-b')), slot);
    });

    it('a token for another audience: StoreError naming the authorization problem', async () => {
      const store = tokenStore('vm-a', 'oauth-bad', jwt({ aud: 'https://management.azure.com/' }));
      await assert.rejects(store.open(), (err: unknown) => {
        assert.ok(err instanceof StoreError);
        assert.match(err.message, /403 AuthenticationFailed \(Invalid token audience\.\).*refused the credential/);
        assert.ok(err.message.includes(server.containerUrl(CONTAINER)) && !err.message.includes('SECRET'), err.message);
        return true;
      });
    });
  });
});

/**
 * An unsigned JWT with what Azurite's basic OAuth checks (BlobTokenAuthenticator.authenticateBasic): iat, nbf and
 * exp present and now within [nbf, exp]; iss starting with an Entra ID issuer; aud the storage audience.
 */
function jwt(claims: Record<string, unknown> = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const payload = {
    aud: 'https://storage.azure.com',
    iss: 'https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/',
    iat: now - 60,
    nbf: now - 60,
    exp: now + 3600,
    oid: '00000000-0000-0000-0000-0000000000a1',
    ...claims,
  };
  return `${b64({ typ: 'JWT', alg: 'RS256' })}.${b64(payload)}.${Buffer.from('not-signed').toString('base64url')}`;
}
