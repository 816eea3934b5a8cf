// Errors carry the field they blame. The fleet's rules name it where each is thrown (no regexes over
// messages); the control API sends it as `field` to a request that asks with `Prefer: error-field`,
// and without that the body stays exactly `{"error"}`; ControlClient hands it over as ControlApiError.field.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { ControlApiError } from '../../src/control/index.js';
import { buildControlServer } from '../../src/emulator/control/server.js';
import { ManualClock } from '../../src/shared/clock.js';
import { Engine } from '../../src/emulator/engine/engine.js';
import { EngineError, conflict, formatFieldPath, invalid, notFound } from '../../src/emulator/engine/errors.js';
import { Fleet, fleetRuleFields, type VmSpec } from '../../src/emulator/engine/fleet.js';
import { ENGINE_ERROR_STATUS, prefersErrorField } from '../../src/emulator/http/error-map.js';
import { FaultRegistry } from '../../src/emulator/imds/faults.js';
import { startEmulator } from '../../src/emulator/index.js';
import { RateLimiter } from '../../src/emulator/imds/rate-limit.js';

describe('EngineError', () => {
  it('the helpers take an optional field and fields that share the blame; old calls are unchanged', () => {
    const plain = invalid('no');
    assert.equal(plain.code, 'invalid');
    assert.equal(plain.message, 'no');
    assert.equal(plain.field, undefined);
    assert.deepEqual(plain.fields, []);
    const blamed = conflict('clash', 'faultDomain', 'host');
    assert.equal(blamed.field, 'faultDomain');
    assert.deepEqual(blamed.fields, ['faultDomain', 'host']);
    assert.deepEqual(notFound('gone', ['vms', 1]).field, ['vms', 1]);
  });

  it('writes field paths as messages do', () => {
    assert.equal(formatFieldPath('notBefore'), 'notBefore');
    assert.equal(formatFieldPath(['vms', 0, 'name']), 'vms[0].name');
    assert.equal(formatFieldPath(['scenario', 'steps', 2, 'at']), 'scenario.steps[2].at');
  });

  it('each code has one status', () => {
    assert.deepEqual(ENGINE_ERROR_STATUS, { invalid: 400, 'not-found': 404, conflict: 409 });
  });
});

describe('every fleet rule names the field it blames', () => {
  const BASE: VmSpec[] = [
    {
      name: 'web0',
      tenant: 'web',
      tenantKind: 'availabilitySet',
      host: 'h1',
      faultDomain: 0,
      address: '10.1.0.1',
      vmId: 'AAAA',
      privateIp: '10.0.0.50',
    },
    { name: 'solo' },
  ];
  // Each breaks one rule; the fields are what fleet files and state checks point at, most to blame first.
  const CASES: [string, VmSpec, readonly string[]][] = [
    ['a bad VM name', { name: 'bad name' }, ['name']],
    ['a VM name in use', { name: 'web0' }, ['name']],
    ['a bad tenant name', { name: 'a', tenant: 'bad tenant' }, ['tenant']],
    ['a second VM in a standalone tenant', { name: 'a', tenant: 'solo' }, ['tenant']],
    ['a tenant of another kind', { name: 'a', tenant: 'web', tenantKind: 'scaleSet' }, ['tenantKind']],
    ['too many fault domains', { name: 'a', faultDomainCount: 21 }, ['faultDomainCount']],
    ["a tenant's other fault domain count", { name: 'a', tenant: 'web', faultDomainCount: 3 }, ['faultDomainCount']],
    ['a fault domain out of range', { name: 'a', faultDomain: 1 }, ['faultDomain']],
    ['too many update domains', { name: 'a', updateDomainCount: 0 }, ['updateDomainCount']],
    ["a tenant's other update domain count", { name: 'a', tenant: 'web', updateDomainCount: 4 }, ['updateDomainCount']],
    ['an update domain out of range', { name: 'a', updateDomain: 7 }, ['updateDomain']],
    ['scaleSet outside a scale set', { name: 'a', scaleSet: 's' }, ['scaleSet']],
    ['a bad scale set name', { name: 'a', tenantKind: 'scaleSet', scaleSet: 'bad name' }, ['scaleSet']],
    ['a bad address', { name: 'a', address: 'nowhere' }, ['address']],
    ['an address in use', { name: 'a', address: '10.1.0.1' }, ['address']],
    ['terminate notification outside a scale set', { name: 'a', terminateNotificationMinutes: 5 }, ['terminateNotificationMinutes']],
    [
      'terminate notification out of range',
      { name: 'a', tenantKind: 'scaleSet', terminateNotificationMinutes: 99 },
      ['terminateNotificationMinutes'],
    ],
    ['OS image notification outside a scale set', { name: 'a', osImageNotification: true }, ['osImageNotification']],
    ['a bad host name', { name: 'a', host: 'bad host' }, ['host']],
    ["a host in another of the tenant's fault domains", { name: 'a', tenant: 'web', host: 'h1', faultDomain: 1 }, ['faultDomain', 'host']],
    ['a vmId in use, in other case', { name: 'a', vmId: 'aaaa' }, ['vmId']],
    ['a privateIp in use', { name: 'a', privateIp: '10.0.0.50' }, ['privateIp']],
    ['a bad privateIp', { name: 'a', privateIp: '10.0.0' }, ['privateIp']],
    ['a bad publicIp', { name: 'a', publicIp: '::1' }, ['publicIp']],
    ['a bad macAddress', { name: 'a', macAddress: '00-11' }, ['macAddress']],
    // Rules the old table of message patterns had no pattern for: they blamed no field at all.
    ['an eviction policy on a Regular VM', { name: 'a', evictionPolicy: 'Delete' }, ['evictionPolicy']],
    ['a deallocated Regular VM', { name: 'a', powerState: 'deallocated' }, ['powerState']],
  ];

  for (const [what, spec, fields] of CASES) {
    it(what, () => {
      let n = 0;
      const fleet = new Fleet(() => `id-${++n}`);
      for (const s of BASE) fleet.add(s);
      assert.throws(
        () => fleet.add(spec),
        (err: unknown) => {
          assert.ok(err instanceof EngineError, String(err));
          assert.deepEqual(fleetRuleFields(err), fields, err.message);
          assert.equal(err.field, fields[0]);
          return true;
        },
      );
    });
  }
});

