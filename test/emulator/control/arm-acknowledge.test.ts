// ARM's acknowledge of scheduled events on the control address, over real sockets.
//
// SPEC §4 (Event Grid and ARM): "`POST /subscriptions/S/resourcegroups/RG/providers/microsoft.compute/
// {virtualMachines|virtualMachineScaleSets}/NAME/providers/microsoft.maintenance/scheduledevents/ID/acknowledge
// ?api-version=2023-10-01-preview` on the control address, with a bearer token, approves as an IMDS POST does."
// Issue 26 adds the list form and ARM-shaped errors (`{"error": {"code", "message"}}`) for an unknown event, an
// event already Started, a wrong resource. What Microsoft leaves open is marked [choice] in src/emulator/arm/.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { ManagedIdentityCredential } from '@azure/identity';
import { ScheduledEventsClient } from '../../../src/client/index.js';
import { Emulator, type EmulatorOptions } from '../../../src/emulator/emulator.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { armAuthenticator } from '../../../src/emulator/arm/auth.js';
import { TokenIssuer, type ManagedIdentity } from '../../../src/emulator/imds/managed-identity.js';
import { loadStateFile } from '../../../src/emulator/state/file.js';
import { acknowledgePath, type ArmComputeType } from '../../../src/protocol/arm.js';
import { nodeFileOps, type FileOps } from '../../../src/shared/atomic-file.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { caller, type Answer, type Call } from '../../support/control.js';
import { tempDir } from '../../support/temp.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const SUB = '11111111-2222-3333-4444-555555555555';
const RG = 'rg-web';
const V = '2023-10-01-preview';
const ARM = 'https://management.azure.com/';
const STORAGE = 'https://storage.azure.com/';
const at = { subscriptionId: SUB, resourceGroup: RG };

/** web0 and db0 (another customer) share host h1; pool is a Uniform scale set, flex a Flexible one. */
const FLEET: VmSpec[] = [
  { name: 'web0', host: 'h1', ...at },
  { name: 'db0', tenant: 'db', tenantKind: 'availabilitySet', host: 'h1', ...at },
  // Publishing to Event Grid explicitly off: ARM's acknowledge does not depend on it ([choice], src/emulator/arm/acknowledge.ts).
  {
    name: 'other',
    scheduledEventsPolicy: { scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: { enable: false } } },
    ...at,
  },
  { name: 'pool_3', tenant: 'pool', tenantKind: 'scaleSet', ...at },
  { name: 'pool_4', tenant: 'pool', tenantKind: 'scaleSet', faultDomain: 1, ...at },
  { name: 'flex-1', tenant: 'flex', tenantKind: 'scaleSet', orchestrationMode: 'Flexible', ...at },
];

interface Harness {
  emulator: Emulator;
  imdsUrl: string;
  controlUrl: string;
  control: Call;
  /** A managed identity token from `vm`'s IMDS for `resource`. */
  token(resource?: string, vm?: string): Promise<string>;
  /** POST to an acknowledge route with `authorization`, as the CLI sends it. */
  ack(
    type: ArmComputeType,
    name: string,
    eventId: string | undefined,
    options?: { auth?: string | null; query?: string; body?: unknown; sub?: string; rg?: string; method?: string },
  ): Promise<Answer>;
  /** Creates maintenance through the control API; its event ids. */
  create(body: Record<string, unknown>): Promise<string[]>;
  /** One Freeze per VM, one after another: each one's event id. */
  freezeEach(...vms: string[]): Promise<string[]>;
  status(id: string): Promise<string>;
}

