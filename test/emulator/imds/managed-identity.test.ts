// GET /metadata/identity/oauth2/token: the VM's managed identity token, as Azure's IMDS hands it out.
//
// What this relies on, from Azure's docs ("How to use managed identities for Azure resources on an Azure VM to
// acquire an access token") and answers of real IMDS quoted in public SDK tests and issues: `Metadata: true`,
// `resource` and `api-version` (2018-02-01 or later); `client_id`, `object_id`, `msi_res_id` pick a user-assigned
// identity; a 200 carries access_token, client_id, expires_in, expires_on, ext_expires_in, not_before, resource and
// token_type, numbers as strings; errors are 400 `{"error":"invalid_request","error_description":…}` with
// "Required metadata header not specified", "Required audience parameter not specified" or "Identity not found".
// What the emulator chose where Azure says nothing is marked [choice] in src/emulator/imds/managed-identity.ts.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { Agent as HttpsAgent } from 'node:https';
import { ManagedIdentityCredential, type TokenCredential } from '@azure/identity';
import { ContainerClient, newPipeline, type RestError } from '@azure/storage-blob';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/library.js';
import { Fleet } from '../../../src/emulator/engine/fleet.js';
import { DEFAULT_TENANT_ID, systemIdentity, TokenIssuer } from '../../../src/emulator/imds/managed-identity.js';
import { PROXY_REJECTED, TOO_MANY_REQUESTS, INTERNAL_ERROR } from '../../../src/protocol/errors.js';
import { API_VERSION_INVALID, API_VERSION_MISSING } from '../../../src/protocol/versions.js';
import { computePath, eventsPath, startImds, type ImdsHarness } from '../../support/imds-server.js';
import { agentPolicy, startAzurite } from '../../support/azurite.js';

const SUB = '11111111-2222-3333-4444-555555555555';
const STORAGE = 'https://storage.azure.com/';
const JSON_TYPE = 'application/json; charset=utf-8';
type Claims = Record<string, unknown>;
type Json = Record<string, unknown>;

function claimsOf(jwt: string): { header: Claims; claims: Claims } {
  const [header, payload] = jwt.split('.');
  const decode = (part: string | undefined) => JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8')) as Claims;
  return { header: decode(header), claims: decode(payload) };
}

function tokenPath(query: string, vm?: string): string {
  return `${vm === undefined ? '' : `/vms/${vm}`}/metadata/identity/oauth2/token?${query}`;
}
const STORAGE_QUERY = `api-version=2018-02-01&resource=${encodeURIComponent(STORAGE)}`;

const oauthError = (description: string) => ({ error: 'invalid_request', error_description: description });

// Environment that would steer @azure/identity or msal-node to another managed identity source than IMDS.
const OTHER_SOURCES = [
  'IDENTITY_ENDPOINT',
  'IDENTITY_HEADER',
  'IDENTITY_SERVER_THUMBPRINT',
  'IMDS_ENDPOINT',
  'MSI_ENDPOINT',
  'MSI_SECRET',
  'AZURE_FEDERATED_TOKEN_FILE',
  'AZURE_CLIENT_ID',
  'AZURE_TENANT_ID',
];

