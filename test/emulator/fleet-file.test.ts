import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ManualClock } from '../../src/emulator/engine/clock.js';
import { Engine } from '../../src/emulator/engine/engine.js';
import { FleetFileError, loadFleetFile, parseFleet } from '../../src/emulator/fleet-file.js';

const dir = mkdtempSync(join(tmpdir(), 'forewarn-fleet-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Asserts a FleetFileError whose message is exactly `file:line:col: rest`. */
function assertError(fn: () => unknown, expected: string | RegExp): FleetFileError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof FleetFileError, `expected a FleetFileError, got ${String(caught)}`);
  if (typeof expected === 'string') assert.equal(caught.message, expected);
  else assert.match(caught.message, expected);
  return caught;
}

describe('loadFleetFile', () => {
  it('reads a YAML fleet', () => {
    const path = write(
      'ok.yaml',
      ['# comment', 'vms:', '  - name: a', '    tenant: as1', '    tenantKind: availabilitySet', '    faultDomain: 1', '  - name: b', ''].join('\n'),
    );
    assert.deepEqual(loadFleetFile(path), [
      { name: 'a', tenant: 'as1', tenantKind: 'availabilitySet', faultDomain: 1 },
      { name: 'b' },
    ]);
  });

  it('reads a JSON fleet', () => {
    const path = write('ok.json', JSON.stringify({ vms: [{ name: 'a', priority: 'Spot', tenant: 'ss', tenantKind: 'scaleSet' }] }, null, 2));
    assert.deepEqual(loadFleetFile(path), [{ name: 'a', priority: 'Spot', tenant: 'ss', tenantKind: 'scaleSet' }]);
  });

  it('reads a file without a known extension as YAML', () => {
    const path = write('fleet.conf', 'vms: [{name: a}, {name: b, address: 10.0.0.5}]\n');
    assert.deepEqual(loadFleetFile(path), [{ name: 'a' }, { name: 'b', address: '10.0.0.5' }]);
  });

  it('applies tenant settings as defaults, and a VM’s own fields win', () => {
    const specs = parseFleet(
      [
        'tenants:',
        '  - name: ss',
        '    kind: scaleSet',
        '    faultDomainCount: 1',
        '    terminateNotificationMinutes: 10',
        '    gpu: true',
        'vms:',
        '  - name: a',
        '    tenant: ss',
        '  - name: b',
        '    tenant: ss',
        '    gpu: false',
        '    terminateNotificationMinutes: 5',
      ].join('\n'),
      'fleet.yaml',
    );
    assert.deepEqual(specs, [
      { name: 'a', tenant: 'ss', tenantKind: 'scaleSet', faultDomainCount: 1, terminateNotificationMinutes: 10, gpu: true },
      { name: 'b', tenant: 'ss', tenantKind: 'scaleSet', faultDomainCount: 1, terminateNotificationMinutes: 5, gpu: false },
    ]);
  });

  it('places VMs on hosts listed under hosts:', () => {
    const specs = parseFleet(
      ['hosts:', '  - name: h1', '    vms: [a, b]', 'vms:', '  - name: a', '  - name: b', '    host: h1', '  - name: c'].join('\n'),
      'fleet.yaml',
    );
    assert.deepEqual(
      specs.map((s) => [s.name, s.host]),
      [
        ['a', 'h1'],
        ['b', 'h1'],
        ['c', undefined],
      ],
    );
  });

  it('rejects conflicting placement', () => {
    assertError(
      () => parseFleet(['hosts:', '  - name: h1', '    vms: [a]', 'vms:', '  - name: a', '    host: h2'].join('\n'), 'fleet.yaml'),
      "fleet.yaml:3:11: hosts[0].vms[0]: VM 'a' is placed on host 'h1' here but on 'h2' in vms[0].host",
    );
    assertError(
      () => parseFleet(['hosts:', '  - {name: h1, vms: [a]}', '  - {name: h2, vms: [a]}', 'vms: [{name: a}]'].join('\n'), 'fleet.yaml'),
      "fleet.yaml:3:22: hosts[1].vms[0]: VM 'a' is already placed on host 'h1' (hosts[0].vms[0])",
    );
    assertError(
      () => parseFleet(['hosts:', '  - {name: h1, vms: [zz]}', 'vms: [{name: a}]'].join('\n'), 'fleet.yaml'),
      "fleet.yaml:2:22: hosts[0].vms[0]: no VM named 'zz' in vms",
    );
  });

  it('names file:line:col, the field and the problem for a wrong type', () => {
    const path = write('type.yaml', ['vms:', '  - name: a', '  - name: b', '    faultDomain: "1"', ''].join('\n'));
    const err = assertError(() => loadFleetFile(path), `${path}:4:18: vms[1].faultDomain: expected number, received string`);
    assert.equal(err.line, 4);
    assert.equal(err.col, 18);
  });

  it('gives positions in JSON files too', () => {
    const path = write('type.json', '{\n  "vms": [\n    { "name": "a", "gpu": "yes" }\n  ]\n}\n');
    assertError(() => loadFleetFile(path), `${path}:3:27: vms[0].gpu: expected boolean, received string`);
  });

  it('rejects unknown keys, pointing at the key', () => {
    assertError(
      () => parseFleet(['vms:', '  - name: a', '    fualtDomain: 1'].join('\n'), 'fleet.yaml'),
      'fleet.yaml:3:5: vms[0].fualtDomain: unknown key "fualtDomain"',
    );
    assertError(() => parseFleet(['vms: [{name: a}]', 'vm: []'].join('\n'), 'fleet.yaml'), 'fleet.yaml:2:1: vm: unknown key "vm"');
  });

  it('rejects a duplicate VM', () => {
    assertError(
      () => parseFleet(['vms:', '  - name: a', '  - name: b', '  - name: a'].join('\n'), 'fleet.yaml'),
      "fleet.yaml:4:11: vms[2].name: duplicate VM name 'a' (first at vms[0])",
    );
  });

  it('applies the engine’s rules: a fault domain outside the tenant’s count', () => {
    assertError(
      () =>
        parseFleet(
          ['tenants:', '  - {name: as1, kind: availabilitySet, faultDomainCount: 2}', 'vms:', '  - name: a', '    tenant: as1', '    faultDomain: 2'].join(
            '\n',
          ),
          'fleet.yaml',
        ),
      "fleet.yaml:6:18: vms[0].faultDomain: VM 'a': faultDomain must be an integer from 0 to 1, got 2",
    );
  });

  it('points at the tenant when a tenant default breaks a rule', () => {
    assertError(
      () =>
        parseFleet(
          ['tenants:', '  - name: as1', '    kind: availabilitySet', '    terminateNotificationMinutes: 10', 'vms:', '  - {name: a, tenant: as1}'].join('\n'),
          'fleet.yaml',
        ),
      /^fleet\.yaml:4:35: tenants\[0\]\.terminateNotificationMinutes: VM 'a': terminateNotificationMinutes applies only to scale-set VMs/,
    );
  });

  it('reports a missing required field and an empty fleet', () => {
    assertError(() => parseFleet('vms:\n  - tenant: x\n', 'fleet.yaml'), 'fleet.yaml:2:5: vms[0].name: missing (required)');
    assertError(() => parseFleet('vms: []\n', 'fleet.yaml'), /^fleet\.yaml:1:6: vms: .*at least one VM/);
    assertError(() => parseFleet('', 'fleet.yaml'), /^fleet\.yaml:1:1: the file is empty/);
  });

  it('reports YAML syntax errors with line and column', () => {
    const err = assertError(() => parseFleet(['vms:', '  - name: a', '    tenant: [x', 'hosts: []'].join('\n'), 'fleet.yaml'), /^fleet\.yaml:\d+:\d+: YAML syntax error: /);
    assert.ok(err.line >= 3, `line ${err.line}`);
    assertError(() => parseFleet('vms:\n  - name: a\n  name: b\n', 'fleet.yaml'), /^fleet\.yaml:3:\d+: YAML syntax error: /);
  });

  it('reports JSON syntax errors with line and column', () => {
    assertError(() => parseFleet('{\n  "vms": [\n    {"name": "a",}\n  ]\n}', 'fleet.json'), /^fleet\.json:3:18: JSON syntax error: /);
  });

  it('reports a missing file by name', () => {
    const path = join(dir, 'nope.yaml');
    assertError(() => loadFleetFile(path), `${path}: cannot read the fleet file: no such file`);
  });

  it('loads examples/fleet.yaml into an engine', () => {
    const specs = loadFleetFile(new URL('../../examples/fleet.yaml', import.meta.url).pathname);
    const engine = new Engine({ clock: new ManualClock(0), fleet: specs });
    const web = engine.fleet.tenants.get('web')!;
    assert.equal(web.kind, 'availabilitySet');
    assert.equal(web.vms.size, 3);
    assert.deepEqual(new Set([...web.vms].map((n) => engine.fleet.get(n).faultDomain)), new Set([0, 1]));
    const workers = engine.fleet.tenants.get('workers')!;
    assert.equal(workers.kind, 'scaleSet');
    assert.ok([...workers.vms].every((n) => engine.fleet.get(n).terminateNotificationMinutes !== null));
    assert.ok([...workers.vms].some((n) => engine.fleet.get(n).priority === 'Spot'));
    assert.equal(engine.fleet.tenants.get('jumpbox')?.kind, 'standalone');
  });
});