let running: Emulator | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function start(options: Partial<EmulatorOptions> = {}): Promise<Harness> {
  const emulator = await Emulator.create({ clock: new ManualClock(T0), fleet: FLEET, rateLimit: 0, ...options });
  running = emulator;
  const loopback = { host: '127.0.0.1', port: 0 };
  const { imdsUrl, controlUrl } = await emulator.listen({ imds: loopback, control: loopback });
  const control = caller(controlUrl);
  const headers: Record<string, string> = options.token === undefined ? {} : { authorization: `Bearer ${options.token}` };
  const token = async (resource = ARM, vm = 'web0') => {
    const res = await fetch(
      `${imdsUrl}/vms/${vm}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${encodeURIComponent(resource)}`,
      {
        headers: { Metadata: 'true' },
      },
    );
    assert.equal(res.status, 200);
    return ((await res.json()) as { access_token: string }).access_token;
  };
  const armToken = await token();
  const create = async (body: Record<string, unknown>) => {
    const res = await control('POST', '/v1/operations', body, headers);
    assert.equal(res.status, 201, res.text);
    return res.json.events as string[];
  };
  return {
    emulator,
    imdsUrl,
    controlUrl,
    control: (method, path, body, extra) => control(method, path, body, { ...headers, ...extra }),
    token,
    ack: (type, name, eventId, o = {}) => {
      const path = acknowledgePath({
        subscriptionId: o.sub ?? SUB,
        resourceGroup: o.rg ?? RG,
        resourceType: type,
        resourceName: name,
        ...(eventId ? { eventId } : {}),
      });
      const auth = o.auth === undefined ? `Bearer ${armToken}` : o.auth;
      return control(o.method ?? 'POST', `${path}${o.query ?? `?api-version=${V}`}`, o.body, auth === null ? {} : { authorization: auth });
    },
    create,
    freezeEach: async (...vms) => {
      const ids: string[] = [];
      for (const vm of vms) ids.push(...(await create({ type: 'freeze', vms: [vm] })));
      return ids;
    },
    status: async (id) => (await control('GET', `/v1/events/${id}`, undefined, headers)).json.event.status as string,
  };
}

const APPROVED = { value: 'Successfully Approved' };
const armError = (code: string, message: string) => ({ error: { code, message } });
/** The answer is ARM's error, exactly. */
function assertArmError(res: Answer, status: number, code: string, message: string): void {
  assert.equal(res.status, status, res.text);
  assert.deepEqual(res.json, armError(code, message));
}