describe('ManagedIdentityCredential against the emulator', () => {
  // msal-node keeps the first IMDS source it makes (its URL too) and its token cache for the whole process:
  // one VM per process, as an agent has. This file's process asks as web-0.
  let emu: EmulatorHandle;
  const saved = new Map<string, string | undefined>();
  before(async () => {
    emu = await startEmulator({
      fleet: { vms: [{ name: 'web-0', resourceGroup: 'rg-web', subscriptionId: SUB }, { name: 'web-1' }] },
      clock: 'manual',
      rateLimit: 0,
    });
    for (const name of [...OTHER_SOURCES, 'AZURE_POD_IDENTITY_AUTHORITY_HOST']) {
      saved.set(name, process.env[name]);
      delete process.env[name];
    }
    process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = emu.vmUrl('web-0');
  });
  after(async () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await emu.close();
  });

  async function computeOf(vm: string): Promise<Json> {
    const res = await fetch(`${emu.vmUrl(vm)}/metadata/instance/compute?api-version=2021-02-01`, { headers: { Metadata: 'true' } });
    assert.equal(res.status, 200);
    return (await res.json()) as Json;
  }

  /** A token the VM gets by plain HTTP, and its claims. */
  async function claimsFor(vm: string, resource = STORAGE): Promise<Claims & { token: string }> {
    const query = `api-version=2018-02-01&resource=${encodeURIComponent(resource)}`;
    const res = await fetch(`${emu.imdsUrl}${tokenPath(query, vm)}`, { headers: { Metadata: 'true' } });
    assert.equal(res.status, 200);
    const token = ((await res.json()) as { access_token: string }).access_token;
    return { ...claimsOf(token).claims, token };
  }

  it('gets a token for Blob Storage whose claims name that VM', async () => {
    const asked = Date.now();
    const token = await new ManagedIdentityCredential().getToken(`${STORAGE}.default`);
    const { header, claims } = claimsOf(token.token);
    assert.deepEqual(header, { typ: 'JWT', alg: 'HS256' });
    assert.equal(claims.aud, 'https://storage.azure.com');
    assert.equal(claims.iss, `https://sts.windows.net/${DEFAULT_TENANT_ID}/`);
    assert.equal(claims.tid, DEFAULT_TENANT_ID);
    assert.equal(claims.idtyp, 'app');
    assert.equal(claims.xms_mirid, (await computeOf('web-0')).resourceId);
    assert.equal(claims.xms_mirid, `/subscriptions/${SUB}/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachines/web-0`);
    assert.match(String(claims.oid), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(claims.sub, claims.oid);
    assert.match(String(claims.appid), /^[0-9a-f-]{36}$/);
    const exp = claims.exp as number;
    assert.ok(exp * 1000 > asked + 23 * 3600_000, `exp ${exp} is not a day ahead`);
    assert.ok((claims.nbf as number) * 1000 <= asked && claims.iat === claims.nbf);
    // msal-node counts from its own clock: within a second or so of exp.
    assert.ok(Math.abs(token.expiresOnTimestamp - exp * 1000) <= 2000, `expiresOn ${token.expiresOnTimestamp}, exp ${exp}`);
    assert.equal(token.tokenType, 'Bearer');
  });

  it('takes the system identity named by its own client_id, and refuses an id the VM does not have ("Identity not found")', async () => {
    const systemClientId = String((await claimsFor('web-0')).appid);
    const own = await new ManagedIdentityCredential({ clientId: systemClientId }).getToken(`${STORAGE}.default`);
    assert.equal(claimsOf(own.token).claims.appid, systemClientId);
    const other = new ManagedIdentityCredential({ clientId: '6c5fd2e4-1b3a-4c8e-9f00-0000000000aa' });
    await assert.rejects(other.getToken(`${STORAGE}.default`), /Identity not found/);
  });

  it('another VM has another identity; the same VM keeps its own', async () => {
    const [a, again, b] = [await claimsFor('web-0'), await claimsFor('web-0'), await claimsFor('web-1')];
    assert.equal(again.oid, a.oid);
    assert.equal(again.appid, a.appid);
    assert.notEqual(again.uti, a.uti);
    assert.notEqual(b.oid, a.oid);
    assert.notEqual(b.appid, a.appid);
    assert.equal(b.xms_mirid, (await computeOf('web-1')).resourceId);
  });

  // Azurite's --oauth basic reads the JWT without checking its signature, but checks audience, issuer and
  // times, and takes bearer tokens over HTTPS only (test/support/azurite.ts makes a certificate with openssl).
  // This is the agent's azure-blob path: @azure/storage-blob with ManagedIdentityCredential.
  const openssl = spawnSync('openssl', ['version']).status === 0;
  it(
    'Azurite (--oauth basic, HTTPS) takes the token for Blob Storage and refuses one for another audience',
    { skip: !openssl && 'no openssl' },
    async (t) => {
      const azurite = await startAzurite({ https: { oauth: true } });
      t.after(() => azurite.close());
      const agent = new HttpsAgent({ ca: azurite.ca! });
      t.after(() => agent.destroy());
      const client = (name: string, credential: TokenCredential) => {
        const pipeline = newPipeline(credential);
        pipeline.factories.push(agentPolicy(agent));
        return new ContainerClient(azurite.containerUrl(name), pipeline);
      };

      const budget = client('budget', new ManagedIdentityCredential());
      await budget.create();
      await budget.getBlockBlobClient('slot-0').upload('held', 4);
      const names = [];
      for await (const blob of budget.listBlobsFlat()) names.push(blob.name);
      assert.deepEqual(names, ['slot-0']);

      const management = await claimsFor('web-0', 'https://management.azure.com/');
      const wrongAudience: TokenCredential = {
        getToken: async () => ({ token: management.token, expiresOnTimestamp: Date.now() + 3600_000 }),
      };
      await assert.rejects(client('other', wrongAudience).create(), (err: RestError) => {
        assert.equal(err.statusCode, 403);
        assert.equal((err.details as { authenticationErrorDetail?: string }).authenticationErrorDetail, 'Invalid token audience.');
        return true;
      });
    },
  );
});

