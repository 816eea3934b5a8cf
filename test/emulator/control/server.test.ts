import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { ManualClock, SystemClock, type Clock } from '../../../src/shared/clock.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { renderDocument, serializeDocument } from '../../../src/protocol/render.js';
import { caller, type Answer, type Call } from '../../support/control.js';

const T0 = Date.parse('2024-01-01T00:00:00.000Z');
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

const FLEET: VmSpec[] = [
  { name: 'vm0' },
  { name: 'web0', tenant: 'web', tenantKind: 'availabilitySet', host: 'h1', faultDomain: 0 },
  { name: 'web1', tenant: 'web', tenantKind: 'availabilitySet', host: 'h2', faultDomain: 1 },
  { name: 'ss0', tenant: 'ss', tenantKind: 'scaleSet', host: 'h1', terminateNotificationMinutes: 10, osImageNotification: true },
  { name: 'ss1', tenant: 'ss', tenantKind: 'scaleSet', host: 'h2' },
  { name: 'spot0', priority: 'Spot' },
];

interface Harness {
  app: FastifyInstance;
  engine: Engine;
  clock: Clock;
  faults: FaultRegistry;
  rateLimiter: RateLimiter;
  call: Call;
}

async function start(clock: Clock = new ManualClock(T0), fleet: VmSpec[] = FLEET): Promise<Harness> {
  const engine = new Engine({ clock, fleet });
  const faults = new FaultRegistry();
  const rateLimiter = new RateLimiter(1);
  const app = buildControlServer({ engine, clock, faults, rateLimiter });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { app, engine, clock, faults, rateLimiter, call: caller(base) };
}

/** Asserts an error answer: the status, the {error} shape, and that the message says what is wrong. */
function assertError(res: Answer, status: number, ...mentions: (string | RegExp)[]): void {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(res.json), ['error'], res.text);
  assert.equal(typeof res.json.error, 'string');
  assert.doesNotMatch(res.json.error, /\n\s+at /, 'no stack traces');
  for (const m of mentions) {
    if (typeof m === 'string') assert.ok(res.json.error.includes(m), `"${res.json.error}" should mention ${m}`);
    else assert.match(res.json.error, m);
  }
}

let h: Harness;
before(async () => {
  h = await start();
});
after(async () => {
  await h.app.close();
});
beforeEach(async () => {
  const res = await h.call('POST', '/v1/reset');
  assert.equal(res.status, 200);
});

const op = (body: Record<string, unknown>) => h.call('POST', '/v1/operations', body);
const now = () => h.clock.now();

describe('GET /v1/fleet', () => {
  test('lists VMs in spec form, tenants and hosts', async () => {
    const res = await h.call('GET', '/v1/fleet');
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.json.vms.map((v: { name: string }) => v.name),
      ['vm0', 'web0', 'web1', 'ss0', 'ss1', 'spot0'],
    );
    const ss0 = res.json.vms.find((v: { name: string }) => v.name === 'ss0');
    assert.equal(ss0.tenant, 'ss');
    assert.equal(ss0.tenantKind, 'scaleSet');
    assert.equal(ss0.terminateNotificationMinutes, 10);
    assert.equal(ss0.osImageNotification, true);
    assert.equal(ss0.host, 'h1');
    assert.equal(typeof ss0.vmId, 'string');
    assert.deepEqual(
      res.json.tenants.find((t: { name: string }) => t.name === 'web'),
      {
        name: 'web',
        kind: 'availabilitySet',
        faultDomainCount: 2,
        updateDomainCount: 5,
        vms: ['web0', 'web1'],
      },
    );
    assert.deepEqual(
      res.json.hosts.find((x: { name: string }) => x.name === 'h1'),
      {
        name: 'h1',
        vms: ['web0', 'ss0'],
        tenants: ['web', 'ss'],
      },
    );
  });
});

