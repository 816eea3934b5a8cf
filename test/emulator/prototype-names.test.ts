// Names that are also Object.prototype's keys are ordinary names: `__proto__`, `constructor`, … as VMs,
// tenants and hosts, through fleet files, the control API, IMDS, scenarios and a restart from the state file.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Emulator } from '../../src/emulator/emulator.js';
import { parseFleet } from '../../src/emulator/fleet/file.js';
import { parseScenario } from '../../src/emulator/scenarios/load.js';
import { caller } from '../support/control.js';
import { tempDir } from '../support/temp.js';

const NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', '__defineGetter__'] as const;
const root = tempDir('proto');

async function start(options: { statePath?: string } = {}) {
  const emulator = await Emulator.create({ fleet: [{ name: 'vm0' }], clock: 'manual', ...options });
  const urls = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
  const control = caller(urls.controlUrl);
  const imds = async (vm: string) => {
    const res = await fetch(`${urls.imdsUrl}/vms/${encodeURIComponent(vm)}/metadata/scheduledevents?api-version=2020-07-01`, {
      headers: { metadata: 'true' },
    });
    return {
      status: res.status,
      json: (await res.json()) as { DocumentIncarnation: number; Events: { EventId: string; Resources: string[] }[] },
    };
  };
  return { emulator, control, imds };
}

describe('names like __proto__ in fleet files', () => {
  const yaml = [
    'tenants:',
    ...NAMES.map((n) => `  - { name: ${n}, kind: availabilitySet, faultDomainCount: 2 }`),
    'vms:',
    ...NAMES.flatMap((n) => [
      `  - { name: ${n}, tenant: ${n}, host: ${n}, faultDomain: 0 }`,
      `  - { name: ${n}-b, tenant: ${n}, host: ${n}, faultDomain: 0 }`,
    ]),
    'hosts:',
    `  - { name: ${NAMES[0]}, vms: [${NAMES[0]}] }`,
  ].join('\n');

  it('reads VMs, tenants and hosts with such names from YAML and JSON, each where it was written', () => {
    for (const [text, file] of [
      [yaml, 'fleet.yaml'],
      [
        JSON.stringify({
          tenants: NAMES.map((n) => ({ name: n, kind: 'availabilitySet', faultDomainCount: 2 })),
          vms: NAMES.flatMap((n) => [
            { name: n, tenant: n, host: n, faultDomain: 0 },
            { name: `${n}-b`, tenant: n, host: n, faultDomain: 0 },
          ]),
          hosts: [{ name: NAMES[0], vms: [NAMES[0]] }],
        }),
        'fleet.json',
      ],
    ] as const) {
      const specs = parseFleet(text, file);
      assert.equal(specs.length, NAMES.length * 2, file);
      for (const n of NAMES) {
        const spec = specs.find((s) => s.name === n)!;
        assert.equal(Object.getPrototypeOf(spec), Object.prototype, `${file}: ${n} is a plain spec`);
        assert.equal(spec.tenant, n, file);
        assert.equal(spec.host, n, file);
        assert.equal(spec.tenantKind, 'availabilitySet', `${file}: ${n} takes its tenant's kind`);
        assert.equal(spec.faultDomainCount, 2, `${file}: ${n} takes its tenant's fault domain count`);
      }
    }
  });

  it('refuses a second declaration of tenant __proto__ and an unknown VM __proto__ on a host', () => {
    assert.throws(
      () =>
        parseFleet(
          'tenants:\n  - { name: __proto__, kind: scaleSet }\n  - { name: __proto__, kind: scaleSet }\nvms: [{ name: a }]\n',
          'f.yaml',
        ),
      /f\.yaml:3:\d+: tenants\[1\]\.name: tenant '__proto__' is declared twice/,
    );
    assert.throws(
      () => parseFleet('vms: [{ name: a }]\nhosts: [{ name: h, vms: [constructor] }]\n', 'f.yaml'),
      /f\.yaml:2:\d+: hosts\[0\]\.vms\[0\]: no VM named 'constructor' in the fleet/,
    );
    assert.throws(
      () => parseFleet('vms: [{ name: __proto__ }, { name: __proto__ }]\n', 'f.yaml'),
      /f\.yaml:1:\d+: vms\[1\]\.name: duplicate VM name '__proto__'/,
    );
  });

  it('refuses a __proto__ key as an unknown key rather than taking it as a prototype', () => {
    assert.throws(
      () => parseFleet('vms: [{ name: a }]\n__proto__: { vms: [] }\n', 'f.yaml'),
      /f\.yaml:2:1: __proto__: unknown key "__proto__"/,
    );
    assert.throws(
      () => parseFleet('{"vms": [{"name": "a", "__proto__": {"gpu": true}}]}', 'f.json'),
      /f\.json:1:\d+: vms\[0\]\.__proto__: unknown key "__proto__"/,
    );
  });

  it('takes such names from generate and scaleSets sections', () => {
    const specs = parseFleet(
      [
        'scaleSets:',
        '  - { name: __proto__, instances: 3, hosts: [constructor, toString], faultDomainCount: 2 }',
        '  - { name: hasOwnProperty, instances: 2, placementGroups: 2 }',
        'generate:',
        '  - { availabilitySets: 1, vmsPerSet: 2, hosts: 2, prefix: __defineGetter__, hostPrefix: __proto__ }',
        'vms:',
        '  - { name: extra, tenant: __proto__ }',
      ].join('\n'),
      'f.yaml',
    );
    const byName = new Map(specs.map((s) => [s.name, s]));
    assert.equal(byName.get('__proto___0')?.tenant, '__proto__');
    assert.equal(byName.get('__proto___0')?.host, 'constructor');
    assert.equal(byName.get('extra')?.tenantKind, 'scaleSet');
    assert.equal(byName.get('hasOwnProperty_1')?.tenant, 'hasOwnProperty-pg1');
    assert.equal(byName.get('__defineGetter__0-vm1')?.host, '__proto__1');
  });
});

