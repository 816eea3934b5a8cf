// ControlClient against a running emulator with a token, its errors, and what it loads at run time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ControlApiError, ControlClient, ControlConnectionError } from '../../src/control/index.js';
import { startEmulator } from '../../src/emulator/index.js';
import { runTimeCode } from '../support/bundle.js';

const TOKEN = 'sekret-token-1';

test('with the token the client drives the emulator; without it, or with a wrong one, it gets a ControlApiError 401', async () => {
  await using emu = await startEmulator({ token: TOKEN, clock: 'manual', fleet: { vms: [{ name: 'app-0' }] } });
  const client = new ControlClient({ baseUrl: emu.controlUrl, token: TOKEN });
  const { events } = await client.trigger({ type: 'freeze', vms: ['app-0'] });
  assert.deepEqual(
    (await client.events()).map((e) => e.id),
    events,
  );
  // The handle sends the token it was started with.
  assert.deepEqual(
    (await emu.events()).map((e) => e.id),
    events,
  );

  for (const token of [undefined, 'wrong-token']) {
    const other = new ControlClient({ baseUrl: `${emu.controlUrl}/`, token });
    const err = await other.fleet().then(
      () => assert.fail('expected a refusal'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ControlApiError, String(err));
    assert.equal(err.status, 401);
    assert.equal(err.method, 'GET');
    assert.equal(err.path, '/v1/fleet');
    assert.match(err.error, /token/i);
    assert.equal(err.message, `GET /v1/fleet: 401 ${err.error}`);
  }
});

test('requests go through an injected fetch, with the method, JSON body, token and encoded path', async () => {
  const seen: { url: string; method: string; headers: Record<string, string>; body: unknown }[] = [];
  const fakeFetch: typeof fetch = async (input, init) => {
    seen.push({
      url: String(input),
      method: init?.method ?? 'GET',
      headers: init?.headers as Record<string, string>,
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
    });
    return new Response(JSON.stringify({ event: { id: 'e 1' } }), { status: 200 });
  };
  const client = new ControlClient({ baseUrl: 'http://emu.test:9/', token: TOKEN, fetch: fakeFetch });
  assert.deepEqual(await client.approve('e 1', 'vm/0'), { id: 'e 1' });
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.url, 'http://emu.test:9/v1/events/e%201/approve');
  assert.equal(seen[0]!.method, 'POST');
  assert.equal(seen[0]!.headers.authorization, `Bearer ${TOKEN}`);
  assert.equal(seen[0]!.headers['content-type'], 'application/json');
  assert.deepEqual(seen[0]!.body, { vm: 'vm/0' });
  // The types are the schemas': tsc refuses what the API would refuse.
  // @ts-expect-error 'reboot' is not an operation type (it is 'restart')
  const wrongType = () => client.trigger({ type: 'reboot', vms: ['vm0'] });
  // @ts-expect-error faults take 410, 429 or 500
  const wrongStatus = () => client.addFault({ status: 503 });
  assert.equal(typeof wrongType, typeof wrongStatus);
});

test('an error answer that is not JSON still gives a ControlApiError with its text', async () => {
  const client = new ControlClient({ baseUrl: 'http://emu.test', fetch: async () => new Response('Bad Gateway', { status: 502 }) });
  await assert.rejects(
    client.clock(),
    (err: unknown) => err instanceof ControlApiError && err.status === 502 && err.error === 'Bad Gateway',
  );
});

test('an emulator that is not there is a ControlConnectionError naming the URL', async () => {
  const emu = await startEmulator();
  const url = emu.controlUrl;
  await emu.close();
  const client = new ControlClient({ baseUrl: url });
  await assert.rejects(client.fleet(), (err: unknown) => {
    assert.ok(err instanceof ControlConnectionError);
    assert.equal(err.message, `cannot reach the control API at ${url}: connection refused (is the emulator running?)`);
    return true;
  });
});

test('a bad base URL, token or timeout is a TypeError naming it', () => {
  assert.throws(() => new ControlClient({ baseUrl: 'not a url' }), /baseUrl must be a URL such as/);
  assert.throws(() => new ControlClient({ baseUrl: 'ftp://x' }), /baseUrl must be an http\(s\) URL/);
  assert.throws(() => new ControlClient({ baseUrl: 'http://x/?a=1' }), /no \?query/);
  assert.throws(() => new ControlClient({ baseUrl: 'http://x', token: 'a b' }), /token must be one non-empty word/);
  assert.throws(() => new ControlClient({ baseUrl: 'http://x', timeoutMs: 0 }), /timeoutMs must be a positive number/);
});

test('forewarn/control loads neither zod nor the emulator at run time: its compiled imports are its own files', async () => {
  const entry = fileURLToPath(new URL('../../src/control/index.ts', import.meta.url));
  const code = await runTimeCode(entry, 'node');
  assert.deepEqual(code.inputs, ['src/control/client.ts', 'src/control/errors.ts', 'src/control/index.ts']);
  assert.deepEqual(code.imports, [], 'no import of any package or node: module is left');
  assert.doesNotMatch(code.text, /zod/);
});