describe('POST /v1/vms and DELETE /v1/vms/:name', () => {
  test('adds a VM with only a name: 201 with the VM', async () => {
    const res = await h.call('POST', '/v1/vms', { name: 'new0' });
    assert.equal(res.status, 201);
    assert.equal(res.json.name, 'new0');
    assert.equal(res.json.tenantKind, 'standalone');
    assert.equal(res.json.priority, 'Regular');
    const fleet = await h.call('GET', '/v1/fleet');
    assert.ok(fleet.json.vms.some((v: { name: string }) => v.name === 'new0'));
  });

  test('takes every field of SPEC §4', async () => {
    const body = {
      name: 'gpu0',
      tenant: 'gpuset',
      tenantKind: 'scaleSet',
      faultDomain: 0,
      updateDomain: 2,
      host: 'h9',
      address: '10.0.0.9',
      priority: 'Spot',
      terminateNotificationMinutes: 15,
      osImageNotification: true,
      gpu: true,
      faultDomainCount: 1,
    };
    const res = await h.call('POST', '/v1/vms', body);
    assert.equal(res.status, 201, res.text);
    const { vmId, ...rest } = res.json;
    assert.equal(typeof vmId, 'string');
    // A Spot VM's evictionPolicy defaults to Deallocate and is shown.
    assert.deepEqual(rest, {
      ...body,
      evictionPolicy: 'Deallocate',
      updateDomainCount: 5,
      state: 'running',
      incarnation: 1,
      scheduledEvents: 'enabled',
    });
  });

  test('a duplicate name is a 409', async () => {
    assertError(await h.call('POST', '/v1/vms', { name: 'vm0' }), 409, 'vm0');
  });

  test('bad bodies get 400 naming the field', async () => {
    assertError(await h.call('POST', '/v1/vms', {}), 400, 'name', 'required');
    assertError(await h.call('POST', '/v1/vms', { name: 7 }), 400, 'name: expected string, received number');
    assertError(await h.call('POST', '/v1/vms', { name: 'x', foo: 1 }), 400, 'unknown field "foo"');
    assertError(await h.call('POST', '/v1/vms', { name: 'x', faultDomain: 'one' }), 400, 'faultDomain');
    assertError(await h.call('POST', '/v1/vms', { name: 'x', faultDomain: 1.5 }), 400, 'faultDomain');
    assertError(await h.call('POST', '/v1/vms', { name: 'x', tenantKind: 'pool' }), 400, 'tenantKind', 'scaleSet');
    assertError(await h.call('POST', '/v1/vms', { name: 'x', priority: 'Low' }), 400, 'priority');
    assertError(
      await h.call('POST', '/v1/vms', { name: 'x', tenantKind: 'scaleSet', terminateNotificationMinutes: 20 }),
      400,
      'terminateNotificationMinutes',
    );
    assertError(await h.call('POST', '/v1/vms', { name: 'x', gpu: 'yes' }), 400, 'gpu: expected boolean');
    assertError(await h.call('POST', '/v1/vms', { name: 'x', address: 'not-an-ip' }), 400, 'address', 'IP');
    assertError(await h.call('POST', '/v1/vms', [{ name: 'x' }]), 400, 'expected object, received array');
    // The engine's own checks also come back as 400.
    assertError(await h.call('POST', '/v1/vms', { name: 'bad name!' }), 400, 'bad name!');
    assertError(await h.call('POST', '/v1/vms', { name: 'x', terminateNotificationMinutes: 5 }), 400, 'scale-set');
  });

  test('a non-JSON body, a missing body and a wrong content-type are refused clearly', async () => {
    assertError(await h.call('POST', '/v1/vms', '{"name": '), 400, 'body is not valid JSON');
    assertError(await h.call('POST', '/v1/vms'), 400, 'body is required');
    assertError(await h.call('POST', '/v1/vms', '{"name":"x"}', { 'content-type': 'text/plain' }), 415, 'text/plain', 'application/json');
  });

  test('a body over 1 MiB is a 413', async () => {
    const res = await h.call('POST', '/v1/vms', { name: 'x', host: 'y'.repeat(1024 * 1024) });
    assertError(res, 413, '1 MiB');
  });

  test('DELETE removes the VM at once with no event; unknown is a 404', async () => {
    const res = await h.call('DELETE', '/v1/vms/web1');
    assert.equal(res.status, 200);
    assert.equal(res.json.name, 'web1');
    const fleet = await h.call('GET', '/v1/fleet');
    assert.ok(!fleet.json.vms.some((v: { name: string }) => v.name === 'web1'));
    assert.deepEqual((await h.call('GET', '/v1/events')).json.events, []);
    assertError(await h.call('DELETE', '/v1/vms/web1'), 404, 'web1');
    assertError(await h.call('GET', '/v1/vms/web1'), 404, 'web1');
    assert.equal((await h.call('GET', '/v1/vms/web0')).json.name, 'web0');
  });
});

