// Other web pages and DNS-rebinding names must not drive the control API; curl and the dashboard still can.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { lookup } from 'node:dns/promises';
import { hostname, networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium } from 'playwright-core';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { isLoopbackName, normalizeAllowedHost } from '../../../src/emulator/control/request-guard.js';
import { CHROMIUM, chromiumUnavailable } from '../../support/browser.js';

const TOKEN = 'guard-token';
const pageDir = mkdtempSync(join(tmpdir(), 'forewarn-guard-'));
writeFileSync(join(pageDir, 'index.html'), '<!doctype html><title>page</title>');
after(() => rmSync(pageDir, { recursive: true, force: true }));

function build(options: { token?: string; allowHosts?: string[] } = {}): FastifyInstance {
  const clock = new ManualClock(Date.parse('2024-01-01T00:00:00Z'));
  const engine = new Engine({ clock, fleet: [{ name: 'vm0' }] });
  return buildControlServer(
    { engine, clock, faults: new FaultRegistry(), rateLimiter: new RateLimiter(), token: options.token, allowHosts: options.allowHosts },
    { dashboardDir: pageDir },
  );
}

/** Listens on a free loopback port for the tests of the enclosing describe, handing the port to `onPort`; closes after them. */
function listenForTests(app: FastifyInstance, onPort: (port: number) => void): void {
  before(async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    onPort((app.server.address() as AddressInfo).port);
  });
  after(async () => app.close());
}

interface Reply {
  status: number;
  json: { error?: string } | undefined;
}

