// SPEC §4 "Which VM is asking", rule 1, over real sockets: a VM with an `address` is whoever
// connects from that source IP, and sees its own tenant's events and no other tenant's.
// Part 1 binds client sockets to 127.0.0.x (Linux routes all of 127/8 to lo); part 2 puts
// each VM in its own network namespace behind a veth pair and runs the client there.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Emulator } from '../../src/emulator/emulator.js';
import type { VmSpec } from '../../src/emulator/engine/fleet.js';
import type { ScheduledEventsDocument } from '../../src/protocol/types.js';
import { COMMAND_TIMEOUT_MS, createNamespaces, netnsUnavailable, removeNamespaces, runIn, type Namespace } from '../support/netns.js';

const EVENTS = '/metadata/scheduledevents?api-version=2020-07-01';
const COMPUTE = '/metadata/instance/compute?api-version=2021-02-01';
const REQUEST_TIMEOUT_MS = 3_000;

/** Two tenants of note and a bystander: availability sets `web` (two VMs) and `db`, and standalone `solo`. */
function fleetAt(addresses: { web0: string; web1: string; db0: string; solo: string }): VmSpec[] {
  return [
    { name: 'web0', tenant: 'web', tenantKind: 'availabilitySet', faultDomain: 0, address: addresses.web0 },
    { name: 'web1', tenant: 'web', tenantKind: 'availabilitySet', faultDomain: 1, address: addresses.web1 },
    { name: 'db0', tenant: 'db', tenantKind: 'availabilitySet', address: addresses.db0 },
    { name: 'solo', address: addresses.solo },
  ];
}

interface Reply {
  status: number;
  body: unknown;
}

/** One request from a chosen source address; fetch cannot bind its socket. */
function requestFrom(
  localAddress: string,
  port: number,
  path: string,
  options: { method?: string; body?: string; host?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: options.host ?? '127.0.0.1',
        port,
        localAddress,
        method: options.method ?? 'GET',
        path,
        headers: { Metadata: 'true', ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
        agent: false,
        timeout: REQUEST_TIMEOUT_MS,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, body: text === '' ? undefined : JSON.parse(text) });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${path} within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

async function documentFrom(localAddress: string, port: number, host?: string): Promise<ScheduledEventsDocument> {
  const res = await requestFrom(localAddress, port, EVENTS, host === undefined ? {} : { host });
  assert.equal(res.status, 200, `from ${localAddress}: ${JSON.stringify(res.body)}`);
  return res.body as ScheduledEventsDocument;
}

const summary = (doc: ScheduledEventsDocument) => doc.Events.map((e) => ({ id: e.EventId, resources: e.Resources, status: e.EventStatus }));

describe('source address identity over loopback (127.0.0.x)', () => {
  const at = { web0: '127.0.0.2', web1: '127.0.0.3', db0: '127.0.0.4', solo: '127.0.0.5' };
  let emulator: Emulator;
  let port: number;
  let webEvent: string;
  let dbEvent: string;

  before(async () => {
    emulator = await Emulator.create({ fleet: fleetAt(at), clock: 'manual', rateLimit: 0 });
    await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
    port = (emulator.imds.server.address() as AddressInfo).port;
    webEvent = emulator.engine.createOperation({ type: 'freeze', vms: ['web1'] }).events[0]!;
    dbEvent = emulator.engine.createOperation({ type: 'freeze', vms: ['db0'] }).events[0]!;
  });
  after(() => emulator?.close());

  it("each VM sees its own tenant's events and no other tenant's", async () => {
    const web = [{ id: webEvent, resources: ['web1'], status: 'Scheduled' }];
    assert.deepEqual(summary(await documentFrom(at.web0, port)), web, 'web0 sees the event of its availability set');
    assert.deepEqual(summary(await documentFrom(at.web1, port)), web);
    assert.deepEqual(summary(await documentFrom(at.db0, port)), [{ id: dbEvent, resources: ['db0'], status: 'Scheduled' }]);
    assert.deepEqual((await documentFrom(at.solo, port)).Events, []);
  });

  it('the compute metadata names the VM at each address', async () => {
    for (const [name, address] of Object.entries(at)) {
      const res = await requestFrom(address, port, COMPUTE);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal((res.body as { name: string }).name, name, `from ${address}`);
    }
  });

  it('the source address wins over a /vms/NAME prefix, so a VM cannot read another tenant', async () => {
    const res = await requestFrom(at.web0, port, `/vms/db0${EVENTS}`);
    assert.equal(res.status, 200);
    assert.deepEqual(
      (res.body as ScheduledEventsDocument).Events.map((e) => e.EventId),
      [webEvent],
    );
    const compute = await requestFrom(at.solo, port, `/vms/db0${COMPUTE}`);
    assert.equal((compute.body as { name: string }).name, 'solo');
  });

  it('an address that is no VM gets 404 naming both ways', async () => {
    for (const path of [EVENTS, COMPUTE]) {
      const res = await requestFrom('127.0.0.9', port, path);
      assert.equal(res.status, 404, path);
      const error = (res.body as { error: string }).error;
      assert.match(error, /source address/);
      assert.match(error, /"address"/);
      assert.match(error, /\/vms\/NAME\/metadata\/(scheduledevents|instance\/compute)/);
    }
  });

  it("an approval from web0's address starts the web event and leaves the db event Scheduled", async () => {
    const body = JSON.stringify({ StartRequests: [{ EventId: webEvent }] });
    const res = await requestFrom(at.web0, port, EVENTS, { method: 'POST', body });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body, undefined);
    assert.deepEqual(summary(await documentFrom(at.web1, port)), [{ id: webEvent, resources: ['web1'], status: 'Started' }]);
    assert.deepEqual(summary(await documentFrom(at.db0, port)), [{ id: dbEvent, resources: ['db0'], status: 'Scheduled' }]);
    assert.equal(emulator.engine.event(dbEvent).status, 'Scheduled');
  });

  it("db0's address cannot approve the web event", async () => {
    const body = JSON.stringify({ StartRequests: [{ EventId: dbEvent }, { EventId: webEvent }] });
    const res = await requestFrom(at.db0, port, EVENTS, { method: 'POST', body });
    assert.equal(res.status, 400);
    assert.match((res.body as { error: string }).error, /db0/);
    // All ids are checked first: the db event, named alongside, is not approved either.
    assert.equal(emulator.engine.event(dbEvent).status, 'Scheduled');
  });
});