describe('POST /v1/operations', () => {
  async function docOf(vm: string, version?: string) {
    const res = await h.call('GET', `/v1/vms/${vm}/document${version ? `?api-version=${version}` : ''}`);
    assert.equal(res.status, 200, res.text);
    return res.json;
  }

  test('restart → Reboot from User, 15 min of notice', async () => {
    const res = await op({ type: 'restart', vms: ['vm0'] });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(Object.keys(res.json).sort(), ['events', 'operation', 'reimagedVms', 'removedVms', 'status', 'steps']);
    assert.equal(res.json.status, 'running');
    assert.equal(res.json.steps, null);
    assert.equal(res.json.events.length, 1);
    const [e] = (await docOf('vm0')).Events;
    assert.equal(e.EventId, res.json.events[0]);
    assert.equal(e.EventType, 'Reboot');
    assert.equal(e.EventSource, 'User');
    assert.equal(e.EventStatus, 'Scheduled');
    assert.equal(e.NotBefore, new Date(now() + 15 * MIN).toUTCString());
  });

  test('freeze → Freeze from Platform, DurationInSeconds 5', async () => {
    assert.equal((await op({ type: 'freeze', vms: ['vm0'] })).status, 201);
    const [e] = (await docOf('vm0')).Events;
    assert.equal(e.EventType, 'Freeze');
    assert.equal(e.EventSource, 'Platform');
    assert.equal(e.DurationInSeconds, 5);
  });

  test('redeploy, platform-reboot and platform-redeploy', async () => {
    const cases = [
      ['redeploy', 'Redeploy', 'User', 10],
      ['platform-reboot', 'Reboot', 'Platform', 15],
      ['platform-redeploy', 'Redeploy', 'Platform', 10],
    ] as const;
    for (const [type, eventType, source, minutes] of cases) {
      await h.call('POST', '/v1/reset');
      const res = await op({ type, vms: ['vm0'] });
      assert.equal(res.status, 201, res.text);
      const [e] = (await docOf('vm0')).Events;
      assert.equal(e.EventType, eventType, type);
      assert.equal(e.EventSource, source, type);
      assert.equal(e.NotBefore, new Date(now() + minutes * MIN).toUTCString(), type);
    }
  });

  test('hardware-failure arrives Started with NotBefore ""', async () => {
    const res = await op({ type: 'hardware-failure', vms: ['vm0'] });
    assert.equal(res.status, 201, res.text);
    const [e] = (await docOf('vm0')).Events;
    assert.equal(e.EventType, 'Reboot');
    assert.equal(e.EventStatus, 'Started');
    assert.equal(e.NotBefore, '');
    // The control view keeps the scheduled time.
    const [ev] = (await h.call('GET', '/v1/events')).json.events;
    assert.equal(ev.startedBy, 'failure');
    assert.equal(ev.notBefore, iso(now()));
    assertError(await op({ type: 'hardware-failure', vms: ['web0'], notBefore: iso(now() + 60 * MIN) }), 400, 'notBefore');
  });

  test('spot-eviction: 400 on a Regular VM, Preempt with 30 s on a Spot VM', async () => {
    assertError(await op({ type: 'spot-eviction', vms: ['vm0'] }), 400, 'Spot', 'vm0');
    const res = await op({ type: 'spot-eviction', vms: ['spot0'] });
    assert.equal(res.status, 201, res.text);
    const [e] = (await docOf('spot0')).Events;
    assert.equal(e.EventType, 'Preempt');
    assert.equal(e.NotBefore, new Date(now() + 30_000).toUTCString());
  });

  test('delete without terminate notification removes the VM at once, with no event', async () => {
    const res = await op({ type: 'delete', vms: ['ss1'] });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.json.events, []);
    assert.deepEqual(res.json.removedVms, ['ss1']);
    assert.deepEqual((await h.call('GET', '/v1/events')).json.events, []);
    assertError(await h.call('GET', '/v1/vms/ss1/document'), 404, 'ss1');
  });

  test('delete with terminate notification gives a Terminate event with that notice', async () => {
    const res = await op({ type: 'delete', vms: ['ss0'] });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.json.events.length, 1);
    assert.deepEqual(res.json.removedVms, []);
    const [e] = (await docOf('ss0')).Events;
    assert.equal(e.EventType, 'Terminate');
    assert.equal(e.NotBefore, new Date(now() + 10 * MIN).toUTCString());
    // ss1 shares the tenant, so it sees the event too.
    assert.equal((await docOf('ss1')).Events[0].EventId, e.EventId);
  });

  test('reimage with OS image notification gives a Reboot with 15 min; without, reimages at once', async () => {
    const withNotice = await op({ type: 'reimage', vms: ['ss0'] });
    assert.equal(withNotice.status, 201, withNotice.text);
    assert.equal(withNotice.json.events.length, 1);
    const [e] = (await docOf('ss0')).Events;
    assert.equal(e.EventType, 'Reboot');
    assert.equal(e.NotBefore, new Date(now() + 15 * MIN).toUTCString());

    const without = await op({ type: 'reimage', vms: ['ss1'] });
    assert.equal(without.status, 201, without.text);
    assert.deepEqual(without.json.events, []);
    assert.deepEqual(without.json.reimagedVms, ['ss1']);
    assertError(await op({ type: 'reimage', vms: ['vm0'] }), 400, 'scale-set');
  });

  test('degraded-hardware is announced 7 days ahead', async () => {
    assert.equal((await op({ type: 'degraded-hardware', vms: ['vm0'] })).status, 201);
    const [e] = (await h.call('GET', '/v1/events')).json.events;
    assert.equal(e.type, 'Redeploy');
    assert.equal(e.source, 'Platform');
    assert.equal(e.notBefore, iso(now() + 7 * 24 * 60 * MIN));
  });

  test('targets: host jobs take a host, host-update takes a host or a tenant, unknown ones are 404s', async () => {
    assertError(await op({ type: 'host-update', vms: ['vm0'] }), 400, 'host-update targets a "host"');
    assertError(await op({ type: 'restart', host: 'h1' }), 400, 'not a host-level job');
    assertError(await op({ type: 'freeze', host: 'nope' }), 404, "no host named 'nope'");
    assertError(await op({ type: 'freeze', tenant: 'nope' }), 404, "no tenant named 'nope'");
    assertError(await op({ type: 'freeze' }), 400, 'target');
    assertError(await op({ type: 'freeze', vms: ['vm0'], host: 'h1' }), 400, 'exactly one target');
    const res = await op({ type: 'freeze', host: 'h1' });
    assert.equal(res.status, 201, res.text);
    const tenants = h.engine
      .events()
      .map((e) => e.tenant)
      .sort();
    assert.deepEqual(tenants, ['ss', 'web'], 'one event per tenant on the host');
  });

  test('unknown VM is a 404; unknown type and bad fields are 400s naming the field', async () => {
    assertError(await op({ type: 'restart', vms: ['nope'] }), 404, 'nope');
    assertError(await op({ type: 'reboot', vms: ['vm0'] }), 400, 'type', 'restart');
    assertError(await op({ vms: ['vm0'] }), 400, 'type', 'required');
    assertError(await op({ type: 'restart', vms: [1] }), 400, 'vms[0]: expected string, received number');
    assertError(await op({ type: 'restart', vms: 'vm0' }), 400, 'vms: expected array');
    assertError(await op({ type: 'restart', vms: ['vm0'], durationInSeconds: -2 }), 400, 'durationInSeconds');
    assertError(await op({ type: 'restart', vms: ['vm0'], durationInSeconds: 1.5 }), 400, 'durationInSeconds');
    assertError(await op({ type: 'restart', vms: ['vm0'], description: 'x'.repeat(1001) }), 400, 'description');
    assertError(await op({ type: 'restart', vms: ['vm0'], force: 'yes' }), 400, 'force');
    assertError(await op({ type: 'restart', vms: ['vm0'], when: 'now' }), 400, 'unknown field "when"');
    assertError(await op({ type: 'restart', vms: ['vm0'], notBefore: 'tomorrow' }), 400, 'notBefore', 'tomorrow');
    assertError(await op({ type: 'restart', vms: ['vm0'], notBefore: 1704067200000 }), 400, 'notBefore');
    assertError(await op({ type: 'restart', vms: ['vm0'], notBefore: '' }), 400, 'notBefore');
    assertError(await op({ type: 'restart', vms: ['vm0', 'vm0'] }), 400, 'more than once');
  });

  test('description and durationInSeconds are carried through', async () => {
    const res = await op({ type: 'freeze', vms: ['vm0'], description: 'kernel patch', durationInSeconds: 0 });
    assert.equal(res.status, 201, res.text);
    const [e] = (await docOf('vm0')).Events;
    assert.equal(e.Description, 'kernel patch');
    assert.equal(e.DurationInSeconds, 0);
  });

  test('notBefore earlier than the minimum notice is a 400, accepted with force', async () => {
    const soon = iso(now() + 5 * MIN);
    assertError(await op({ type: 'restart', vms: ['vm0'], notBefore: soon }), 400, 'minimum notice', 'force');
    const res = await op({ type: 'restart', vms: ['vm0'], notBefore: soon, force: true });
    assert.equal(res.status, 201, res.text);
    const [e] = (await h.call('GET', '/v1/events')).json.events;
    assert.equal(e.notBefore, soon);
  });

  test('notBefore takes ISO 8601 and RFC 1123', async () => {
    const later = now() + 60 * MIN;
    assert.equal((await op({ type: 'restart', vms: ['vm0'], notBefore: iso(later) })).status, 201);
    assert.equal((await op({ type: 'restart', vms: ['web0'], notBefore: new Date(later).toUTCString() })).status, 201);
    const events = (await h.call('GET', '/v1/events')).json.events;
    assert.deepEqual(
      events.map((e: { notBefore: string }) => e.notBefore),
      [iso(later), iso(later)],
    );
  });

  test('VMs of two tenants in one operation get one event per tenant', async () => {
    const res = await op({ type: 'freeze', vms: ['web0', 'web1', 'vm0'] });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.json.events.length, 2);
    const events = (await h.call('GET', '/v1/events')).json.events;
    const byTenant = Object.fromEntries(events.map((e: { tenant: string; resources: string[] }) => [e.tenant, e.resources]));
    assert.deepEqual(byTenant, { web: ['web0', 'web1'], vm0: ['vm0'] });
    for (const e of events) assert.equal(e.operation, res.json.operation);
  });

  test('GET /v1/operations lists what was created, newest first', async () => {
    const a = await op({ type: 'restart', vms: ['vm0'] });
    const b = await op({ type: 'delete', vms: ['ss1'] });
    const res = await h.call('GET', '/v1/operations');
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.json.operations.map((o: { id: string; type: string }) => [o.id, o.type]),
      [
        [b.json.operation, 'delete'],
        [a.json.operation, 'restart'],
      ],
    );
    assert.equal(res.json.next, null);
    assert.equal(res.json.operations[1].createdAt, iso(now()));
    assert.deepEqual(res.json.operations[0].removedVms, ['ss1']);
  });
});