describe('ARM acknowledge: authentication', () => {
  it('no Authorization header is 401 AuthenticationFailed, with a Bearer challenge; a non-Bearer header is AuthenticationFailedInvalidHeader', async () => {
    // [azure] "Authentication failed. The 'Authorization' header is missing." (ARM, 401 AuthenticationFailed)
    const h = await start();
    const [id] = await h.freezeEach('web0');
    const missing = await h.ack('virtualMachines', 'web0', id, { auth: null });
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get('www-authenticate'), 'Bearer');
    assert.deepEqual(missing.json, armError('AuthenticationFailed', "Authentication failed. The 'Authorization' header is missing."));
    const basic = await h.ack('virtualMachines', 'web0', id, { auth: 'Basic dXNlcjpwYXNz' });
    assert.deepEqual(
      basic.json,
      armError('AuthenticationFailedInvalidHeader', "Authentication failed. The 'Authorization' header is provided in an invalid format."),
    );
    assert.equal(await h.status(id!), 'Scheduled');
  });

  it('refuses a token it did not sign (InvalidAuthenticationToken) and a storage-audience one (InvalidAuthenticationTokenAudience)', async () => {
    const h = await start();
    const [id] = await h.freezeEach('web0');
    const foreign = new TokenIssuer().sign({ aud: ARM, exp: Math.floor(Date.now() / 1000) + 3600 });
    for (const auth of ['Bearer not.a.jwt', `Bearer ${foreign}`]) {
      const res = await h.ack('virtualMachines', 'web0', id, { auth });
      assert.equal(res.status, 401);
      assert.deepEqual(res.json, armError('InvalidAuthenticationToken', 'The access token is invalid.'));
      assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);
    }
    // [azure] "It should exactly match with one of the allowed audiences 'https://management.core.windows.net/', …"
    const storage = await h.ack('virtualMachines', 'web0', id, { auth: `Bearer ${await h.token(STORAGE)}` });
    assertArmError(
      storage,
      401,
      'InvalidAuthenticationTokenAudience',
      "The access token has been obtained for wrong audience or resource 'https://storage.azure.com/'. It should exactly match with one of the allowed audiences " +
        "'https://management.core.windows.net/','https://management.core.windows.net','https://management.azure.com/','https://management.azure.com'.",
    );
    assert.equal(await h.status(id!), 'Scheduled');
  });

  it('takes every ARM audience, with or without the trailing slash', async () => {
    const h = await start();
    for (const audience of [
      'https://management.core.windows.net/',
      'https://management.core.windows.net',
      'https://management.azure.com',
    ]) {
      const [id] = await h.freezeEach('web0');
      const res = await h.ack('virtualMachines', 'web0', id, { auth: `Bearer ${await h.token(audience)}` });
      assert.equal(res.status, 200, `${audience}: ${res.text}`);
    }
  });

  it('an expired token is ExpiredAuthenticationToken with both UTC times; one not valid yet is InvalidAuthenticationToken', () => {
    // [azure] "The access token expiry UTC time '5/14/2023 4:22:51 PM' is earlier than current UTC time '…'."
    let now = Date.parse('2030-05-14T16:00:00.000Z');
    const tokens = new TokenIssuer({ now: () => now });
    const check = armAuthenticator({ tokens, controlToken: undefined });
    const identity: ManagedIdentity = { tenantId: 't', clientId: 'c', objectId: 'o', resourceId: '/r' };
    const { access_token: token } = tokens.issue(identity, ARM);
    assert.equal(check(`Bearer ${token}`), undefined);
    now += 86_399_000 + 51_000;
    assert.deepEqual(
      check(`Bearer ${token}`)?.body,
      armError(
        'ExpiredAuthenticationToken',
        "The access token expiry UTC time '5/15/2030 3:59:59 PM' is earlier than current UTC time '5/15/2030 4:00:50 PM'.",
      ),
    );
    const early = tokens.sign({ aud: ARM, nbf: Math.floor(now / 1000) + 600, exp: Math.floor(now / 1000) + 3600 });
    assert.deepEqual(check(`Bearer ${early}`)?.body, armError('InvalidAuthenticationToken', 'The access token is invalid.'));
  });

  it('with a control token (--token): that token and ARM tokens are taken here, while the control API still takes only its own', async () => {
    // SPEC §4: "with a bearer token"; the control API's guard is not weakened by the ARM routes.
    const h = await start({ token: 'control-sekrit' });
    const [a, b] = await h.freezeEach('web0', 'other');
    assert.deepEqual((await h.ack('virtualMachines', 'web0', a, { auth: 'Bearer control-sekrit' })).json, APPROVED);
    assert.deepEqual((await h.ack('virtualMachines', 'other', b)).json, APPROVED);
    const viaArmToken = await caller(h.controlUrl)('GET', '/v1/fleet', undefined, {
      authorization: `Bearer ${await h.token()}`,
    });
    assert.equal(viaArmToken.status, 401);
    assert.deepEqual(viaArmToken.json, { error: 'missing or wrong bearer token' });
    assert.equal((await h.ack('virtualMachines', 'web0', a, { auth: null })).json.error.code, 'AuthenticationFailed');
  });

  it('without a control token, the token decides here as it would with one: a foreign Origin is refused on /v1/ only', async () => {
    const h = await start();
    const [id] = await h.freezeEach('web0');
    const origin = { origin: 'http://evil.example' };
    assert.equal((await h.control('GET', '/v1/fleet', undefined, origin)).status, 403);
    const path = `${acknowledgePath({ ...at, resourceType: 'virtualMachines', resourceName: 'web0' })}?api-version=${V}`;
    const res = await h.control('POST', path, { value: [id] }, { ...origin, authorization: `Bearer ${await h.token()}` });
    assert.deepEqual(res.json, APPROVED);
    const anonymous = await h.control('POST', path, { value: [id] }, origin);
    assert.equal(anonymous.json.error.code, 'AuthenticationFailed');
  });
});

describe('ARM acknowledge: @azure/identity', () => {
  const saved = new Map<string, string | undefined>();
  before(() => {
    for (const name of [
      'IDENTITY_ENDPOINT',
      'IDENTITY_HEADER',
      'IMDS_ENDPOINT',
      'MSI_ENDPOINT',
      'MSI_SECRET',
      'AZURE_CLIENT_ID',
      'AZURE_POD_IDENTITY_AUTHORITY_HOST',
    ]) {
      saved.set(name, process.env[name]);
      delete process.env[name];
    }
  });
  after(() => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it("takes ManagedIdentityCredential's token for the scope https://management.azure.com/.default", async () => {
    const h = await start();
    process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = `${h.imdsUrl}/vms/web0`;
    const { token } = await new ManagedIdentityCredential().getToken(`${ARM}.default`);
    const [id] = await h.freezeEach('web0');
    const res = await h.ack('virtualMachines', 'web0', id, { auth: `Bearer ${token}` });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, APPROVED);
  });
});

