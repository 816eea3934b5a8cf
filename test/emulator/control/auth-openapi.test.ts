import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';

const TOKEN = 's3cret-token';

async function serve(token?: string): Promise<{ app: FastifyInstance; base: string }> {
  const clock = new ManualClock(Date.parse('2024-01-01T00:00:00Z'));
  const engine = new Engine({ clock, fleet: [{ name: 'vm0' }] });
  const app = buildControlServer({ engine, clock, faults: new FaultRegistry(), rateLimiter: new RateLimiter(), token });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

describe('bearer token', () => {
  let app: FastifyInstance;
  let base: string;
  before(async () => ({ app, base } = await serve(TOKEN)));
  after(async () => app.close());

  const routes: [string, string, unknown?][] = [
    ['GET', '/v1/fleet'],
    ['GET', '/v1/events'],
    ['GET', '/v1/clock'],
    ['GET', '/v1/openapi.json'],
    ['GET', '/v1/vms/vm0/document'],
    ['POST', '/v1/faults', { status: 500 }],
    ['POST', '/v1/reset'],
  ];

  for (const [method, path, body] of routes) {
    test(`${method} ${path}: 401 without or with a wrong token, 2xx with it`, async () => {
      const send = (authorization?: string) =>
        fetch(base + path, {
          method,
          headers: {
            ...(authorization !== undefined ? { authorization } : {}),
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
      for (const wrong of [undefined, 'Bearer nope', `Bearer ${TOKEN}x`, `Basic ${TOKEN}`, TOKEN, 'Bearer ']) {
        const res = await send(wrong);
        assert.equal(res.status, 401, `${String(wrong)}`);
        assert.equal(res.headers.get('www-authenticate'), 'Bearer');
        assert.deepEqual(await res.json(), { error: 'missing or wrong bearer token' });
      }
      const ok = await send(`Bearer ${TOKEN}`);
      assert.ok(ok.status === 200 || ok.status === 201, `${ok.status}`);
      await ok.arrayBuffer();
    });
  }

  test('the stream needs the token too', async () => {
    const denied = await fetch(`${base}/v1/stream`);
    assert.equal(denied.status, 401);
    await denied.arrayBuffer();
    const controller = new AbortController();
    const res = await fetch(`${base}/v1/stream`, { headers: { authorization: `bearer ${TOKEN}` }, signal: controller.signal });
    assert.equal(res.status, 200);
    controller.abort();
  });

  test('the OpenAPI document declares the bearer requirement', async () => {
    const res = await fetch(`${base}/v1/openapi.json`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const doc = (await res.json()) as { security?: unknown; paths: Record<string, Record<string, { responses: object }>> };
    assert.deepEqual(doc.security, [{ bearer: [] }]);
    assert.ok('401' in doc.paths['/v1/fleet']!.get!.responses);
  });
});

describe('OpenAPI document', () => {
  let app: FastifyInstance;
  let base: string;
  before(async () => ({ app, base } = await serve()));
  after(async () => app.close());

  // SPEC §4, in OpenAPI path form.
  const SPEC_ROUTES = [
    ['get', '/v1/fleet'],
    ['post', '/v1/vms'],
    ['post', '/v1/operations'],
    ['get', '/v1/events'],
    ['post', '/v1/events/{id}/cancel'],
    ['post', '/v1/events/{id}/complete'],
    ['get', '/v1/vms/{name}/document'],
    ['get', '/v1/clock'],
    ['post', '/v1/clock/advance'],
    ['post', '/v1/faults'],
    ['post', '/v1/reset'],
    ['get', '/v1/stream'],
  ] as const;

  type Op = {
    responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>;
    requestBody?: { content: Record<string, { schema: { $ref: string } }> };
    parameters?: { name: string; in: string }[];
  };
  let doc: {
    openapi: string;
    paths: Record<string, Record<string, Op>>;
    components: { schemas: Record<string, Record<string, unknown>> };
  };

  before(async () => {
    const res = await fetch(`${base}/v1/openapi.json`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    doc = JSON.parse(await res.text());
  });

  test('is OpenAPI 3.1.0', () => {
    assert.equal(doc.openapi, '3.1.0');
  });

  test('has every route of SPEC §4', () => {
    for (const [method, path] of SPEC_ROUTES) {
      assert.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path} is missing`);
    }
  });

  test('every operation has responses; every $ref resolves; errors use the Error shape', () => {
    const refs: string[] = [];
    JSON.stringify(doc, (key, value: unknown) => {
      if (key === '$ref' && typeof value === 'string') refs.push(value);
      return value;
    });
    for (const ref of refs) {
      const id = ref.replace('#/components/schemas/', '');
      assert.ok(doc.components.schemas[id], `${ref} does not resolve`);
    }
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        assert.ok(Object.keys(op.responses).length > 0, `${method} ${path} has no responses`);
        for (const [status, r] of Object.entries(op.responses)) {
          if (status.startsWith('4') && !(path.endsWith('/document') && status === '400')) {
            // The ARM routes answer as ARM does (SPEC §4, Event Grid and ARM).
            const shape = path.startsWith('/subscriptions/') ? 'ArmError' : 'Error';
            assert.equal(r.content?.['application/json']?.schema.$ref, `#/components/schemas/${shape}`, `${method} ${path} ${status}`);
          }
        }
      }
    }
    assert.deepEqual(doc.components.schemas.Error!.required, ['error']);
  });

  test('request bodies come from the zod schemas, with the exact SPEC fields', () => {
    const bodyOf = (path: string) => {
      const ref = doc.paths[path]!.post!.requestBody!.content['application/json']!.schema.$ref;
      return doc.components.schemas[ref.replace('#/components/schemas/', '')] as {
        properties: Record<string, { enum?: unknown[] }>;
        required?: string[];
        additionalProperties?: boolean;
      };
    };
    const vm = bodyOf('/v1/vms');
    for (const field of [
      'name',
      'tenant',
      'tenantKind',
      'faultDomain',
      'updateDomain',
      'host',
      'address',
      'priority',
      'terminateNotificationMinutes',
      'osImageNotification',
      'gpu',
      'faultDomainCount',
    ]) {
      assert.ok(vm.properties[field], `POST /v1/vms body lacks ${field}`);
    }
    assert.deepEqual(vm.required, ['name']);
    assert.equal(vm.additionalProperties, false);
    assert.deepEqual(vm.properties.tenantKind!.enum, ['standalone', 'availabilitySet', 'scaleSet', 'cloudService']);

    const operation = bodyOf('/v1/operations');
    assert.deepEqual(operation.required, ['type']);
    assert.equal(operation.properties.type!.enum!.length, 11);
    for (const f of ['vms', 'host', 'tenant', 'notBefore', 'durationInSeconds', 'description', 'force']) {
      assert.ok(operation.properties[f], `POST /v1/operations body lacks ${f}`);
    }
    assert.deepEqual(bodyOf('/v1/faults').properties.status!.enum, [410, 429, 500]);
    assert.deepEqual(bodyOf('/v1/clock/advance').required, ['seconds']);
  });

  test('the document route declares its api-version query and ETag', () => {
    const op = doc.paths['/v1/vms/{name}/document']!.get!;
    assert.deepEqual(
      op.parameters!.map((p) => [p.name, p.in]),
      [
        ['name', 'path'],
        ['api-version', 'query'],
      ],
    );
  });

  test('without a token, no security requirement is declared', () => {
    assert.equal('security' in doc, false);
  });
});

describe('OpenAPI with a state file', () => {
  test('every change can answer 503 when its save fails, and only then', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forewarn-openapi-state-'));
    type Doc = { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    const served = async (statePath?: string): Promise<Doc> => {
      const emulator = await Emulator.create({ clock: 'manual', ...(statePath ? { statePath } : {}) });
      try {
        const res = await emulator.control.inject({ method: 'GET', url: '/v1/openapi.json' });
        return res.json() as Doc;
      } finally {
        await emulator.close();
      }
    };
    try {
      const withState = await served(join(dir, 'state.json'));
      const without = await served();
      for (const [path, ops] of Object.entries(withState.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          const changes = method === 'post' || method === 'delete';
          assert.equal('503' in op.responses, changes || path === '/v1/stream', `${method} ${path} with --state`);
          if (path !== '/v1/stream')
            assert.equal('503' in without.paths[path]![method]!.responses, false, `${method} ${path} without --state`);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