describe('events', () => {
  test('GET /v1/events shows internal state with ISO times', async () => {
    const created = await op({ type: 'restart', vms: ['web0'] });
    const res = await h.call('GET', '/v1/events');
    assert.equal(res.status, 200);
    const [e] = res.json.events;
    assert.deepEqual(Object.keys(e).sort(), [
      'approvals',
      'createdAt',
      'description',
      'durationInSeconds',
      'endsAt',
      'id',
      'job',
      'notBefore',
      'operation',
      'resources',
      'source',
      'startedAt',
      'startedBy',
      'status',
      'tenant',
      'type',
    ]);
    assert.equal(e.id, created.json.events[0]);
    assert.equal(e.operation, created.json.operation);
    assert.equal(e.tenant, 'web');
    assert.equal(e.status, 'Scheduled');
    assert.deepEqual(e.resources, ['web0']);
    assert.equal(e.createdAt, iso(now()));
    assert.equal(e.notBefore, iso(now() + 15 * MIN));
    assert.equal(e.startedAt, null);
    assert.equal(e.endsAt, null);
    assert.equal(e.startedBy, null);
    assert.deepEqual(e.approvals, []);
    assert.deepEqual(e.job, { id: e.id, tenants: [{ tenant: 'web', event: e.id, approved: false }] });

    h.engine.approve('web1', [e.id]);
    const [started] = (await h.call('GET', '/v1/events')).json.events;
    assert.equal(started.status, 'Started');
    assert.equal(started.startedBy, 'approval');
    assert.equal(started.startedAt, iso(now()));
    assert.equal(started.notBefore, iso(now() + 15 * MIN), 'the scheduled notBefore stays visible');
    assert.equal(typeof started.endsAt, 'string');
    assert.deepEqual(started.approvals, [{ vm: 'web1', at: iso(now()) }]);
    assert.equal((await h.call('GET', `/v1/events/${e.id}`)).json.event.status, 'Started');
  });

  test('cancel: 200 with the event while Scheduled, 409 once Started, 404 unknown', async () => {
    const [id] = (await op({ type: 'restart', vms: ['vm0'] })).json.events;
    const res = await h.call('POST', `/v1/events/${id}/cancel`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.event.id, id);
    assert.deepEqual((await h.call('GET', '/v1/events')).json.events, []);
    assertError(await h.call('POST', `/v1/events/${id}/cancel`), 409, 'ended');

    const [failure] = (await op({ type: 'hardware-failure', vms: ['vm0'] })).json.events;
    assertError(await h.call('POST', `/v1/events/${failure}/cancel`), 409, 'Started');
    assertError(await h.call('POST', '/v1/events/00000000-0000-0000-0000-000000000000/cancel'), 404, 'no event');
    assertError(await h.call('GET', '/v1/events/nope'), 404, 'no event');
  });

  test('complete: 409 while Scheduled, 200 once Started, 404 unknown', async () => {
    const [id] = (await op({ type: 'restart', vms: ['vm0'] })).json.events;
    assertError(await h.call('POST', `/v1/events/${id}/complete`), 409, 'Scheduled');
    h.engine.approve('vm0', [id]);
    const res = await h.call('POST', `/v1/events/${id}/complete`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.event.id, id);
    assert.equal(res.json.event.status, 'Started');
    assert.deepEqual((await h.call('GET', '/v1/events')).json.events, []);
    assert.deepEqual(JSON.parse((await h.call('GET', '/v1/vms/vm0/document')).text).Events, []);
    assertError(await h.call('POST', '/v1/events/nope/complete'), 404, 'no event');
  });
});