describe('ARM acknowledge: request rules', () => {
  it('api-version: missing is MissingApiVersionParameter, one not served is NoRegisteredProviderFound naming the served ones', async () => {
    // [azure] "The api-version query parameter (?api-version=) is required for all requests."
    const h = await start();
    const [id] = await h.freezeEach('web0');
    const missing = await h.ack('virtualMachines', 'web0', id, { query: '' });
    assertArmError(
      missing,
      400,
      'MissingApiVersionParameter',
      'The api-version query parameter (?api-version=) is required for all requests.',
    );
    const old = await h.ack('virtualMachines', 'web0', id, { query: '?api-version=2023-04-01' });
    assertArmError(
      old,
      400,
      'NoRegisteredProviderFound',
      "No registered resource provider found for location 'global' and API version '2023-04-01' for type 'scheduledevents'. " +
        "The supported api-versions are '2023-10-01-preview, 2025-10-01-preview'. The supported locations are 'global'.",
    );
    assert.deepEqual((await h.ack('virtualMachines', 'web0', id, { query: '?api-version=2025-10-01-preview' })).json, APPROVED);
  });

  it('paths match in any case, as ARM matches them; other paths under /subscriptions/ are 404 and other methods 405, ARM-shaped', async () => {
    const h = await start();
    const [id] = await h.freezeEach('web0');
    const auth = { authorization: `Bearer ${await h.token()}` };
    const shouting =
      `/SUBSCRIPTIONS/${SUB}/resourceGroups/RG-WEB/providers/Microsoft.Compute/VIRTUALMACHINES/WEB0` +
      `/providers/Microsoft.Maintenance/scheduledEvents/${id!.toLowerCase()}/Acknowledge?api-version=${V}`;
    assert.deepEqual((await h.control('POST', shouting, undefined, auth)).json, APPROVED);
    assert.equal(await h.status(id!), 'Started');

    const get = await h.ack('virtualMachines', 'web0', id, { method: 'GET' });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    assert.equal(get.json.error.code, 'MethodNotAllowed');
    const disk = await h.control(
      'POST',
      `/subscriptions/${SUB}/resourcegroups/${RG}/providers/microsoft.compute/disks/d0?api-version=${V}`,
      undefined,
      auth,
    );
    assert.equal(disk.status, 404);
    assert.equal(disk.json.error.code, 'NotFound');
  });

  it('a list body that is not {"value": [ids]} is InvalidRequestContent; bodies other than JSON are 415', async () => {
    const h = await start();
    await h.freezeEach('web0');
    for (const body of [{ value: [] }, { value: 'x' }, { ids: ['x'] }, '{"value": [']) {
      const res = await h.ack('virtualMachines', 'web0', undefined, { body });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.error.code, 'InvalidRequestContent');
    }
    const path = `${acknowledgePath({ ...at, resourceType: 'virtualMachines', resourceName: 'web0' })}?api-version=${V}`;
    const text = await h.control('POST', path, 'x', { 'content-type': 'text/plain', authorization: `Bearer ${await h.token()}` });
    assert.equal(text.status, 415);
    assert.equal(text.json.error.code, 'UnsupportedMediaType');
  });
});

