// SPEC §1 request rules over real sockets: headers, api-versions, proxies, paths, methods, body limits.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  BODY_TOO_LARGE,
  MAX_BODY_BYTES,
  METADATA_HEADER_MISSING,
  METHOD_NOT_ALLOWED,
  NOT_FOUND,
  PROXY_REJECTED,
} from '../../../src/protocol/errors.js';
import { API_VERSION_INVALID, API_VERSION_MISSING, API_VERSIONS } from '../../../src/protocol/versions.js';
import { rawHttp } from '../../support/imds-client.js';
import { eventsPath, startImds, type ImdsHarness } from '../../support/imds-server.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const NEWEST = ['2020-07-01', '2019-08-01', '2019-04-01'];

describe('IMDS request rules', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds();
  });
  after(() => h.close());

  describe('Metadata header', () => {
    it('is required from 2017-08-01 on, with the exact IMDS body', async () => {
      for (const version of API_VERSIONS.filter((v) => v !== '2017-03-01')) {
        const res = await h.client.get(eventsPath(version), { metadata: false });
        assert.equal(res.status, 400, version);
        assert.equal(res.text, '{"error":"Bad request. Required metadata header not specified"}');
        assert.equal(res.headers.get('content-type'), JSON_TYPE);
      }
      assert.equal(METADATA_HEADER_MISSING, 'Bad request. Required metadata header not specified');
    });

    it('must say true, in any case', async () => {
      for (const value of ['true', 'True', 'TRUE']) {
        const res = await h.client.get(eventsPath(), { metadata: false, headers: { Metadata: value } });
        assert.equal(res.status, 200, value);
      }
      for (const value of ['false', 'yes', '1', '']) {
        const res = await h.client.get(eventsPath(), { metadata: false, headers: { Metadata: value } });
        assert.equal(res.status, 400, value);
        assert.deepEqual(res.body, { error: METADATA_HEADER_MISSING });
      }
    });

    it('is not needed for the 2017-03-01 preview', async () => {
      const res = await h.client.get(eventsPath('2017-03-01'), { metadata: false });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { DocumentIncarnation: 1, Events: [] });
    });

    it('is checked on POST too', async () => {
      const res = await h.client.post(eventsPath(), '{"StartRequests":[]}', { metadata: false });
      assert.equal(res.status, 400);
      assert.deepEqual(res.body, { error: METADATA_HEADER_MISSING });
    });
  });

  describe('api-version', () => {
    const cases: [string, string, string][] = [
      ['missing', '/metadata/scheduledevents', API_VERSION_MISSING],
      ['empty', '/metadata/scheduledevents?api-version=', API_VERSION_MISSING],
      ['{latest}', '/metadata/scheduledevents?api-version=%7Blatest%7D', API_VERSION_INVALID],
      ['{latest} unencoded', '/metadata/scheduledevents?api-version={latest}', API_VERSION_INVALID],
      ['latest', '/metadata/scheduledevents?api-version=latest', API_VERSION_INVALID],
      ['repeated', '/metadata/scheduledevents?api-version=2020-07-01&api-version=2020-07-01', API_VERSION_INVALID],
      ['unknown date', '/metadata/scheduledevents?api-version=2018-01-01', API_VERSION_INVALID],
      ['an instance-only version', '/metadata/scheduledevents?api-version=2021-02-01', API_VERSION_INVALID],
      ['wrong case of name', '/metadata/scheduledevents?API-Version=2020-07-01', API_VERSION_MISSING],
      ['padded', '/metadata/scheduledevents?api-version=%202020-07-01', API_VERSION_INVALID],
    ];
    for (const [name, path, error] of cases) {
      it(`${name} gets 400 with newest-versions`, async () => {
        for (const method of ['GET', 'POST']) {
          const res = await h.client.request(method, path);
          assert.equal(res.status, 400, method);
          assert.deepEqual(res.body, { error, 'newest-versions': NEWEST }, method);
          assert.equal(res.headers.get('content-type'), JSON_TYPE);
        }
      });
    }

    it('accepts every listed version', async () => {
      for (const version of API_VERSIONS) {
        const res = await h.client.get(eventsPath(version));
        assert.equal(res.status, 200, version);
      }
    });

    it('is checked before the Metadata header', async () => {
      const res = await h.client.get('/metadata/scheduledevents?api-version=latest', { metadata: false });
      assert.equal((res.body as { error: string }).error, API_VERSION_INVALID);
    });
  });

  describe('proxies', () => {
    it('a request with X-Forwarded-For gets 400, before any other check', async () => {
      for (const method of ['GET', 'POST']) {
        const res = await h.client.request(method, '/metadata/scheduledevents', {
          metadata: false,
          headers: { 'X-Forwarded-For': '10.0.0.1' },
        });
        assert.equal(res.status, 400);
        assert.deepEqual(res.body, { error: PROXY_REJECTED });
      }
    });

    it('even an empty X-Forwarded-For counts', async () => {
      const text = await rawHttp(
        h.port,
        'GET /metadata/scheduledevents?api-version=2020-07-01 HTTP/1.1\r\nHost: x\r\nMetadata: true\r\n' +
          'X-Forwarded-For:\r\nConnection: close\r\n\r\n',
      );
      assert.match(text, /^HTTP\/1\.1 400 /);
      assert.ok(text.endsWith(JSON.stringify({ error: PROXY_REJECTED })));
    });
  });

  describe('paths and methods', () => {
    it('an unknown path gets 404 {"error":"Not found"}', async () => {
      for (const path of ['/', '/metadata', '/metadata/scheduledevents/extra', '/Metadata/ScheduledEvents', '/metadata/identity']) {
        const res = await h.client.get(`${path}?api-version=2020-07-01`);
        assert.equal(res.status, 404, path);
        assert.equal(res.text, '{"error":"Not found"}');
        assert.equal(res.headers.get('content-type'), JSON_TYPE);
      }
      assert.equal(NOT_FOUND, 'Not found');
    });

    it('an unknown path is 404 whatever the method, without reading the body', async () => {
      const res = await h.client.request('PUT', '/nowhere', { body: 'x'.repeat(MAX_BODY_BYTES + 10) });
      assert.equal(res.status, 404);
    });

    it('another method on scheduledevents gets 405 with Allow: GET, POST', async () => {
      for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']) {
        for (const path of [eventsPath(), eventsPath('2020-07-01', 'vm0')]) {
          const res = await h.client.request(method, path);
          assert.equal(res.status, 405, `${method} ${path}`);
          assert.equal(res.headers.get('allow'), 'GET, POST');
          assert.equal(res.headers.get('content-type'), JSON_TYPE);
          if (method !== 'HEAD') assert.deepEqual(res.body, { error: METHOD_NOT_ALLOWED });
        }
      }
    });

    it('a method fastify has no route type for still gets 405', async () => {
      const text = await rawHttp(
        h.port,
        'PROPFIND /metadata/scheduledevents?api-version=2020-07-01 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      assert.match(text, /^HTTP\/1\.1 405 /);
      assert.match(text, /\r\nallow: GET, POST\r\n/i);
    });

    it('the compute path takes GET only', async () => {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const res = await h.client.request(method, '/metadata/instance/compute?api-version=2021-02-01', { body: '{}' });
        assert.equal(res.status, 405, method);
        assert.equal(res.headers.get('allow'), 'GET');
        assert.deepEqual(res.body, { error: METHOD_NOT_ALLOWED });
      }
    });

    it('malformed HTTP gets an IMDS-style JSON error', async () => {
      const text = await rawHttp(h.port, 'GARBAGE\r\n\r\n');
      assert.match(text, /^HTTP\/1\.1 400 /);
      assert.match(text, /content-type: application\/json; charset=utf-8/i);
      assert.ok(text.endsWith('{"error":"Bad request"}'));
    });

    it('a badly encoded VM name gets an IMDS-style 400', async () => {
      const res = await h.client.get('/vms/%E0%A4%A/metadata/scheduledevents?api-version=2020-07-01');
      assert.equal(res.status, 400);
      assert.equal(typeof (res.body as { error: unknown }).error, 'string');
      assert.deepEqual(Object.keys(res.body as object), ['error']);
    });
  });

  describe('body size', () => {
    const tooBig = 'x'.repeat(MAX_BODY_BYTES + 1);

    it('a 65537-byte body gets 413', async () => {
      const res = await h.client.post(eventsPath(), tooBig, { headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 413);
      assert.deepEqual(res.body, { error: BODY_TOO_LARGE });
      assert.equal(res.headers.get('content-type'), JSON_TYPE);
    });

    it('a chunked body over the limit gets 413', async () => {
      const bytes = new TextEncoder().encode(tooBig);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 8192) controller.enqueue(bytes.subarray(i, i + 8192));
          controller.close();
        },
      });
      const res = await h.client.post(eventsPath(), stream);
      assert.equal(res.status, 413);
      assert.deepEqual(res.body, { error: BODY_TOO_LARGE });
    });

    it('a Content-Length over the limit gets 413 before any body is sent', async () => {
      const text = await rawHttp(
        h.port,
        'POST /metadata/scheduledevents?api-version=2020-07-01 HTTP/1.1\r\nHost: x\r\nMetadata: true\r\n' +
          `Content-Length: ${MAX_BODY_BYTES * 100}\r\n\r\n`,
      );
      assert.match(text, /^HTTP\/1\.1 413 /);
      assert.ok(text.endsWith(JSON.stringify({ error: BODY_TOO_LARGE })));
    });

    it('a 65536-byte body is read and judged on its content', async () => {
      const bad = 'y'.repeat(MAX_BODY_BYTES);
      const res = await h.client.post(eventsPath(), bad);
      assert.equal(res.status, 400);
      assert.match((res.body as { error: string }).error, /not valid JSON/);

      const op = h.engine.createOperation({ type: 'freeze', vms: ['vm0'] });
      const json = JSON.stringify({ StartRequests: [{ EventId: op.events[0] }] });
      const padded = json + ' '.repeat(MAX_BODY_BYTES - json.length);
      assert.equal(Buffer.byteLength(padded), MAX_BODY_BYTES);
      const ok = await h.client.post(eventsPath(), padded);
      assert.equal(ok.status, 200);
      assert.equal(ok.text, '');
      assert.equal(h.engine.event(op.events[0]!).status, 'Started');
    });

    it('request checks come before the body limit', async () => {
      const res = await h.client.post(eventsPath(), tooBig, { metadata: false });
      assert.equal(res.status, 400);
      assert.deepEqual(res.body, { error: METADATA_HEADER_MISSING });
    });
  });
});

describe('IMDS unexpected errors', () => {
  const boom = () => {
    throw new Error('boom: secret internals');
  };
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({
      context: {
        // Whichever of its methods a request reaches first.
        rateLimiter: {
          allow: boom,
          bucket: boom,
          take: boom,
        } as unknown as ImdsHarness['rateLimiter'],
      },
    });
  });
  after(() => h.close());

  it('answer 500 in the IMDS shape, with no stack or message', async () => {
    const res = await h.client.get(eventsPath());
    assert.equal(res.status, 500);
    assert.deepEqual(res.body, { error: 'Internal server error: retry later' });
    assert.doesNotMatch(res.text, /boom|at /);
    assert.equal(res.headers.get('content-type'), JSON_TYPE);
  });
});