describe('GET /v1/vms/:name/document', () => {
  test('is byte for byte the IMDS body, with an ETag; latest version by default', async () => {
    await op({ type: 'freeze', vms: ['web0'] });
    const res = await h.call('GET', '/v1/vms/web1/document');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    const doc = h.engine.documentFor('web1');
    assert.equal(res.text, serializeDocument(renderDocument(doc.incarnation, doc.events, '2020-07-01')));
    assert.equal(res.headers.get('etag'), `"${doc.incarnation}"`);
    assert.equal(res.json.Events[0].DurationInSeconds, 5);

    const same = await h.call('GET', '/v1/vms/web1/document?api-version=2020-07-01');
    assert.equal(same.text, res.text);
  });

  test('an older api-version shows what that version shows', async () => {
    await op({ type: 'freeze', vms: ['web0'] });
    const old = await h.call('GET', '/v1/vms/web0/document?api-version=2017-03-01');
    assert.equal(old.status, 200);
    const doc = h.engine.documentFor('web0');
    assert.equal(old.text, serializeDocument(renderDocument(doc.incarnation, doc.events, '2017-03-01')));
    assert.deepEqual(old.json.Events[0].Resources, ['_web0']);
    assert.equal('Description' in old.json.Events[0], false);
  });

  test('an invalid api-version gets IMDS’s 400 body; an unknown VM 404', async () => {
    const bad = await h.call('GET', '/v1/vms/vm0/document?api-version=latest');
    assert.equal(bad.status, 400);
    assert.match(bad.json.error, /api-version/);
    assert.deepEqual(bad.json['newest-versions'], ['2020-07-01', '2019-08-01', '2019-04-01']);
    assert.equal((await h.call('GET', '/v1/vms/vm0/document?api-version=')).status, 400);
    assertError(await h.call('GET', '/v1/vms/ghost/document'), 404, 'ghost');
  });

  test('If-None-Match with the current tag gets 304', async () => {
    const first = await h.call('GET', '/v1/vms/vm0/document');
    const tag = first.headers.get('etag')!;
    assert.equal((await h.call('GET', '/v1/vms/vm0/document', undefined, { 'if-none-match': tag })).status, 304);
    await op({ type: 'restart', vms: ['vm0'] });
    assert.equal((await h.call('GET', '/v1/vms/vm0/document', undefined, { 'if-none-match': tag })).status, 200);
  });
});