describe('the control API names the field to a request that asks', () => {
  let app: FastifyInstance;
  before(() => {
    const clock = new ManualClock(Date.parse('2024-01-01T00:00:00Z'));
    const fleet: VmSpec[] = [{ name: 'vm0' }, { name: 'web0', tenant: 'web', tenantKind: 'availabilitySet', host: 'h1', faultDomain: 0 }];
    app = buildControlServer({ engine: new Engine({ clock, fleet }), clock, faults: new FaultRegistry(), rateLimiter: new RateLimiter() });
  });
  after(() => app.close());

  const ask = async (method: 'GET' | 'POST', url: string, body?: unknown, prefer: string | null = 'error-field') => {
    const res = await app.inject({
      method,
      url,
      headers: { ...(prefer === null ? {} : { prefer }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return { status: res.statusCode, body: res.json() as Record<string, unknown> };
  };

  const CASES: [string, 'GET' | 'POST', string, unknown, number, string][] = [
    ['a fleet rule', 'POST', '/v1/vms', { name: 'a', faultDomain: 3 }, 400, 'faultDomain'],
    ['a fleet conflict', 'POST', '/v1/vms', { name: 'vm0' }, 409, 'name'],
    [
      'a host in two fault domains of a tenant',
      'POST',
      '/v1/vms',
      { name: 'web1', tenant: 'web', host: 'h1', faultDomain: 1 },
      409,
      'faultDomain',
    ],
    ['a body of the wrong type', 'POST', '/v1/operations', { type: 'freeze', vms: [7] }, 400, 'vms[0]'],
    ['an unknown body field', 'POST', '/v1/operations', { type: 'freeze', vms: ['vm0'], bogus: 1 }, 400, 'bogus'],
    ['a missing body field', 'POST', '/v1/clock/advance', {}, 400, 'seconds'],
    ['a NotBefore that is no time', 'POST', '/v1/operations', { type: 'freeze', vms: ['vm0'], notBefore: 'tomorrow' }, 400, 'notBefore'],
    ['a page limit out of range', 'GET', '/v1/history?limit=0', undefined, 400, 'limit'],
    ['a cursor that is none', 'GET', '/v1/operations?before=x', undefined, 400, 'before'],
    ['a repeated query parameter', 'GET', '/v1/history?limit=1&limit=2', undefined, 400, 'limit'],
    ['an unknown stream option', 'GET', '/v1/stream?include=all', undefined, 400, 'include'],
    ['an unknown built-in scenario', 'POST', '/v1/scenarios', { name: 'nope' }, 404, 'name'],
  ];

  for (const [what, method, url, body, status, field] of CASES) {
    it(`${what}: ${status}, field ${field}; the same message without the preference`, async () => {
      const asked = await ask(method, url, body);
      assert.equal(asked.status, status, JSON.stringify(asked.body));
      assert.deepEqual(Object.keys(asked.body), ['error', 'field']);
      assert.equal(asked.body.field, field);
      const plain = await ask(method, url, body, null);
      assert.equal(plain.status, status);
      assert.deepEqual(plain.body, { error: asked.body.error });
    });
  }

  it('a scenario problem names its path inside the scenario', async () => {
    const res = await ask('POST', '/v1/scenarios', {
      scenario: { name: 'bad', fleet: { vms: [{ name: 'a' }] }, steps: [{ at: 'soon', operation: { type: 'restart', vms: ['a'] } }] },
    });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(String(res.body.field), /^scenario\.steps\[0\]/);
    assert.ok(String(res.body.error).startsWith(`${String(res.body.field)}: `), JSON.stringify(res.body));
  });

  it('no field when no one field is at fault', async () => {
    for (const [method, url] of [
      ['GET', '/v1/vms/nope'],
      ['GET', '/v1/nothing'],
      ['POST', '/v1/events/nope/cancel'],
    ] as const) {
      const res = await ask(method, url);
      assert.deepEqual(Object.keys(res.body), ['error'], `${method} ${url}`);
    }
  });

  it('reads the preference among others, in any case, and only as a whole token', () => {
    assert.equal(prefersErrorField('error-field'), true);
    assert.equal(prefersErrorField('respond-async, Error-Field'), true);
    assert.equal(prefersErrorField(['wait=5', 'error-field; strict']), true);
    assert.equal(prefersErrorField('error-fields'), false);
    assert.equal(prefersErrorField('return=minimal'), false);
    assert.equal(prefersErrorField(undefined), false);
  });
});

describe('ControlClient', () => {
  it('gives the field of a refusal as ControlApiError.field', async () => {
    await using emu = await startEmulator({ fleet: [{ name: 'vm0' }], clock: 'manual' });
    const err = await emu.addVm({ name: 'vm0' }).then(
      () => assert.fail('expected a refusal'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ControlApiError, String(err));
    assert.equal(err.status, 409);
    assert.equal(err.field, 'name');
    assert.match(err.error, /a VM named 'vm0' already exists/);
    const unknown = await emu.vm('nope').catch((e: unknown) => e);
    assert.ok(unknown instanceof ControlApiError);
    assert.equal(unknown.field, undefined);
  });
});
