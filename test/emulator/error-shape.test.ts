// Every error either server sends is `{"error": "…"}` JSON with a fitting status, including the ones
// the HTTP framework or Node answers by themselves; never fastify's {statusCode, code, error, message}.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Emulator } from '../../src/emulator/emulator.js';

let emulator: Emulator;
const base = { imds: '', control: '' };

before(async () => {
  emulator = await Emulator.create({ fleet: [{ name: 'vm0' }], clock: 'manual' });
  const urls = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
  base.imds = urls.imdsUrl;
  base.control = urls.controlUrl;
});
after(() => emulator.close());

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

/** A request as written, without fetch's own checks (fetch refuses some of these URLs and methods). */
function send(
  server: keyof typeof base,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
): Promise<Answer> {
  const url = new URL(base[server]);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, contentType: String(res.headers['content-type']), body: text }));
    });
    // A server may answer a too-large body before reading it all, and close.
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Bytes straight onto a socket: malformed HTTP that no client library would send. */
function sendRaw(server: keyof typeof base, bytes: string): Promise<Answer> {
  const url = new URL(base[server]);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(bytes));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      const contentType = /^content-type: (.*)$/im.exec(head)?.[1] ?? '';
      resolve({ status, contentType, body });
    });
  });
}

function assertShape(answer: Answer, status: number, message?: RegExp): void {
  assert.equal(answer.status, status, answer.body);
  assert.match(answer.contentType, /^application\/json/);
  const json = JSON.parse(answer.body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(json), ['error'], answer.body);
  assert.equal(typeof json.error, 'string');
  if (message) assert.match(json.error as string, message);
}

const EVENTS = '/metadata/scheduledevents?api-version=2020-07-01';
const META = { metadata: 'true' };
const JSON_TYPE = { 'content-type': 'application/json' };

describe('one error shape on the control API', () => {
  it('bad JSON', async () => assertShape(await send('control', 'POST', '/v1/operations', JSON_TYPE, '{bad'), 400, /not valid JSON/));
  it('wrong content type', async () =>
    assertShape(await send('control', 'POST', '/v1/operations', { 'content-type': 'text/plain' }, '{}'), 415, /send application\/json/));
  it('a content type that does not parse', async () =>
    assertShape(await send('control', 'POST', '/v1/operations', { 'content-type': '///' }, '{}'), 415));
  it('body too large', async () =>
    assertShape(await send('control', 'POST', '/v1/operations', JSON_TYPE, Buffer.alloc(2 * 1024 * 1024, 32)), 413, /larger than 1 MiB/));
  it('a body cut short by its Content-Length', async () =>
    assertShape(
      await sendRaw(
        'control',
        'POST /v1/operations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1\r\nConnection: close\r\n\r\n{}',
      ),
      400,
    ));
  it('bad URL encoding', async () =>
    assertShape(await send('control', 'GET', '/v1/vms/%E0%A4%A'), 400, /not valid: it has a malformed %-escape/));
  it('an over-long path segment', async () =>
    assertShape(await send('control', 'GET', `/v1/vms/${'a'.repeat(500)}`), 414, /longer than 100 characters/));
  it('unsupported method on a known path', async () =>
    assertShape(await send('control', 'PATCH', '/v1/fleet'), 405, /PATCH is not allowed on \/v1\/fleet/));
  it('unknown path', async () => assertShape(await send('control', 'GET', '/v1/nothing'), 404));
  it('malformed HTTP', async () =>
    assertShape(await sendRaw('control', 'GET /v1/fleet HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n'), 400, /not valid HTTP/));
  it('headers too large', async () =>
    assertShape(await sendRaw('control', `GET /v1/fleet HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`), 431));
});

describe('one error shape on IMDS, in its own wording', () => {
  it('bad JSON', async () => assertShape(await send('imds', 'POST', EVENTS, { ...META, ...JSON_TYPE }, '{bad'), 400, /not valid JSON/));
  it('any content type is read as the approval body, so a wrong one is judged by its body', async () =>
    assertShape(await send('imds', 'POST', EVENTS, { ...META, 'content-type': 'text/plain' }, 'StartRequests'), 400));
  it('a content type that does not parse', async () =>
    assertShape(await send('imds', 'POST', EVENTS, { ...META, 'content-type': '///' }, '{bad'), 400));
  it('body too large', async () => assertShape(await send('imds', 'POST', EVENTS, META, Buffer.alloc(2 * 1024 * 1024, 32)), 413));
  it('a body cut short by its Content-Length', async () =>
    assertShape(
      await sendRaw(
        'imds',
        `POST ${EVENTS} HTTP/1.1\r\nHost: 127.0.0.1\r\nMetadata: true\r\nContent-Length: 1\r\nConnection: close\r\n\r\n{}`,
      ),
      400,
    ));
  it('bad URL encoding', async () => assertShape(await send('imds', 'GET', `/vms/%E0%A4%A${EVENTS}`, META), 400, /The URL is not valid/));
  it('an over-long path segment', async () => assertShape(await send('imds', 'GET', `/vms/${'a'.repeat(2000)}${EVENTS}`, META), 404));
  it('unsupported method on a known path', async () => assertShape(await send('imds', 'PUT', EVENTS, META), 405));
  it('unknown path', async () => assertShape(await send('imds', 'GET', '/nothing', META), 404));
  it('malformed HTTP', async () => assertShape(await sendRaw('imds', 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n'), 400));
  it('headers too large', async () =>
    assertShape(await sendRaw('imds', `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`), 431));
});