describe('clock', () => {
  test('GET /v1/clock answers now, mode and factor', async () => {
    const res = await h.call('GET', '/v1/clock');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { now: iso(now()), mode: 'manual', factor: 1, activation: 'off' });
  });

  test('advance starts an event at NotBefore, then removes it at its end', async () => {
    const [id] = (await op({ type: 'restart', vms: ['vm0'] })).json.events;
    const before = now();
    const res = await h.call('POST', '/v1/clock/advance', { seconds: 15 * 60 });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { now: iso(before + 15 * MIN), mode: 'manual', factor: 1, activation: 'off' });
    const [e] = (await h.call('GET', '/v1/events')).json.events;
    assert.equal(e.id, id);
    assert.equal(e.status, 'Started');
    assert.equal(e.startedBy, 'notBefore');
    assert.equal((await h.call('GET', '/v1/vms/vm0/document')).json.Events[0].NotBefore, '');

    assert.equal((await h.call('POST', '/v1/clock/advance', { seconds: 10 * 60 })).status, 200);
    assert.deepEqual((await h.call('GET', '/v1/events')).json.events, []);
    assert.deepEqual((await h.call('GET', '/v1/vms/vm0/document')).json.Events, []);
  });

  test('bad advance bodies are 400s naming seconds', async () => {
    assertError(await h.call('POST', '/v1/clock/advance', {}), 400, 'seconds', 'required');
    assertError(await h.call('POST', '/v1/clock/advance', { seconds: 0 }), 400, 'seconds');
    assertError(await h.call('POST', '/v1/clock/advance', { seconds: -5 }), 400, 'seconds');
    assertError(await h.call('POST', '/v1/clock/advance', { seconds: '60' }), 400, 'seconds: expected number');
    assertError(await h.call('POST', '/v1/clock/advance', { seconds: 11 * 366 * 86_400 }), 400, 'seconds');
    assertError(await h.call('POST', '/v1/clock/advance', { seconds: 1, minutes: 1 }), 400, 'unknown field "minutes"');
  });

  test('advancing a system clock is a 409', async () => {
    const sys = await start(new SystemClock());
    try {
      const clock = await sys.call('GET', '/v1/clock');
      assert.equal(clock.json.mode, 'system');
      const res = await sys.call('POST', '/v1/clock/advance', { seconds: 60 });
      assert.equal(res.status, 409);
      assert.deepEqual(res.json, {
        error: 'the clock is system time; start the emulator with --clock manual to advance it',
      });
    } finally {
      await sys.app.close();
    }
  });
});