describe('source address identity behind an IPv6 socket (IPv4-mapped sources)', () => {
  // Listening on an IPv6 socket, Node reports IPv4 peers as ::ffff:a.b.c.d; the fleet's plain IPv4 must still match.
  let emulator: Emulator | undefined;
  let port = 0;
  let unavailable: string | undefined;

  before(async () => {
    emulator = await Emulator.create({
      fleet: [
        { name: 'v4', address: '127.0.0.2' },
        { name: 'mapped', address: '::ffff:127.0.0.3' },
      ],
      clock: 'manual',
      rateLimit: 0,
    });
    try {
      await emulator.listen({ imds: { host: '::ffff:127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
      port = (emulator.imds.server.address() as AddressInfo).port;
    } catch (err) {
      unavailable = `cannot listen on an IPv6 socket: ${(err as Error).message}`;
    }
  });
  after(() => emulator?.close());

  it('a plain IPv4 address and its ::ffff: form both match', async (t) => {
    if (unavailable) return t.skip(unavailable);
    for (const [name, address] of [
      ['v4', '127.0.0.2'],
      ['mapped', '127.0.0.3'],
    ] as const) {
      const res = await requestFrom(address, port, COMPUTE);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal((res.body as { name: string }).name, name);
    }
  });
});

describe('source address identity across network namespaces', () => {
  let unavailable: string | undefined;
  let namespaces: Namespace[] = [];
  let emulator: Emulator | undefined;
  let port = 0;
  let webEvent = '';
  let dbEvent = '';
  let ran = false;

  before(async () => {
    unavailable = await netnsUnavailable();
    if (unavailable) {
      // CI can insist that this part runs rather than skips.
      if (process.env.FOREWARN_REQUIRE_NETNS === '1') throw new Error(`FOREWARN_REQUIRE_NETNS=1 but ${unavailable}`);
      return;
    }
    ran = true;
    await removeNamespaces(true);
    // web0, web1, db0 in namespaces; solo too, since it costs one more veth.
    namespaces = await createNamespaces(4);
    const [web0, web1, db0, solo] = namespaces as [Namespace, Namespace, Namespace, Namespace];
    emulator = await Emulator.create({
      fleet: fleetAt({ web0: web0.address, web1: web1.address, db0: db0.address, solo: solo.address }),
      clock: 'manual',
      rateLimit: 0,
    });
    // Only on the first host-side address: reachable from every namespace through its default route, and from nowhere else.
    await emulator.listen({ imds: { host: web0.hostAddress, port: 0 }, control: { host: '127.0.0.1', port: 0 } });
    port = (emulator.imds.server.address() as AddressInfo).port;
    webEvent = emulator.engine.createOperation({ type: 'freeze', vms: ['web1'] }).events[0]!;
    dbEvent = emulator.engine.createOperation({ type: 'freeze', vms: ['db0'] }).events[0]!;
  });

  after(async () => {
    await emulator?.close();
    if (ran) await removeNamespaces(false);
  });

  /** Runs a plain node:http client inside the namespace: the events document and the compute name, as JSON on stdout. */
  async function askFrom(ns: Namespace): Promise<{ events: Reply; compute: Reply }> {
    const script = `
      const http = require('node:http');
      const [host, port, events, compute] = process.argv.slice(1);
      const get = (path) => new Promise((resolve, reject) => {
        const req = http.get({ host, port: Number(port), path, headers: { Metadata: 'true' }, agent: false, timeout: ${REQUEST_TIMEOUT_MS} }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => { text += c; });
          res.on('end', () => resolve({ status: res.statusCode, body: text === '' ? null : JSON.parse(text) }));
        });
        req.on('timeout', () => req.destroy(new Error('timed out')));
        req.on('error', reject);
      });
      Promise.all([get(events), get(compute)]).then(
        ([events, compute]) => process.stdout.write(JSON.stringify({ events, compute })),
        (err) => { console.error(String(err)); process.exit(1); },
      );`;
    const env: NodeJS.ProcessEnv = { ...process.env };
    // The test runner's own settings would make the child a test file or load tsx.
    delete env.NODE_OPTIONS;
    delete env.NODE_TEST_CONTEXT;
    const args = ['-e', script, namespaces[0]!.hostAddress, String(port), EVENTS, COMPUTE];
    const { stdout } = await runIn(ns.name, process.execPath, args, { env, timeoutMs: COMMAND_TIMEOUT_MS });
    return JSON.parse(stdout) as { events: Reply; compute: Reply };
  }

  it("each namespace's VM sees its own tenant's document and no other's", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const [web0, web1, db0, solo] = namespaces as [Namespace, Namespace, Namespace, Namespace];
    const [a, b, c, d] = await Promise.all([askFrom(web0), askFrom(web1), askFrom(db0), askFrom(solo)]);
    const expected: [string, { events: Reply; compute: Reply }, { id: string; resources: string[] }[]][] = [
      ['web0', a, [{ id: webEvent, resources: ['web1'] }]],
      ['web1', b, [{ id: webEvent, resources: ['web1'] }]],
      ['db0', c, [{ id: dbEvent, resources: ['db0'] }]],
      ['solo', d, []],
    ];
    for (const [name, got, events] of expected) {
      assert.equal(got.events.status, 200, `${name}: ${JSON.stringify(got.events.body)}`);
      const doc = got.events.body as ScheduledEventsDocument;
      assert.deepEqual(
        doc.Events.map((e) => ({ id: e.EventId, resources: e.Resources })),
        events,
        name,
      );
      assert.equal(got.compute.status, 200, `${name}: ${JSON.stringify(got.compute.body)}`);
      assert.equal((got.compute.body as { name: string }).name, name);
    }
  });

  it('a source in the root namespace that is no VM gets 404 naming both ways', async (t) => {
    if (unavailable) return t.skip(unavailable);
    const res = await requestFrom(namespaces[1]!.hostAddress, port, EVENTS, { host: namespaces[0]!.hostAddress });
    assert.equal(res.status, 404);
    assert.match((res.body as { error: string }).error, /source address.*\/vms\/NAME\/metadata\/scheduledevents/);
  });
});