/** Real HTTP with a Host header of our choosing, which fetch does not allow. */
function send(port: number, method: string, path: string, headers: Record<string, string>, address = '127.0.0.1'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        let json: Reply['json'];
        try {
          json = text === '' ? undefined : (JSON.parse(text) as Reply['json']);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Both ways in: fastify's inject() and a real socket. */
type Transport = (method: string, path: string, headers: Record<string, string>) => Promise<Reply>;

function transports(app: FastifyInstance, port: () => number): [string, Transport][] {
  return [
    [
      'inject',
      async (method, path, headers) => {
        const res = await app.inject({ method: method as 'GET', url: path, headers });
        let json: Reply['json'];
        try {
          json = res.body === '' ? undefined : (JSON.parse(res.body) as Reply['json']);
        } catch {
          json = undefined;
        }
        return { status: res.statusCode, json };
      },
    ],
    ['http', (method, path, headers) => send(port(), method, path, headers)],
  ];
}

describe('without a token', () => {
  const app = build();
  let port = 0;
  listenForTests(app, (p) => (port = p));

  for (const [name, call] of transports(app, () => port)) {
    describe(name, () => {
      const own = () => `127.0.0.1:${port}`;

      test('POST /v1/reset from another origin is refused, naming the Origin', async () => {
        for (const origin of [
          'http://evil.example',
          'null',
          `http://127.0.0.1:${port + 1}`,
          `https://127.0.0.1:${port}`,
          `http://localhost:${port}`,
        ]) {
          const res = await call('POST', '/v1/reset', { host: own(), origin });
          assert.equal(res.status, 403, origin);
          assert.match(res.json?.error ?? '', new RegExp(`Origin "${origin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}" is not`), origin);
          assert.match(res.json?.error ?? '', /own origin/);
        }
      });

      test('a DNS-rebinding Host can neither read nor write, and is told about --allow-host', async () => {
        for (const [method, path] of [
          ['GET', '/v1/fleet'],
          ['POST', '/v1/reset'],
          ['GET', '/'],
        ] as const) {
          const res = await call(method, path, { host: `evil.example:${port}` });
          assert.equal(res.status, 403, `${method} ${path}`);
          assert.match(res.json?.error ?? '', /Host "evil\.example:\d+" is not a loopback name or address/);
          assert.match(res.json?.error ?? '', /--allow-host evil\.example/);
          assert.match(res.json?.error ?? '', /Or give the emulator a token \(FOREWARN_TOKEN or --token-file\)/);
        }
        // A rebinding page sends its own Origin, which matches its Host: the Host check is what stops it.
        const res = await call('POST', '/v1/reset', { host: `evil.example:${port}`, origin: `http://evil.example:${port}` });
        assert.equal(res.status, 403);
      });

      test('a bodiless cross-site request without Origin is refused by Sec-Fetch-Site; a navigation is not', async () => {
        for (const site of ['cross-site', 'same-site']) {
          const res = await call('POST', '/v1/reset', { host: own(), 'sec-fetch-site': site, 'sec-fetch-mode': 'no-cors' });
          assert.equal(res.status, 403, site);
          assert.match(res.json?.error ?? '', new RegExp(`Sec-Fetch-Site "${site}"`));
        }
        const img = await call('GET', '/v1/fleet', { host: own(), 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' });
        assert.equal(img.status, 403);
        // A link followed from another site shows the answer to the user only.
        const link = await call('GET', '/v1/fleet', { host: own(), 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' });
        assert.equal(link.status, 200);
        const page = await call('GET', '/', { host: own(), 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' });
        assert.equal(page.status, 200);
        const form = await call('POST', '/v1/reset', { host: own(), 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' });
        assert.equal(form.status, 403);
      });

      test('curl without Origin, and the same origin, still work on every loopback name', async () => {
        assert.equal((await call('POST', '/v1/reset', { host: own() })).status, 200);
        for (const host of [
          `127.0.0.1:${port}`,
          `localhost:${port}`,
          `LOCALHOST:${port}`,
          `[::1]:${port}`,
          `127.8.9.10:${port}`,
          `dash.localhost:${port}`,
          'localhost',
        ]) {
          const res = await call('POST', '/v1/reset', { host, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' });
          assert.equal(res.status, 200, `${host}: ${res.json?.error}`);
          assert.equal((await call('GET', '/v1/fleet', { host })).status, 200, host);
        }
        assert.equal((await call('GET', '/', { host: own(), 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate' })).status, 200);
        // The default port is left out of an Origin, and may or may not be in Host.
        assert.equal((await call('POST', '/v1/reset', { host: 'localhost:80', origin: 'http://localhost' })).status, 200);
      });

      test('a Host that is no host name is refused', async () => {
        for (const host of ['evil.example@127.0.0.1', '127.0.0.1/x', '[nope]:1', '127.0.0.1:80:80']) {
          const res = await call('GET', '/v1/fleet', { host });
          assert.equal(res.status, 403, host);
        }
      });
    });
  }
});

/** One raw HTTP exchange, for requests the HTTP clients will not send; answers the status line's code. */
function raw(port: number, text: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(text));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (answer += d));
    socket.on('end', () => resolve(Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0)));
    socket.on('error', reject);
  });
}

describe('without any Host header', () => {
  const app = build();
  after(async () => app.close());

  test('an HTTP/1.0 client that sends none is not a browser, and is answered; an empty Host is refused', async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    assert.equal(await raw(port, 'GET /v1/fleet HTTP/1.0\r\n\r\n'), 200);
    assert.equal(await raw(port, 'GET /v1/fleet HTTP/1.0\r\nOrigin: http://evil.example\r\n\r\n'), 403);
    assert.equal(await raw(port, 'GET /v1/fleet HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n'), 403);
  });
});

describe('the OpenAPI document', () => {
  test('lists 403 on every operation without a token, and says when it happens', async () => {
    for (const [token, has403] of [
      [undefined, true],
      [TOKEN, false],
    ] as const) {
      const app = build({ token });
      const res = await app.inject({ method: 'GET', url: '/v1/openapi.json', headers: token ? { authorization: `Bearer ${token}` } : {} });
      const doc = res.json() as {
        info: { description: string };
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      };
      for (const [path, ops] of Object.entries(doc.paths)) {
        // The process routes answer 403 with or without a token while real impact is off (--impact).
        const impactRoute = path === '/v1/vms/{name}/process';
        // The ARM routes always take a token of their own: the guard never answers them.
        const armRoute = path.startsWith('/subscriptions/');
        for (const [method, op] of Object.entries(ops)) {
          assert.equal('403' in op.responses, (has403 || impactRoute) && !armRoute, `${method} ${path}`);
        }
      }
      assert.match(doc.info.description, /Without a token, a request sent by another web page .* gets 403/);
      await app.close();
    }
  });
});

describe('--allow-host', () => {
  const app = build({ allowHosts: ['Dev.Example.', '192.0.2.77', '[fd00::77]'] });
  after(async () => app.close());

  test('lets the named Hosts in, with their own origin, and nothing else', async () => {
    for (const host of ['dev.example:8170', 'DEV.example.:8170', '192.0.2.77:8170', '[fd00::77]:8170']) {
      const res = await app.inject({ method: 'POST', url: '/v1/reset', headers: { host, origin: `http://${host}` } });
      assert.equal(res.statusCode, 200, `${host}: ${res.body}`);
    }
    for (const host of ['sub.dev.example:8170', '192.0.2.78:8170', 'dev.example.evil:8170']) {
      assert.equal((await app.inject({ method: 'GET', url: '/v1/fleet', headers: { host } })).statusCode, 403, host);
    }
    const cross = await app.inject({
      method: 'POST',
      url: '/v1/reset',
      headers: { host: 'dev.example:8170', origin: 'http://evil.example' },
    });
    assert.equal(cross.statusCode, 403);
  });

  test('names are checked and normalized', () => {
    assert.equal(normalizeAllowedHost('Dev.Example.'), 'dev.example');
    assert.equal(normalizeAllowedHost('[FD00::77]'), '[fd00::77]');
    assert.equal(normalizeAllowedHost('fd00::77'), '[fd00::77]');
    for (const bad of ['', 'dev.example:8170', 'http://dev.example', 'a b', 'a/b', 'x@y']) {
      assert.throws(() => normalizeAllowedHost(bad), /is not a host name or address|without a port/, bad);
    }
    assert.throws(() => build({ allowHosts: ['dev.example:1'] }), /allowHosts\[0\]: "dev\.example:1".*without a port/);
  });

  test('the loopback names', () => {
    for (const name of ['localhost', 'a.localhost', '127.0.0.1', '127.255.0.9', '[::1]', '[::ffff:7f00:1]'])
      assert.ok(isLoopbackName(name), name);
    for (const name of ['localhost.example', 'notlocalhost', '128.0.0.1', '[::2]', '0.0.0.0']) assert.ok(!isLoopbackName(name), name);
  });
});

describe('with a token', () => {
  const app = build({ token: TOKEN });
  let port = 0;
  listenForTests(app, (p) => (port = p));

  for (const [name, call] of transports(app, () => port)) {
    test(`${name}: the token decides for the API, whatever the Origin and Host`, async () => {
      const hostile = { host: `evil.example:${port}`, origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' };
      assert.equal((await call('POST', '/v1/reset', { ...hostile, authorization: `Bearer ${TOKEN}` })).status, 200);
      const denied = await call('POST', '/v1/reset', hostile);
      assert.equal(denied.status, 401);
      assert.deepEqual(denied.json, { error: 'missing or wrong bearer token' });
      assert.equal((await call('POST', '/v1/reset', { host: `127.0.0.1:${port}` })).status, 401);
    });

    test(`${name}: the page, which asks for the token, is not served under a rebinding name`, async () => {
      assert.equal((await call('GET', '/', { host: `127.0.0.1:${port}` })).status, 200);
      const res = await call('GET', '/', { host: `evil.example:${port}` });
      assert.equal(res.status, 403);
      assert.match(res.json?.error ?? '', /--allow-host evil\.example/);
      assert.doesNotMatch(res.json?.error ?? '', /give the emulator a token/);
    });
  }
});

/** This machine's first non-loopback IPv4 address, if it has one. */
function outsideAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((i) => i !== undefined && i.family === 'IPv4' && !i.internal)?.address;
}

describe('the address and the name it listens on', () => {
  test('the address a request arrived on counts as allowed; another address does not', async (t) => {
    const address = outsideAddress();
    if (address === undefined) return t.skip('this machine has no non-loopback IPv4 address');
    const emulator = await Emulator.create({ clock: 'manual' });
    try {
      await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '0.0.0.0', port: 0 } });
      const port = (emulator.control.server.address() as AddressInfo).port;
      const own = await send(port, 'POST', '/v1/reset', { host: `${address}:${port}`, origin: `http://${address}:${port}` }, address);
      assert.equal(own.status, 200, own.json?.error);
      const other = await send(port, 'GET', '/v1/fleet', { host: `192.0.2.254:${port}` }, address);
      assert.equal(other.status, 403);
      assert.match(other.json?.error ?? '', /--allow-host 192\.0\.2\.254/);
    } finally {
      await emulator.close();
    }
  });

  test('the name given to listen on counts as allowed, and EmulatorOptions.allowHosts works', async (t) => {
    const name = hostname().toLowerCase();
    const resolved = await lookup(name).catch(() => undefined);
    if (resolved === undefined || isLoopbackName(name))
      return t.skip(`this machine's name ${name} does not resolve, or is a loopback name`);
    const emulator = await Emulator.create({ clock: 'manual', allowHosts: ['lab.example'] });
    try {
      await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: name, port: 0 } });
      const inject = (host: string) => emulator.control.inject({ method: 'GET', url: '/v1/fleet', headers: { host } });
      assert.equal((await inject(`${name}:1`)).statusCode, 200);
      assert.equal((await inject('lab.example:1')).statusCode, 200);
      assert.equal((await inject('other.example:1')).statusCode, 403);
    } finally {
      await emulator.close();
    }
  });

  test('a bad allowHosts entry is refused when the emulator is built', async () => {
    await assert.rejects(
      Emulator.create({ allowHosts: ['ok.example', 'bad name'] }),
      /allowHosts\[1\]: "bad name" is not a host name or address/,
    );
  });
});

describe('in a real browser', () => {
  test('a page on another port cannot reset or cancel, and a rebinding name can neither read nor write', async (t) => {
    const why = chromiumUnavailable();
    if (why) {
      if (process.env.FOREWARN_REQUIRE_CHROMIUM === '1') throw new Error(`FOREWARN_REQUIRE_CHROMIUM=1 but ${why}`);
      return t.skip(why);
    }
    const emulator = await Emulator.create({ clock: 'manual' });
    const { controlUrl } = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
    const controlPort = new URL(controlUrl).port;
    // State a reset or a cancel would visibly undo: a fault and a Scheduled event.
    const created = emulator.engine.createOperation({ type: 'freeze', vms: ['vm0'] });
    emulator.faults.add({ status: 500 });
    const eventId = created.events[0]!;

    // The other site: bodiless no-cors POSTs, which need no preflight, then a title saying it is done.
    const attacker = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><script>
        const c = ${JSON.stringify(controlUrl)};
        Promise.allSettled([
          fetch(c + '/v1/reset', { method: 'POST', mode: 'no-cors' }),
          fetch(c + '/v1/events/${eventId}/cancel', { method: 'POST', mode: 'no-cors' }),
        ]).then(() => { document.title = 'done'; });
      </script>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    const attackerPort = (attacker.address() as AddressInfo).port;
    // evil.example resolves to loopback inside this browser: DNS rebinding after the fact.
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--host-resolver-rules=MAP evil.example 127.0.0.1',
      ],
      timeout: 30_000,
    });
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(10_000);
      await page.goto(`http://127.0.0.1:${attackerPort}/`);
      await page.waitForFunction('document.title === "done"');
      assert.equal(emulator.faults.size, 1, 'the other page reset the emulator');
      assert.equal(emulator.engine.event(eventId).status, 'Scheduled', 'the other page cancelled the event');

      const rebound = await page.goto(`http://evil.example:${controlPort}/v1/fleet`);
      assert.equal(rebound?.status(), 403);
      assert.match(await rebound!.text(), /Host \\"evil\.example:\d+\\" is not a loopback name/);
      const write = await page.evaluate(async () => (await fetch('/v1/reset', { method: 'POST' })).status);
      assert.equal(write, 403);
      assert.equal(emulator.faults.size, 1);

      // The same browser on the emulator's own origin still drives it.
      await page.goto(`${controlUrl}/v1/fleet`);
      const own = await page.evaluate(async () => (await fetch('/v1/reset', { method: 'POST' })).status);
      assert.equal(own, 200);
      assert.equal(emulator.faults.size, 0);
    } finally {
      await browser.close();
      await new Promise((resolve) => attacker.close(resolve));
      await emulator.close();
    }
  });
});