describe('faults', () => {
  test('POST adds a fault: 201; GET lists; DELETE clears', async () => {
    const res = await h.call('POST', '/v1/faults', { vm: 'vm0', status: 410, count: 2 });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(
      { ...res.json.fault, id: 'x' },
      { id: 'x', vm: 'vm0', status: 410, latencyMs: 0, drop: false, duplicate: false, remaining: 2 },
    );
    assert.equal((await h.call('POST', '/v1/faults', { latencyMs: 250 })).status, 201);
    assert.equal((await h.call('POST', '/v1/faults', { drop: true })).status, 201);
    const list = await h.call('GET', '/v1/faults');
    assert.equal(list.json.faults.length, 3);
    assert.equal(h.faults.size, 3);
    const cleared = await h.call('DELETE', '/v1/faults');
    assert.deepEqual(cleared.json, { ok: true, cleared: 3 });
    assert.deepEqual((await h.call('GET', '/v1/faults')).json.faults, []);
  });

  test('validation', async () => {
    assertError(await h.call('POST', '/v1/faults', {}), 400, 'status', 'latencyMs', 'drop');
    assertError(await h.call('POST', '/v1/faults', { drop: false }), 400, 'at least one');
    assertError(await h.call('POST', '/v1/faults', { status: 404 }), 400, 'status', '410');
    assertError(await h.call('POST', '/v1/faults', { status: '500' }), 400, 'status');
    assertError(await h.call('POST', '/v1/faults', { latencyMs: 120_001 }), 400, 'latencyMs');
    assertError(await h.call('POST', '/v1/faults', { latencyMs: -1 }), 400, 'latencyMs');
    assertError(await h.call('POST', '/v1/faults', { status: 500, count: 0 }), 400, 'count');
    assertError(await h.call('POST', '/v1/faults', { status: 500, kind: 'x' }), 400, 'unknown field "kind"');
    assertError(await h.call('POST', '/v1/faults', { vm: 'ghost', status: 500 }), 404, 'ghost');
    assert.equal(h.faults.size, 0);
  });
});