describe('names like __proto__ through the control API and IMDS', () => {
  it('adds, lists, operates on and serves documents for each name, as VM, tenant and host', async () => {
    const { emulator, control, imds } = await start();
    after(() => emulator.close());
    for (const n of NAMES) {
      const res = await control('POST', '/v1/vms', { name: n, tenant: n, tenantKind: 'availabilitySet', host: n });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.json.name, n);
      assert.equal(res.json.tenant, n);
    }
    const fleet = (await control('GET', '/v1/fleet')).json;
    for (const n of NAMES) {
      assert.equal(fleet.vms.filter((v: { name: string }) => v.name === n).length, 1, n);
      assert.deepEqual(fleet.tenants.find((t: { name: string }) => t.name === n)?.vms, [n]);
      assert.deepEqual(fleet.hosts.find((h: { name: string }) => h.name === n)?.tenants, [n]);
      assert.equal((await control('GET', `/v1/vms/${encodeURIComponent(n)}`)).json.name, n);
    }
    assert.equal((await control('POST', '/v1/vms', { name: '__proto__' })).status, 409, 'a second __proto__ is a conflict');

    const byVm = await control('POST', '/v1/operations', { type: 'freeze', vms: ['__proto__'] });
    assert.equal(byVm.status, 201, byVm.text);
    const byHost = await control('POST', '/v1/operations', { type: 'platform-reboot', host: 'constructor' });
    assert.equal(byHost.status, 201, byHost.text);
    const byTenant = await control('POST', '/v1/operations', { type: 'host-update', tenant: 'toString' });
    assert.equal(byTenant.status, 201, byTenant.text);
    for (const [n, op] of [
      ['__proto__', byVm],
      ['constructor', byHost],
      ['toString', byTenant],
    ] as const) {
      const doc = await imds(n);
      assert.equal(doc.status, 200);
      assert.deepEqual(
        doc.json.Events.map((e) => e.EventId),
        op.json.events,
        n,
      );
      assert.deepEqual(doc.json.Events[0]!.Resources, [n]);
      const viaControl = await control('GET', `/v1/vms/${encodeURIComponent(n)}/document`);
      assert.equal(viaControl.json.DocumentIncarnation, doc.json.DocumentIncarnation);
    }
    assert.equal(
      (await control('POST', '/v1/operations', { type: 'freeze', vms: ['valueOf'] })).status,
      404,
      'an inherited name is not a VM',
    );
    assert.equal((await control('POST', '/v1/operations', { type: 'host-update', tenant: 'valueOf' })).status, 404);
    assert.equal((await imds('valueOf')).status, 404);
    const fault = await control('POST', '/v1/faults', { vm: 'constructor', status: 500 });
    assert.equal(fault.status, 201, fault.text);
    assert.equal((await imds('toString')).status, 200, "a fault for 'constructor' is not every VM's");
    assert.equal((await imds('constructor')).status, 500);
    const events = (await control('GET', '/v1/events')).json.events as { tenant: string }[];
    assert.deepEqual(events.map((e) => e.tenant).sort(), ['__proto__', 'constructor', 'toString']);
    const deleted = await control('DELETE', '/v1/vms/__defineGetter__');
    assert.equal(deleted.status, 200);
    assert.equal(
      (await control('GET', '/v1/fleet')).json.tenants.some((t: { name: string }) => t.name === '__defineGetter__'),
      false,
    );
  });

  it('runs a scenario whose VMs, tenants and hosts have such names, from a file and over HTTP', async () => {
    const text = [
      'name: proto',
      'fleet:',
      '  vms:',
      '    - { name: __proto__, tenant: constructor, host: toString }',
      '    - { name: hasOwnProperty, tenant: constructor, host: toString }',
      'steps:',
      '  - at: 0',
      '    operation: { type: platform-reboot, host: toString }',
      '    as: m',
      '  - at: 0',
      '    expect: { vm: __proto__, events: [{ ref: m, status: Scheduled, resources: [__proto__, hasOwnProperty] }] }',
      '  - at: 1m',
      '    approve: { vm: hasOwnProperty, events: [m.constructor] }',
      '  - at: 1m',
      '    expect: { vm: __proto__, events: [{ ref: m, status: Started }] }',
    ].join('\n');
    const scenario = parseScenario(text, 'proto.yaml');
    assert.deepEqual(
      scenario.fleet.map((v) => v.name),
      ['__proto__', 'hasOwnProperty'],
    );
    const { emulator, control } = await start();
    after(() => emulator.close());
    const res = await control('POST', '/v1/scenarios', { scenario: scenario.source });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.status, 'passed', JSON.stringify(res.json.report.steps));
  });
});

