// The GET fast path in front of fastify: which requests it answers itself, which it hands on
// untouched, and that what it answers is byte for byte what fastify's routes answer.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ManualClock, SystemClock } from '../../../src/shared/clock.js';
import { Engine, type EngineOptions } from '../../../src/emulator/engine/engine.js';
import { Timing } from '../../../src/emulator/engine/timing.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { Callers } from '../../../src/emulator/imds/callers.js';
import { eventsFastPath } from '../../../src/emulator/imds/fast-path.js';
import { Identifier } from '../../../src/emulator/imds/identity.js';
import { buildImdsServer } from '../../../src/emulator/imds/server.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { rawHttp } from '../../support/imds-client.js';
import { T0 } from '../../support/imds-server.js';
import { waitFor } from '../../support/wait.js';

/** What the stand-in for fastify answers: the fast path handed the request on. */
const HANDED_ON = 599;
const PLAIN = 'GET /metadata/scheduledevents?api-version=2020-07-01 HTTP/1.1\r\nHost: x\r\nMetadata: true\r\n';

interface Rig {
  engine: Engine;
  faults: FaultRegistry;
  limiter: RateLimiter;
  port: number;
  close(): Promise<void>;
}

/** The fast path alone on a bare server; whatever it hands on gets 599. */
async function fastPathRig(fleet: readonly VmSpec[], rateLimit = 0, engineOptions: Partial<EngineOptions> = {}): Promise<Rig> {
  const engine = new Engine({ clock: new ManualClock(T0), fleet, ...engineOptions });
  const faults = new FaultRegistry();
  const limiter = new RateLimiter(rateLimit, () => 0);
  const callers = new Callers(engine, new Identifier(engine.fleet), limiter);
  const fast = eventsFastPath({ engine, faults, rateLimiter: limiter }, { callers, logError: () => {} });
  const server: Server = createServer((req, res) => {
    if (fast(req, res)) return;
    res.writeHead(HANDED_ON);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    engine,
    faults,
    limiter,
    port: (server.address() as AddressInfo).port,
    close: () => {
      callers.close();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** The status line's code of a raw request's answer. */
async function statusOf(port: number, request: string): Promise<number> {
  const text = await rawHttp(port, `${request}Connection: close\r\n\r\n`);
  return Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1]);
}

describe('IMDS fast path: what it answers itself', () => {
  let rig: Rig;
  before(async () => {
    rig = await fastPathRig([{ name: 'vm0' }]);
  });
  after(() => rig.close());
  afterEach(() => rig.faults.clear());

  it('answers plain GETs of a valid request, by the only VM or by prefix', async () => {
    const requests = [
      PLAIN,
      PLAIN.replace('Metadata: true', 'mEtAdAtA: TRUE'),
      PLAIN.replace('/metadata', '/vms/vm0/metadata'),
      // The preview needs no Metadata header.
      'GET /metadata/scheduledevents?api-version=2017-03-01 HTTP/1.1\r\nHost: x\r\n',
    ];
    for (const request of requests) assert.equal(await statusOf(rig.port, request), 200, request);
  });

  it('answers 304 to the current tag and 200 to another', async () => {
    assert.equal(await statusOf(rig.port, `${PLAIN}If-None-Match: "1"\r\n`), 304);
    assert.equal(await statusOf(rig.port, `${PLAIN}if-none-match: W/"1", "7"\r\n`), 304);
    assert.equal(await statusOf(rig.port, `${PLAIN}If-None-Match: "2"\r\n`), 200);
  });

  it('hands on, untouched, every request that is not plain or not valid', async () => {
    const requests = [
      PLAIN.replace('GET', 'POST'),
      PLAIN.replace('GET', 'HEAD'),
      PLAIN.replace('?api-version=2020-07-01', ''),
      PLAIN.replace('2020-07-01', 'latest'),
      PLAIN.replace('2020-07-01', '2020-07-01&x=1'),
      PLAIN.replace('2020-07-01', '2020-07-01&api-version=2020-07-01'),
      PLAIN.replace('2020-07-01', '%32020-07-01'),
      PLAIN.replace('?api-version', '?API-Version'),
      PLAIN.replace('scheduledevents', 'scheduledevents/'),
      PLAIN.replace('/metadata', '/Metadata'),
      PLAIN.replace('/metadata', '/vms/%76m0/metadata'),
      PLAIN.replace('/metadata', '/vms//metadata'),
      PLAIN.replace('/metadata', '/vms/a/b/metadata'),
      PLAIN.replace('/metadata', '/vms/nobody/metadata'),
      PLAIN.replace('/metadata', '/x/vm0/metadata'),
      `${PLAIN}X-Forwarded-For: 10.0.0.1\r\n`,
      `${PLAIN}x-forwarded-for:\r\n`,
      PLAIN.replace('Metadata: true\r\n', ''),
      PLAIN.replace('Metadata: true', 'Metadata: yes'),
      `${PLAIN}Metadata: true\r\n`,
      `${PLAIN}If-None-Match: "1"\r\nIf-None-Match: "1"\r\n`,
    ];
    for (const request of requests) assert.equal(await statusOf(rig.port, request), HANDED_ON, request);
  });

  it('hands on while any fault is set, before the rate limit counts the request', async () => {
    const limited = await fastPathRig([{ name: 'vm0' }], 1);
    try {
      limited.faults.add({ status: 500 });
      assert.equal(await statusOf(limited.port, PLAIN), HANDED_ON);
      assert.equal(limited.faults.size, 1, "the fault is the routes' to take");
      limited.faults.clear();
      // The request handed on was not counted: the one token a second is still there.
      assert.equal(await statusOf(limited.port, PLAIN), 200);
      assert.equal(await statusOf(limited.port, PLAIN), 429);
    } finally {
      await limited.close();
    }
  });
});

describe('IMDS fast path: activation', () => {
  it("holds a first request on a system clock, and answers the engine's 404 if the VM goes meanwhile", async () => {
    // 120 s at timing x60: a 2 s hold, ample on a loaded machine; the test waits for the hold, not for a time.
    const rig = await fastPathRig([{ name: 'a' }, { name: 'b' }], 0, {
      clock: new SystemClock(),
      timing: new Timing(60),
      activation: { mode: 'realistic', firstCallDelaySeconds: 120 },
    });
    try {
      const held = rawHttp(rig.port, `${PLAIN.replace('/metadata', '/vms/a/metadata')}Connection: close\r\n\r\n`);
      await waitFor('the first request held', () => rig.engine.activationOf('a').status === 'enabling', 5_000, 5);
      rig.engine.removeVm('a');
      const text = await held;
      assert.match(text, /^HTTP\/1\.1 404 /);
      assert.match(text, /content-type: application\/json; charset=utf-8/i);
      assert.deepEqual(Object.keys(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as object), ['error']);
    } finally {
      await rig.close();
    }
  });
});

describe('IMDS fast path: identity', () => {
  let rig: Rig;
  before(async () => {
    rig = await fastPathRig([{ name: 'a0' }, { name: 'a1', address: '127.0.0.1' }, { name: 'b0' }]);
  });
  after(() => rig.close());

  it('takes the VM by source address first, then by prefix; several VMs and no prefix is handed on', async () => {
    rig.engine.createOperation({ type: 'freeze', vms: ['b0'] });
    // From 127.0.0.1 the asker is a1 whatever the prefix says (SPEC §4 order), so b0's event is not seen.
    const text = await rawHttp(rig.port, `${PLAIN.replace('/metadata', '/vms/b0/metadata')}Connection: close\r\n\r\n`);
    assert.ok(text.endsWith('{"DocumentIncarnation":1,"Events":[]}'), text);
    rig.engine.removeVm('a1');
    assert.equal(await statusOf(rig.port, PLAIN.replace('/metadata', '/vms/b0/metadata')), 200);
    assert.equal(await statusOf(rig.port, PLAIN), HANDED_ON);
  });

  it('a one-VM fleet whose VM is replaced under the same name answers for the new VM', async () => {
    const one = await fastPathRig([{ name: 'solo' }]);
    try {
      assert.equal(await statusOf(one.port, PLAIN), 200);
      one.engine.removeVm('solo');
      assert.equal(await statusOf(one.port, PLAIN), HANDED_ON, 'no VM: the routes answer 404');
      one.engine.addVm({ name: 'solo', tenant: 'cs', tenantKind: 'cloudService' });
      one.engine.createOperation({ type: 'freeze', vms: ['solo'] });
      const text = await rawHttp(one.port, `${PLAIN.replace('2020-07-01', '2017-03-01')}Connection: close\r\n\r\n`);
      assert.match(text, /"Resources":\["solo"\]/, 'the new VM is a role instance: no underscore');
    } finally {
      await one.close();
    }
  });
});

describe('IMDS fast path: the same answers as the routes', () => {
  const fleet: VmSpec[] = [
    { name: 'web0', tenant: 'web', tenantKind: 'availabilitySet' },
    { name: 'web1', tenant: 'web', tenantKind: 'availabilitySet' },
    { name: 'FrontEnd_IN_0', tenant: 'cs', tenantKind: 'cloudService' },
  ];
  let engine: Engine;
  let fast: FastifyInstance;
  let routes: FastifyInstance;
  const portOf = (app: FastifyInstance) => (app.server.address() as AddressInfo).port;

  before(async () => {
    engine = new Engine({ clock: new ManualClock(T0), fleet });
    const ctx = { engine, faults: new FaultRegistry(), rateLimiter: new RateLimiter(0) };
    fast = buildImdsServer(ctx);
    routes = buildImdsServer(ctx, { fastPath: false });
    await Promise.all([fast.listen({ host: '127.0.0.1', port: 0 }), routes.listen({ host: '127.0.0.1', port: 0 })]);
    engine.createOperation({ type: 'freeze', vms: ['web0'] });
    engine.createOperation({ type: 'restart', vms: ['FrontEnd_IN_0'] });
  });
  after(() => Promise.all([fast.close(), routes.close()]));

  /** The whole answer but the Date header. */
  const answer = async (port: number, request: string) =>
    (await rawHttp(port, `${request}Connection: close\r\n\r\n`)).replace(/\r\nDate: [^\r]*/, '');

  it('status, headers and body match for 200 and 304 answers, at every api-version', async () => {
    for (const version of ['2017-03-01', '2017-08-01', '2019-08-01', '2020-07-01']) {
      for (const vm of ['web0', 'web1', 'FrontEnd_IN_0']) {
        for (const extra of ['', 'If-None-Match: "2"\r\n', 'If-None-Match: "9"\r\n']) {
          const request = `${PLAIN.replace('/metadata', `/vms/${vm}/metadata`).replace('2020-07-01', version)}${extra}`;
          const [a, b] = await Promise.all([answer(portOf(fast), request), answer(portOf(routes), request)]);
          assert.equal(a, b, request);
          assert.match(a, /^HTTP\/1\.1 (200|304) /, request);
        }
      }
    }
  });

  it('the 429 of the rate limit is the same on both servers', async () => {
    const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'vm0' }] });
    // One token a second and frozen time: each server's first request takes it, the next gets 429.
    const ctx = () => ({ engine, faults: new FaultRegistry(), rateLimiter: new RateLimiter(1, () => 0) });
    const apps = [buildImdsServer(ctx()), buildImdsServer(ctx(), { fastPath: false })];
    try {
      await Promise.all(apps.map((app) => app.listen({ host: '127.0.0.1', port: 0 })));
      const [first, limited] = await Promise.all(
        apps.map(async (app) => [await answer(portOf(app), PLAIN), await answer(portOf(app), PLAIN)] as const),
      );
      assert.match(first![0], /^HTTP\/1\.1 200 /);
      assert.match(first![1], /^HTTP\/1\.1 429 /);
      assert.deepEqual(first, limited);
    } finally {
      await Promise.all(apps.map((app) => app.close()));
    }
  });

  it('an answer a rule refuses comes from the routes, the same on both servers', async () => {
    for (const request of [PLAIN, PLAIN.replace('2020-07-01', 'latest'), `${PLAIN}X-Forwarded-For: x\r\n`]) {
      const [a, b] = await Promise.all([answer(portOf(fast), request), answer(portOf(routes), request)]);
      assert.equal(a, b, request);
      assert.match(a, /^HTTP\/1\.1 (400|404) /, request);
    }
  });
});