describe('POST /v1/reset', () => {
  test('restores the fleet, drops events, faults and rate-limit state', async () => {
    await h.call('POST', '/v1/vms', { name: 'extra' });
    await h.call('DELETE', '/v1/vms/web1');
    await op({ type: 'restart', vms: ['vm0'] });
    await h.call('POST', '/v1/faults', { status: 500 });
    assert.equal(h.rateLimiter.allow('vm0'), true);
    assert.equal(h.rateLimiter.allow('vm0'), false);

    const res = await h.call('POST', '/v1/reset');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { ok: true });
    const fleet = await h.call('GET', '/v1/fleet');
    assert.deepEqual(
      fleet.json.vms.map((v: { name: string }) => v.name),
      FLEET.map((v) => v.name),
    );
    assert.deepEqual((await h.call('GET', '/v1/events')).json.events, []);
    assert.deepEqual((await h.call('GET', '/v1/operations')).json.operations, []);
    assert.equal(h.faults.size, 0);
    assert.equal(h.rateLimiter.allow('vm0'), true);
  });
});

describe('routing errors', () => {
  test('unknown route is a 404, wrong method a 405 with Allow', async () => {
    assertError(await h.call('GET', '/v1/nothing'), 404, '/v1/nothing');
    assertError(await h.call('GET', '/metadata/scheduledevents'), 404);
    const res = await h.call('DELETE', '/v1/events');
    assertError(res, 405, 'DELETE', 'GET');
    assert.match(res.headers.get('allow') ?? '', /GET/);
    assertError(await h.call('PUT', '/v1/clock'), 405);
    assertError(await h.call('GET', '/v1/clock/advance'), 405, 'POST');
    assertError(await h.call('GET', '/v1/events/abc/cancel'), 405, 'POST');
    assertError(await h.call('PATCH', '/v1/vms/vm0'), 405, 'DELETE');
  });
});