describe('ARM acknowledge: the resource and its events', () => {
  it('a VM or scale set that is not in that subscription and resource group is ResourceNotFound in ARM form', async () => {
    const h = await start();
    const [id] = await h.freezeEach('web0');
    const notFound = (type: string, name: string, rg: string) =>
      armError(
        'ResourceNotFound',
        `The Resource 'Microsoft.Compute/${type}/${name}' under resource group '${rg}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix`,
      );
    assert.deepEqual(
      (await h.ack('virtualMachines', 'web0', id, { rg: 'rg-other' })).json,
      notFound('virtualMachines', 'web0', 'rg-other'),
    );
    const otherSub = await h.ack('virtualMachines', 'web0', id, { sub: '00000000-0000-0000-0000-000000000000' });
    assert.equal(otherSub.status, 404);
    assert.deepEqual(otherSub.json, notFound('virtualMachines', 'web0', RG));
    assert.deepEqual((await h.ack('virtualMachineScaleSets', 'web0', id)).json, notFound('virtualMachineScaleSets', 'web0', RG));
    // [imds] "A Uniform instance is a child of its scale set": virtualMachineScaleSets/pool/virtualMachines/3, not virtualMachines/pool_3.
    const [poolEvent] = await h.freezeEach('pool_3');
    assert.deepEqual((await h.ack('virtualMachines', 'pool_3', poolEvent)).json, notFound('virtualMachines', 'pool_3', RG));
    assert.equal(await h.status(id!), 'Scheduled');
  });

  it("a scale set acknowledges its instances' events, a Flexible VM its own; the VM's IMDS document then shows it Started", async () => {
    // SPEC §4: "approves as an IMDS POST does"; read back with the project's own client, as a VM would.
    const h = await start();
    const [poolEvent, flexEvent] = await h.freezeEach('pool_3', 'flex-1');
    assert.deepEqual((await h.ack('virtualMachineScaleSets', 'pool', poolEvent)).json, APPROVED);
    assert.deepEqual((await h.ack('virtualMachines', 'flex-1', flexEvent)).json, APPROVED);
    for (const [vm, id] of [
      ['pool_3', poolEvent],
      ['pool_4', poolEvent],
      ['flex-1', flexEvent],
    ] as const) {
      const doc = await new ScheduledEventsClient({ endpoint: `${h.imdsUrl}/vms/${vm}` }).getDocument();
      assert.equal(doc.events.find((e) => e.id === id)?.status, 'Started', vm);
    }
    const event = (await h.control('GET', `/v1/events/${poolEvent}`)).json.event;
    assert.deepEqual(
      event.approvals.map((a: { vm: string }) => a.vm),
      ['pool_3'],
    );
  });

  it('an event id never issued, and an event of another resource, are ResourceNotFound; neither approves anything', async () => {
    // Issue 26: "ARM-shaped errors for an unknown event, … a wrong resource".
    const h = await start();
    const [webEvent] = await h.freezeEach('web0');
    const unknown = '3DA1B9AA-5204-4335-8C33-C54E315DCFFE';
    const cases = [
      ['web0', unknown, 'no event has this id (never issued, or ended longer ago than the emulator keeps: --history-limit)'],
      ['other', webEvent!, 'the event concerns other VMs (its Resources name no VM of this resource)'],
    ] as const;
    for (const [vm, id, why] of cases) {
      const message = `The Resource 'Microsoft.Maintenance/scheduledevents/${id}' under resource 'Microsoft.Compute/virtualMachines/${vm}' was not found: ${why}.`;
      assertArmError(await h.ack('virtualMachines', vm, id), 404, 'ResourceNotFound', message);
    }
    assert.equal(await h.status(webEvent!), 'Scheduled');
  });

  it('an event already Started, Completed or Canceled is 409 Conflict naming which', async () => {
    // Issue 26: "ARM-shaped errors for … an event already Started".
    const h = await start();
    const [started, completed, canceled] = await h.freezeEach('web0', 'other', 'flex-1');
    await new ScheduledEventsClient({ endpoint: `${h.imdsUrl}/vms/web0` }).approve(started!);
    await new ScheduledEventsClient({ endpoint: `${h.imdsUrl}/vms/other` }).approve(completed!);
    assert.equal((await h.control('POST', `/v1/events/${completed}/complete`)).status, 200);
    assert.equal((await h.control('POST', `/v1/events/${canceled}/cancel`)).status, 200);
    const cases = [
      ['web0', started, `The scheduled event '${started}' has already Started; only a Scheduled event can be acknowledged.`],
      ['other', completed, `The scheduled event '${completed}' has already Completed; only a Scheduled event can be acknowledged.`],
      ['flex-1', canceled, `The scheduled event '${canceled}' has already been Canceled; only a Scheduled event can be acknowledged.`],
    ] as const;
    for (const [vm, id, message] of cases) assertArmError(await h.ack('virtualMachines', vm, id), 409, 'Conflict', message);
  });

  it('approves for a VM that has not enabled Scheduled Events in IMDS yet, and whose policy does not publish to Event Grid', async () => {
    // [seed] "Scheduled Events is enabled for a VM by its first request": an IMDS thing. [choice] ARM acknowledges from
    // outside the VM, for the resource; and eventGridAndResourceGraph enables publishing, not approval.
    const h = await start({ activation: { mode: 'realistic' } });
    const [id] = await h.freezeEach('other');
    assert.equal((await h.control('GET', '/v1/vms/other')).json.scheduledEvents, 'disabled');
    assert.deepEqual((await h.ack('virtualMachines', 'other', id)).json, APPROVED);
    assert.equal(await h.status(id!), 'Started');
  });

  it('the list form approves every id, or none when one is refused', async () => {
    // MaintenanceScheduledEventIdList: {"value": ["<event id>", …]}; all-or-nothing as an IMDS POST.
    const h = await start();
    const [a, b, web] = await h.freezeEach('pool_3', 'pool_4', 'web0');
    const refused = await h.ack('virtualMachineScaleSets', 'pool', undefined, { body: { value: [a, b, web] } });
    assert.equal(refused.status, 404);
    assert.equal(refused.json.error.code, 'ResourceNotFound');
    assert.deepEqual([await h.status(a!), await h.status(b!)], ['Scheduled', 'Scheduled']);
    assert.deepEqual((await h.ack('virtualMachineScaleSets', 'pool', undefined, { body: { value: [a, b] } })).json, APPROVED);
    assert.deepEqual([await h.status(a!), await h.status(b!)], ['Started', 'Started']);
  });

  it("approves a job shared with another customer's tenant as an IMDS POST would: it waits for that tenant", async () => {
    // SPEC §2: "When the event is a job on a host that other customers share, it starts only when every tenant on
    // that host has approved or NotBefore has passed."
    const h = await start();
    const ids = await h.create({ type: 'freeze', host: 'h1' });
    const events = (await h.control('GET', '/v1/events')).json.events as { id: string; tenant: string }[];
    const ofTenant = (tenant: string) => events.find((e) => e.tenant === tenant && ids.includes(e.id))!.id;
    const [web, db] = [ofTenant('web0'), ofTenant('db')];
    assert.deepEqual((await h.ack('virtualMachines', 'web0', web)).json, APPROVED);
    const webDoc = await new ScheduledEventsClient({ endpoint: `${h.imdsUrl}/vms/web0` }).getDocument();
    assert.equal(webDoc.events.find((e) => e.id === web)?.status, 'Scheduled');
    await new ScheduledEventsClient({ endpoint: `${h.imdsUrl}/vms/db0` }).approve(db);
    assert.deepEqual([await h.status(web), await h.status(db)], ['Started', 'Started']);
  });
});

describe('ARM acknowledge: with a state file', () => {
  const root = tempDir('arm-ack');
  it('answers 200 once the approval is saved, and ARM-shaped 503 when it cannot be saved', async () => {
    // SPEC §4 durability: "an acknowledgement means saved", as for an IMDS approval POST.
    const disk = { full: false };
    const ops: FileOps = {
      ...nodeFileOps,
      writeSync: (fd, buffer, offset, length, position) => {
        if (disk.full) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        return nodeFileOps.writeSync(fd, buffer, offset, length, position);
      },
    };
    const statePath = join(mkdtempSync(join(root, 'case-')), 'state.json');
    const h = await start({ statePath, stateFileOps: ops, logger: false });
    const [a, b] = await h.freezeEach('web0', 'other');
    assert.deepEqual((await h.ack('virtualMachines', 'web0', a)).json, APPROVED);
    assert.equal(loadStateFile(statePath)!.events.find((e) => e.id === a)?.status, 'Started');
    disk.full = true;
    const res = await h.ack('virtualMachines', 'other', b);
    assert.equal(res.status, 503);
    assert.equal(res.json.error.code, 'ServiceUnavailable');
    assert.match(res.json.error.message, /could not be saved to .*: ENOSPC/);
    disk.full = false;
  });
});