describe('names like __proto__ across a restart', () => {
  it('keeps the incarnation of VM __proto__ through the state file: 5 before, 5 after, then 6', async () => {
    const statePath = join(root, 'state.json');
    const first = await start({ statePath });
    await first.control('POST', '/v1/vms', { name: '__proto__' });
    assert.equal((await first.imds('__proto__')).json.DocumentIncarnation, 1);
    // Each change of its document raises the incarnation by one: 2, 3, 4, 5.
    for (let i = 0; i < 2; i++) {
      const op = await first.control('POST', '/v1/operations', { type: 'freeze', vms: ['__proto__'] });
      assert.equal(op.status, 201, op.text);
      assert.equal((await first.control('POST', `/v1/events/${op.json.events[0]}/cancel`)).status, 200);
    }
    assert.equal((await first.imds('__proto__')).json.DocumentIncarnation, 5);
    await first.emulator.close();

    const second = await start({ statePath });
    after(() => second.emulator.close());
    assert.equal((await second.imds('__proto__')).json.DocumentIncarnation, 5, 'the incarnation survives the restart');
    const op = await second.control('POST', '/v1/operations', { type: 'freeze', vms: ['__proto__'] });
    assert.equal(op.status, 201, op.text);
    assert.equal((await second.imds('__proto__')).json.DocumentIncarnation, 6);
  });
});