describe('IMDS /metadata/identity/oauth2/token', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({
      fleet: [
        { name: 'web-0', resourceGroup: 'rg-web', subscriptionId: SUB },
        { name: 'web-1' },
        { name: 'pool_3', tenant: 'pool', tenantKind: 'scaleSet' },
        { name: 'pool_4', tenant: 'pool', tenantKind: 'scaleSet' },
      ],
    });
  });
  afterEach(() => h.faults.clear());
  after(() => h.close());

  async function token(query = STORAGE_QUERY, vm = 'web-0') {
    const res = await h.client.get(tokenPath(query, vm));
    assert.equal(res.status, 200, res.text);
    const body = res.body as Record<string, string>;
    return { body, ...claimsOf(body.access_token!) };
  }

  it("answers Azure's token response: numbers as strings, the resource as asked", async () => {
    const res = await h.client.get(tokenPath(STORAGE_QUERY, 'web-0'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), JSON_TYPE);
    const body = res.body as Record<string, unknown>;
    assert.deepEqual(Object.keys(body), [
      'access_token',
      'client_id',
      'expires_in',
      'expires_on',
      'ext_expires_in',
      'not_before',
      'resource',
      'token_type',
    ]);
    for (const value of Object.values(body)) assert.equal(typeof value, 'string');
    const { claims } = claimsOf(body.access_token as string);
    assert.equal(body.resource, STORAGE);
    assert.equal(claims.aud, STORAGE);
    assert.equal(body.token_type, 'Bearer');
    assert.equal(body.client_id, claims.appid);
    assert.equal(body.expires_in, '86399');
    assert.equal(body.ext_expires_in, '86399');
    assert.equal(body.expires_on, String(claims.exp));
    assert.equal(body.not_before, String(claims.nbf));
    const now = Date.now() / 1000;
    assert.ok(Math.abs(Number(body.expires_on) - 86399 - now) < 5, `expires_on ${body.expires_on}, now ${now}`);
  });

  it('the claims: issuer and tenant, the identity (oid, sub, appid) and xms_mirid of the VM', async () => {
    const { claims } = await token();
    const compute = (await h.client.get(computePath('2021-02-01', 'web-0'))).body as Json;
    assert.equal(claims.xms_mirid, compute.resourceId);
    assert.equal(claims.iss, `https://sts.windows.net/${DEFAULT_TENANT_ID}/`);
    assert.equal(claims.idp, claims.iss);
    assert.equal(claims.tid, DEFAULT_TENANT_ID);
    assert.equal(claims.sub, claims.oid);
    assert.equal(claims.idtyp, 'app');
    assert.equal(claims.ver, '1.0');
  });

  it("a scale set's VMs share the scale set's identity, which xms_mirid names", async () => {
    const [a, b] = [(await token(STORAGE_QUERY, 'pool_3')).claims, (await token(STORAGE_QUERY, 'pool_4')).claims];
    assert.equal(a.oid, b.oid);
    assert.equal(
      a.xms_mirid,
      '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/forewarn/providers/Microsoft.Compute/virtualMachineScaleSets/pool',
    );
    assert.equal(b.xms_mirid, a.xms_mirid);
  });

  it('client_id, object_id, msi_res_id (and mi_res_id) name the VM\'s identity in any case; any other is "Identity not found"', async () => {
    const { claims } = await token();
    const ids = { client_id: claims.appid, object_id: claims.oid, msi_res_id: claims.xms_mirid, mi_res_id: claims.xms_mirid };
    for (const [param, id] of Object.entries(ids)) {
      const { claims: picked } = await token(`${STORAGE_QUERY}&${param}=${encodeURIComponent(String(id).toUpperCase())}`);
      assert.equal(picked.oid, claims.oid, param);
      const res = await h.client.get(tokenPath(`${STORAGE_QUERY}&${param}=${encodeURIComponent(String(id).slice(0, -1))}x`, 'web-0'));
      assert.equal(res.status, 400, param);
      assert.deepEqual(res.body, oauthError('Identity not found'));
    }
    const mixed = await h.client.get(
      tokenPath(`${STORAGE_QUERY}&client_id=${String(claims.appid)}&object_id=${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}`, 'web-0'),
    );
    assert.equal(mixed.status, 400);
  });

  it('the request rules: Metadata header, resource, X-Forwarded-For', async () => {
    const noHeader = await h.client.get(tokenPath(STORAGE_QUERY, 'web-0'), { metadata: false });
    assert.equal(noHeader.status, 400);
    assert.deepEqual(noHeader.body, oauthError('Required metadata header not specified'));
    const falseHeader = await h.client.get(tokenPath(STORAGE_QUERY, 'web-0'), { metadata: false, headers: { Metadata: 'false' } });
    assert.deepEqual(falseHeader.body, oauthError('Required metadata header not specified'));
    // @azure/identity's probe: no header and no query.
    const probe = await h.client.get('/vms/web-0/metadata/identity/oauth2/token', { metadata: false });
    assert.equal(probe.status, 400);
    assert.deepEqual(probe.body, oauthError('Required metadata header not specified'));

    for (const query of ['api-version=2018-02-01', 'api-version=2018-02-01&resource=']) {
      const res = await h.client.get(tokenPath(query, 'web-0'));
      assert.equal(res.status, 400, query);
      assert.deepEqual(res.body, oauthError('Required audience parameter not specified'));
    }
    const proxied = await h.client.get(tokenPath(STORAGE_QUERY, 'web-0'), { headers: { 'X-Forwarded-For': '10.0.0.9' } });
    assert.equal(proxied.status, 400);
    assert.deepEqual(proxied.body, { error: PROXY_REJECTED });
  });

  it("the api-version: 2018-02-01 or a later instance version; missing, unknown or older ones get IMDS's 400", async () => {
    for (const version of ['2018-02-01', '2019-08-01', '2023-07-01']) await token(`api-version=${version}&resource=${STORAGE}`);
    const missing = await h.client.get(tokenPath(`resource=${STORAGE}`, 'web-0'));
    assert.equal(missing.status, 400);
    assert.equal((missing.body as Json).error, API_VERSION_MISSING);
    for (const version of ['2017-12-01', '2017-09-01', 'latest']) {
      const res = await h.client.get(tokenPath(`api-version=${version}&resource=${STORAGE}`, 'web-0'));
      assert.equal(res.status, 400, version);
      assert.equal((res.body as Json).error, API_VERSION_INVALID);
      assert.ok(Array.isArray((res.body as Json)['newest-versions']));
    }
  });

  it('the VM: by /vms/NAME (lower-cased and with a trailing slash, as msal-node sends it), else 404 naming both ways', async () => {
    const slash = await h.client.get(`/vms/web-0/metadata/identity/oauth2/token/?${STORAGE_QUERY}`);
    assert.equal(slash.status, 200);
    const several = await h.client.get(tokenPath(STORAGE_QUERY));
    assert.equal(several.status, 404);
    assert.match((several.body as Json).error as string, /\/vms\/NAME\/metadata\/identity\/oauth2\/token/);
    const unknown = await h.client.get(tokenPath(STORAGE_QUERY, 'nope'));
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { error: "No VM named 'nope' in the fleet" });
    const post = await h.client.post(tokenPath(STORAGE_QUERY, 'web-0'), '');
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET');
  });

  it('injected faults apply, and only to requests that pass the rules', async () => {
    h.faults.add({ vm: 'web-0', status: 500 });
    assert.equal((await h.client.get(tokenPath(STORAGE_QUERY, 'web-0'), { metadata: false })).status, 400);
    const res = await h.client.get(tokenPath(STORAGE_QUERY, 'web-0'));
    assert.equal(res.status, 500);
    assert.deepEqual(res.body, { error: INTERNAL_ERROR });
    await token();
    h.faults.add({ drop: true });
    await assert.rejects(h.client.get(tokenPath(STORAGE_QUERY, 'web-0')), TypeError);
  });

  it("counts against the VM's IMDS rate limit, shared with Scheduled Events", async (t) => {
    const limited = await startImds({ fleet: [{ name: 'a' }, { name: 'b' }], rateLimit: 3 });
    t.after(() => limited.close());
    assert.equal((await limited.client.get(eventsPath('2020-07-01', 'a'))).status, 200);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await limited.client.get(tokenPath(STORAGE_QUERY, 'a'))).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    const refused = await limited.client.get(tokenPath(STORAGE_QUERY, 'a'));
    assert.deepEqual(refused.body, { error: TOO_MANY_REQUESTS });
    assert.equal((await limited.client.get(tokenPath(STORAGE_QUERY, 'b'))).status, 200);
  });
});

describe('TokenIssuer', () => {
  it('dates the token from its clock: nbf and iat 5 minutes back, exp 86399 s ahead', () => {
    const now = Date.UTC(2030, 0, 1);
    const vm = new Fleet(() => '0b1c2d3e-0000-4000-8000-00000000abcd').add({ name: 'web-0' });
    const body = new TokenIssuer({ now: () => now }).issue(systemIdentity(vm), STORAGE);
    const { claims } = claimsOf(body.access_token);
    assert.deepEqual([claims.iat, claims.nbf, claims.exp], [now / 1000 - 300, now / 1000 - 300, now / 1000 + 86399]);
    assert.deepEqual([body.not_before, body.expires_on, body.expires_in], [String(now / 1000 - 300), String(now / 1000 + 86399), '86399']);
  });

  it('signs HS256 with its key', () => {
    const key = Buffer.alloc(32, 7);
    const jwt = new TokenIssuer({ key }).sign({ aud: STORAGE });
    const [header, payload, signature] = jwt.split('.');
    assert.equal(signature, createHmac('sha256', key).update(`${header}.${payload}`).digest('base64url'));
  });
});
