import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { FleetFileError, loadFleetFile, parseFleet } from '../../../src/emulator/fleet/file.js';
import { tempDir } from '../../support/temp.js';
import { placement } from '../../support/fleet.js';

const dir = tempDir('fleet');

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

/** Parsing these lines as fleet.yaml fails with `expected`. */
function refuses(text: readonly string[], expected: string | RegExp): FleetFileError {
  return assertError(() => parseFleet(text.join('\n'), 'fleet.yaml'), expected);
}

describe('loadFleetFile', () => {
  it('reads a YAML fleet', () => {
    const yaml = [
      '# comment',
      'vms:',
      '  - name: a',
      '    tenant: as1',
      '    tenantKind: availabilitySet',
      '    faultDomain: 1',
      '  - name: b',
      '',
    ];
    const path = write('ok.yaml', yaml.join('\n'));
    assert.deepEqual(loadFleetFile(path), [{ name: 'a', tenant: 'as1', tenantKind: 'availabilitySet', faultDomain: 1 }, { name: 'b' }]);
  });

  it('reads a JSON fleet', () => {
    const path = write(
      'ok.json',
      JSON.stringify({ vms: [{ name: 'a', priority: 'Spot', tenant: 'ss', tenantKind: 'scaleSet' }] }, null, 2),
    );
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
    refuses(
      ['hosts:', '  - name: h1', '    vms: [a]', 'vms:', '  - name: a', '    host: h2'],
      "fleet.yaml:3:11: hosts[0].vms[0]: VM 'a' is placed on host 'h1' here but on 'h2' in vms[0].host",
    );
    refuses(
      ['hosts:', '  - {name: h1, vms: [a]}', '  - {name: h2, vms: [a]}', 'vms: [{name: a}]'],
      "fleet.yaml:3:22: hosts[1].vms[0]: VM 'a' is already placed on host 'h1' (hosts[0].vms[0])",
    );
    refuses(['hosts:', '  - {name: h1, vms: [zz]}', 'vms: [{name: a}]'], "fleet.yaml:2:22: hosts[0].vms[0]: no VM named 'zz' in the fleet");
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
    refuses(['vms:', '  - name: a', '    fualtDomain: 1'], 'fleet.yaml:3:5: vms[0].fualtDomain: unknown key "fualtDomain"');
    refuses(['vms: [{name: a}]', 'vm: []'], 'fleet.yaml:2:1: vm: unknown key "vm"');
  });

  it('rejects a duplicate VM', () => {
    refuses(['vms:', '  - name: a', '  - name: b', '  - name: a'], "fleet.yaml:4:11: vms[2].name: duplicate VM name 'a' (first at vms[0])");
  });

  it('applies the engine’s rules: a fault domain outside the tenant’s count', () => {
    assertError(
      () =>
        parseFleet(
          [
            'tenants:',
            '  - {name: as1, kind: availabilitySet, faultDomainCount: 2}',
            'vms:',
            '  - name: a',
            '    tenant: as1',
            '    faultDomain: 2',
          ].join('\n'),
          'fleet.yaml',
        ),
      "fleet.yaml:6:18: vms[0].faultDomain: VM 'a': faultDomain must be an integer from 0 to 1, got 2",
    );
  });

  it('points at the tenant when a tenant default breaks a rule', () => {
    assertError(
      () =>
        parseFleet(
          [
            'tenants:',
            '  - name: as1',
            '    kind: availabilitySet',
            '    terminateNotificationMinutes: 10',
            'vms:',
            '  - {name: a, tenant: as1}',
          ].join('\n'),
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
    const err = refuses(['vms:', '  - name: a', '    tenant: [x', 'hosts: []'], /^fleet\.yaml:\d+:\d+: YAML syntax error: /);
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
    const specs = loadFleetFile(new URL('../../../examples/fleet.yaml', import.meta.url).pathname);
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

const lines = (...l: string[]) => l.join('\n');
const engineOf = (specs: VmSpec[]) => new Engine({ clock: new ManualClock(0), fleet: specs });

describe('tenants: update domains and placement groups', () => {
  it('takes updateDomainCount and scaleSet as defaults', () => {
    const specs = parseFleet(
      lines(
        'tenants:',
        '  - {name: as1, kind: availabilitySet, faultDomainCount: 3, updateDomainCount: 10}',
        '  - {name: big-pg1, kind: scaleSet, scaleSet: big, faultDomainCount: 1}',
        'vms:',
        '  - {name: a, tenant: as1, updateDomain: 9}',
        '  - {name: b, tenant: big-pg1}',
      ),
      'fleet.yaml',
    );
    assert.deepEqual(specs, [
      { name: 'a', tenant: 'as1', tenantKind: 'availabilitySet', updateDomain: 9, faultDomainCount: 3, updateDomainCount: 10 },
      { name: 'b', tenant: 'big-pg1', tenantKind: 'scaleSet', scaleSet: 'big', faultDomainCount: 1 },
    ]);
    const engine = engineOf(specs);
    assert.equal(engine.fleet.tenants.get('as1')!.updateDomainCount, 10);
    assert.equal(engine.fleet.get('b').scaleSet, 'big');
  });

  it('blames the tenant for an update domain count or scale set that breaks a rule', () => {
    refuses(
      ['tenants:', '  - {name: t, kind: availabilitySet, updateDomainCount: 2}', 'vms:', '  - {name: a, tenant: t, updateDomain: 3}'],
      "fleet.yaml:4:40: vms[0].updateDomain: VM 'a': updateDomain must be an integer from 0 to 1, got 3",
    );
    refuses(
      ['tenants:', '  - {name: t, kind: availabilitySet, updateDomainCount: 30}', 'vms: [{name: a, tenant: t}]'],
      "fleet.yaml:2:57: tenants[0].updateDomainCount: VM 'a': updateDomainCount must be an integer from 1 to 20, got 30",
    );
    refuses(
      ['tenants:', '  - {name: t, kind: availabilitySet, scaleSet: x}', 'vms: [{name: a, tenant: t}]'],
      "fleet.yaml:2:48: tenants[0].scaleSet: VM 'a': scaleSet applies only to scale-set VMs (tenantKind scaleSet)",
    );
    refuses(
      ['tenants:', '  - {name: t, kind: scaleSet}', '  - {name: t, kind: scaleSet}', 'vms: [{name: a, tenant: t}]'],
      "fleet.yaml:3:12: tenants[1].name: tenant 't' is declared twice (first at tenants[0])",
    );
  });
});

describe('scaleSets:', () => {
  it('expands instances into one tenant named after the scale set', () => {
    const specs = parseFleet(
      lines('scaleSets:', '  - name: ss', '    instances: 3', '    faultDomainCount: 2', '    priority: Spot'),
      'fleet.yaml',
    );
    const common = { tenant: 'ss', tenantKind: 'scaleSet', priority: 'Spot', faultDomainCount: 2, updateDomainCount: 5 } as const;
    assert.deepEqual(specs, [
      { name: 'ss_0', faultDomain: 0, updateDomain: 0, ...common },
      { name: 'ss_1', faultDomain: 1, updateDomain: 1, ...common },
      { name: 'ss_2', faultDomain: 0, updateDomain: 2, ...common },
    ]);
    const engine = engineOf(specs);
    assert.deepEqual([...engine.fleet.tenants.keys()], ['ss']);
    assert.ok([...engine.fleet.vms.values()].every((vm) => vm.scaleSet === 'ss' && vm.priority === 'Spot'));
  });

  it('makes a tenant per placement group, instances round robin over groups then fault domains', () => {
    const specs = parseFleet(
      lines(
        'scaleSets:',
        '  - name: web',
        '    placementGroups: 2',
        '    instances: 5',
        '    faultDomainCount: 2',
        '    updateDomainCount: 2',
        '    terminateNotificationMinutes: 10',
        '    osImageNotification: true',
        '    hosts: 3',
        '    hostPrefix: node',
      ),
      'fleet.yaml',
    );
    assert.deepEqual(placement(specs), [
      ['web_0', 'web-pg0', 0, 0, 'node0'],
      ['web_1', 'web-pg1', 0, 0, 'node2'],
      ['web_2', 'web-pg0', 1, 1, 'node1'],
      ['web_3', 'web-pg1', 1, 1, 'node1'],
      ['web_4', 'web-pg0', 0, 0, 'node0'],
    ]);
    const engine = engineOf(specs);
    assert.deepEqual([...engine.fleet.tenants.keys()], ['web-pg0', 'web-pg1']);
    for (const vm of engine.fleet.vms.values()) {
      assert.equal(vm.scaleSet, 'web');
      assert.equal(vm.terminateNotificationMinutes, 10);
      assert.equal(vm.osImageNotification, true);
    }
  });

  it('lets listed VMs join a scale set by tenant or by scaleSet, with its settings as defaults', () => {
    const specs = parseFleet(
      lines(
        'scaleSets:',
        '  - {name: one, terminateNotificationMinutes: 5, gpu: true, faultDomainCount: 1}',
        '  - {name: two, placementGroups: 2, priority: Spot}',
        'vms:',
        '  - {name: a, scaleSet: one, address: 10.0.0.4}',
        '  - {name: b, tenant: one}',
        '  - {name: c, tenant: two-pg1, faultDomain: 3}',
      ),
      'fleet.yaml',
    );
    assert.deepEqual(specs, [
      {
        name: 'a',
        tenant: 'one',
        tenantKind: 'scaleSet',
        scaleSet: 'one',
        address: '10.0.0.4',
        terminateNotificationMinutes: 5,
        gpu: true,
        faultDomainCount: 1,
      },
      { name: 'b', tenant: 'one', tenantKind: 'scaleSet', terminateNotificationMinutes: 5, gpu: true, faultDomainCount: 1 },
      { name: 'c', tenant: 'two-pg1', tenantKind: 'scaleSet', scaleSet: 'two', priority: 'Spot', faultDomain: 3 },
    ]);
    const engine = engineOf(specs);
    assert.ok(engine.fleet.seesOnlyOwnEvents(engine.fleet.get('b')));
    assert.equal(engine.fleet.byAddress('10.0.0.4')?.name, 'a');
    assert.equal(engine.fleet.get('c').scaleSet, 'two');
  });

  it('reports problems at the scale set, with file:line:col', () => {
    const ss =
      (...l: string[]) =>
      () =>
        parseFleet(lines('scaleSets:', '  - name: ss', ...l), 'fleet.yaml');
    assertError(
      ss('    instances: 3', '    hosts: 2'),
      'fleet.yaml:4:12: scaleSets[0].hosts: must be at least the fault domain count (5), got 2',
    );
    assertError(
      ss('    instances: 3', '    hosts: abc'),
      'fleet.yaml:4:12: scaleSets[0].hosts: expected a host count or a list of host names',
    );
    assertError(
      ss('    instances: 3', '    faultDomainCount: 1', '    hosts: [a, b, a]'),
      "fleet.yaml:5:19: scaleSets[0].hosts[2]: host 'a' is listed twice",
    );
    assertError(ss('    hosts: 5'), 'fleet.yaml:3:12: scaleSets[0].hosts: places generated instances; set instances too');
    assertError(
      ss('    instances: 2', '    hostPrefix: x'),
      'fleet.yaml:4:17: scaleSets[0].hostPrefix: applies only with a host count (hosts: N)',
    );
    assertError(
      ss('    instances: 2', '    terminateNotificationMinutes: 20'),
      /^fleet\.yaml:4:35: scaleSets\[0\]\.terminateNotificationMinutes: Too big/,
    );
    assertError(ss('    instances: 2', '    placementGroups: 0'), /^fleet\.yaml:4:22: scaleSets\[0\]\.placementGroups: Too small/);
    assertError(ss('    instances: 2', '    gpu: "yes"'), 'fleet.yaml:4:10: scaleSets[0].gpu: expected boolean, received string');
    assertError(ss('    instances: 2', '    instance: 2'), 'fleet.yaml:4:5: scaleSets[0].instance: unknown key "instance"');
    refuses(
      ['scaleSets:', '  - {name: "bad name", instances: 1}'],
      /^fleet\.yaml:2:12: scaleSets\[0\]\.name: VM 'bad name_0': VM name "bad name_0" must be/,
    );
    refuses(
      ['scaleSets:', '  - {name: ss, instances: 1}', '  - {name: ss, instances: 1}'],
      "fleet.yaml:3:12: scaleSets[1].name: scale set 'ss' is listed twice (first at scaleSets[0])",
    );
  });

  it('asks listed VMs of a scale set of several placement groups to name one', () => {
    const two = ['scaleSets:', '  - {name: ss, placementGroups: 2}', 'vms:'];
    refuses(
      [...two, '  - {name: a, tenant: ss}'],
      "fleet.yaml:4:23: vms[0].tenant: scale set 'ss' has 2 placement groups: set tenant to one of ss-pg0 … ss-pg1",
    );
    refuses(
      [...two, '  - {name: a, scaleSet: ss}'],
      "fleet.yaml:4:25: vms[0].scaleSet: scale set 'ss' has 2 placement groups: set tenant to one of ss-pg0 … ss-pg1",
    );
    refuses(
      [...two, '  - {name: a, tenant: ss-pg0, scaleSet: other}'],
      "fleet.yaml:4:41: vms[0].scaleSet: tenant 'ss-pg0' belongs to scale set 'ss', not 'other'",
    );
  });
});

describe('generate:', () => {
  /** Three availability sets of four VMs over six shared hosts. */
  const custSets = ['generate:', '  - availabilitySets: 3', '    vmsPerSet: 4', '    hosts: 6'];

  it('expands availability sets over shared hosts', () => {
    const specs = parseFleet(lines(...custSets, '    faultDomainCount: 3', '    updateDomainCount: 2', '    prefix: cust'), 'fleet.yaml');
    assert.equal(specs.length, 12);
    assert.deepEqual(specs[4], {
      name: 'cust1-vm0',
      tenant: 'cust1',
      tenantKind: 'availabilitySet',
      faultDomain: 0,
      updateDomain: 0,
      host: 'host0',
      faultDomainCount: 3,
      updateDomainCount: 2,
    });
    const engine = engineOf(specs);
    assert.equal(engine.fleet.tenants.size, 3);
    assert.equal(engine.fleet.hosts.size, 6);
    // Customers share hosts; a host lies in a single fault domain of each.
    const host0 = [...engine.fleet.hosts.get('host0')!.vms].map((n) => engine.fleet.get(n));
    assert.deepEqual(new Set(host0.map((vm) => vm.tenant)), new Set(['cust0', 'cust1', 'cust2']));
    for (const host of engine.fleet.hosts.values()) {
      assert.equal(new Set([...host.vms].map((n) => engine.fleet.get(n).faultDomain)).size, 1, host.name);
    }
  });

  it('mixes with listed VMs, scale sets on the same hosts and hosts: placement', () => {
    const specs = parseFleet(
      lines(
        'generate:',
        '  - {availabilitySets: 2, vmsPerSet: 2, hosts: 2}',
        '  - {availabilitySets: 1, vmsPerSet: 2, hosts: 2, prefix: db}',
        'scaleSets:',
        '  - {name: ss, instances: 2, faultDomainCount: 2, hosts: 2}',
        '  - {name: solo, instances: 1}',
        'hosts:',
        '  - {name: host1, vms: [solo_0, extra]}',
        'vms:',
        '  - {name: extra, tenant: as1, faultDomain: 1, address: 127.0.0.9}',
      ),
      'fleet.yaml',
    );
    const engine = engineOf(specs);
    assert.equal(engine.fleet.size, 2 * 2 + 2 + 2 + 1 + 1);
    assert.deepEqual([...engine.fleet.hosts.get('host1')!.vms].sort(), ['as0-vm1', 'as1-vm1', 'db0-vm1', 'extra', 'solo_0', 'ss_1'].sort());
    assert.equal(engine.fleet.tenants.get('as1')!.vms.size, 3);
  });

  it('reports problems at the generate entry, with file:line:col', () => {
    const gen =
      (...l: string[]) =>
      () =>
        parseFleet(lines('generate:', '  - availabilitySets: 2', '    vmsPerSet: 3', ...l), 'fleet.yaml');
    assertError(gen('    hosts: 1'), 'fleet.yaml:4:12: generate[0].hosts: must be at least the fault domain count (2), got 1');
    assertError(
      gen('    hosts: 2', '    faultDomainCount: 3'),
      'fleet.yaml:4:12: generate[0].hosts: must be at least the fault domain count (3), got 2',
    );
    assertError(
      gen('    hosts: 4', '    faultDomainCount: 4'),
      /^fleet\.yaml:5:23: generate\[0\]\.faultDomainCount: Too big: expected number to be <=3/,
    );
    assertError(gen(), 'fleet.yaml:2:5: generate[0].hosts: missing (required)');
    assertError(gen('    hosts: "4"'), 'fleet.yaml:4:12: generate[0].hosts: expected number, received string');
    assertError(gen('    hosts: 4', '    prefixes: x'), 'fleet.yaml:5:5: generate[0].prefixes: unknown key "prefixes"');
    assertError(
      gen('    hosts: 4', '    prefix: "a b"'),
      /^fleet\.yaml:5:13: generate\[0\]\.prefix: VM 'a b0-vm0': VM name "a b0-vm0" must be/,
    );
    refuses(
      ['generate:', '  - {availabilitySets: 2000, vmsPerSet: 1000, hosts: 4}'],
      'fleet.yaml:2:41: generate[0].vmsPerSet: 2000 sets of 1000 VMs make 2000000; at most 1000000',
    );
  });

  it('puts a listed VM that breaks the host rule of a generated set in the wrong', () => {
    assertError(
      () =>
        parseFleet(
          lines(
            'generate:',
            '  - {availabilitySets: 1, vmsPerSet: 2, hosts: 2}',
            'vms:',
            '  - {name: x, tenant: as0, faultDomain: 1, host: host0}',
          ),
          'fleet.yaml',
        ),
      "fleet.yaml:4:41: vms[0].faultDomain: VM 'x': host 'host0' already carries 'as0-vm0' of tenant 'as0' in fault domain 0; " +
        "a host lies in one fault domain of each tenant, so 'x' cannot be in fault domain 1 there",
    );
    refuses(
      ['scaleSets:', '  - {name: ss, instances: 2}', 'hosts:', '  - {name: h, vms: [ss_0, ss_1]}'],
      /^fleet\.yaml:4:27: hosts\[0\]\.vms\[1\]: VM 'ss_1': host 'h' already carries 'ss_0' of tenant 'ss' in fault domain 0/,
    );
    refuses(
      ['scaleSets:', '  - {name: ss, instances: 2, hosts: 5}', 'hosts:', '  - {name: h, vms: [ss_1]}'],
      "fleet.yaml:4:21: hosts[0].vms[0]: VM 'ss_1' is placed on host 'h' here but on 'host1' by scaleSets[0].hosts",
    );
  });
});

describe('names across sections', () => {
  it('reports a duplicate VM at its second occurrence, in file order', () => {
    const scaleSet = ['scaleSets:', '  - {name: ss, instances: 2}'];
    const vms = ['vms:', '  - {name: ss_1}'];
    assertError(
      () => parseFleet(lines(...scaleSet, ...vms), 'fleet.yaml'),
      "fleet.yaml:4:12: vms[0].name: duplicate VM name 'ss_1' (first at scaleSets[0])",
    );
    assertError(
      () => parseFleet(lines(...vms, ...scaleSet), 'fleet.yaml'),
      "fleet.yaml:4:12: scaleSets[0].name: duplicate VM name 'ss_1' (first at vms[0])",
    );
    refuses(
      ['generate:', '  - {availabilitySets: 1, vmsPerSet: 2, hosts: 2}', 'vms: [{name: as0-vm1}]'],
      "fleet.yaml:3:14: vms[0].name: duplicate VM name 'as0-vm1' (first at generate[0])",
    );
  });

  it('reports a duplicate tenant at its second occurrence, in file order', () => {
    const cases: [string[], string][] = [
      [
        ['tenants:', '  - {name: as0, kind: availabilitySet}', 'generate:', '  - {availabilitySets: 2, vmsPerSet: 3, hosts: 4}'],
        "fleet.yaml:4:5: generate[0]: tenant 'as0' is declared twice (first at tenants[0])",
      ],
      [
        ['generate:', '  - {availabilitySets: 2, vmsPerSet: 3, hosts: 4, prefix: x}', 'tenants:', '  - {name: x1, kind: scaleSet}'],
        "fleet.yaml:4:12: tenants[0].name: tenant 'x1' is declared twice (first at generate[0])",
      ],
      [
        ['generate:', '  - {availabilitySets: 1, vmsPerSet: 1, hosts: 2}', '  - {availabilitySets: 1, vmsPerSet: 1, hosts: 2}'],
        "fleet.yaml:3:5: generate[1]: tenant 'as0' is declared twice (first at generate[0])",
      ],
      [
        ['scaleSets:', '  - {name: ss, placementGroups: 2}', 'tenants:', '  - {name: ss-pg1, kind: scaleSet}', 'vms: [{name: a}]'],
        "fleet.yaml:4:12: tenants[0].name: tenant 'ss-pg1' is declared twice (first at scaleSets[0])",
      ],
    ];
    for (const [text, message] of cases) refuses(text, message);
  });

  it('needs a VM from some section', () => {
    assertError(() => parseFleet('tenants: []\n', 'fleet.yaml'), /^fleet\.yaml:1:1: a fleet needs at least one VM/);
    assertError(
      () => parseFleet(lines('vms: []', 'scaleSets: [{name: ss, instances: 0}]'), 'fleet.yaml'),
      /^fleet\.yaml:1:6: vms: a fleet needs at least one VM/,
    );
    assert.equal(parseFleet('scaleSets: [{name: ss, instances: 1}]\nvms: []\n', 'fleet.yaml').length, 1);
  });

  it('reads the new sections from JSON, with positions', () => {
    const json = JSON.stringify(
      { generate: [{ availabilitySets: 1, vmsPerSet: 2, hosts: 2 }], scaleSets: [{ name: 'ss', instances: 1 }] },
      null,
      2,
    );
    assert.equal(parseFleet(json, 'fleet.json').length, 3);
    assertError(
      () => parseFleet('{\n  "generate": [\n    {"availabilitySets": 1, "vmsPerSet": 2, "hosts": 1}\n  ]\n}', 'fleet.json'),
      'fleet.json:3:54: generate[0].hosts: must be at least the fault domain count (2), got 1',
    );
  });
});

describe('every problem at once', () => {
  it('a fleet file with several schema problems lists each at its line and column', () => {
    const err = assertError(
      () => parseFleet('vms:\n  - name: a\n    colour: red\n  - name: 7\n    tenant: [x]\n', 'fleet.yaml'),
      /^fleet\.yaml:3:5: vms\[0\]\.colour: unknown key "colour"\nfleet\.yaml:4:11: vms\[1\]\.name: .+\nfleet\.yaml:5:13: vms\[1\]\.tenant: .+$/,
    );
    assert.equal(err.located.length, 3);
    assert.equal(err.line, 3, 'the error’s own place is the first problem’s');
    assert.doesNotMatch(err.message, /more problem/);
  });
});

describe('examples/', () => {
  const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));
  const load = (name: string) => engineOf(loadFleetFile(join(examples, name)));

  it('every example fleet loads into an engine', () => {
    // agent.yaml, agent-*.yaml and controller.yaml are the agent's and the controller's configs, checked by their own tests.
    const files = readdirSync(examples).filter(
      (f) => /\.(ya?ml|json)$/.test(f) && !/^agent(-[\w-]+)?\.yaml$/.test(f) && f !== 'controller.yaml',
    );
    assert.ok(files.length >= 5, files.join(', '));
    for (const file of files) assert.ok(load(file).fleet.size > 0, file);
  });

  it('shared-hosts.yaml: three customers on three hosts, known by address', () => {
    const { fleet } = load('shared-hosts.yaml');
    assert.equal(fleet.hosts.size, 3);
    for (const host of fleet.hosts.values()) {
      assert.equal(new Set([...host.vms].map((n) => fleet.get(n).tenant)).size, 3, host.name);
    }
    assert.deepEqual(
      [...fleet.tenants.values()].map((t) => [t.name, t.kind, t.faultDomainCount]),
      [
        ['contoso-web', 'availabilitySet', 3],
        ['fabrikam-db', 'availabilitySet', 3],
        ['litware-batch', 'scaleSet', 3],
      ],
    );
    assert.equal(fleet.byAddress('127.0.0.8')?.name, 'litware-batch_0');
    assert.ok([...fleet.vms.values()].every((vm) => vm.address?.startsWith('127.0.0.')));
  });

  it('scale-sets.yaml: placement groups, Spot, GPU single-FD and OS image notification', () => {
    const { fleet } = load('scale-sets.yaml');
    assert.deepEqual([...fleet.tenants.keys()], ['web-pg0', 'web-pg1', 'spot', 'gpu', 'app']);
    assert.deepEqual([...fleet.tenants.get('web-pg1')!.vms], ['web_1', 'web_3', 'web_5']);
    assert.ok([...fleet.tenants.get('web-pg0')!.vms].every((n) => fleet.get(n).terminateNotificationMinutes === 10));
    assert.ok([...fleet.tenants.get('spot')!.vms].every((n) => fleet.get(n).priority === 'Spot'));
    assert.ok(fleet.seesOnlyOwnEvents(fleet.get('gpu_1')));
    assert.ok(fleet.get('app_2').osImageNotification);
  });

  it('large-fleet.yaml: 100 availability sets of 10 VMs over 200 hosts', () => {
    const { fleet } = load('large-fleet.yaml');
    assert.equal(fleet.size, 1000);
    assert.equal(fleet.tenants.size, 100);
    assert.equal(fleet.hosts.size, 200);
  });

  it('cloud-service.yaml: a cloud service and standalone VMs', () => {
    const { fleet } = load('cloud-service.yaml');
    assert.equal(fleet.tenants.get('legacy-shop')?.kind, 'cloudService');
    assert.equal(fleet.tenants.get('legacy-shop')?.vms.size, 4);
    assert.equal(fleet.tenants.get('jumpbox')?.kind, 'standalone');
    assert.equal(fleet.get('build-agent').host, 'build-host');
  });
});

describe('fleets in the docs', () => {
  const yamlBlocks = (text: string) => [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);

  it('the README’s fleet example loads', () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Fleet files'), readme.indexOf('## State across restarts'));
    const [block] = yamlBlocks(section);
    assert.ok(block !== undefined);
    assert.equal(engineOf(parseFleet(block, 'README.yaml')).fleet.size, 1 + 4 + 1000 + 2);
  });

  it('the complete fleets in docs/fleet-files.md load', () => {
    const docs = readFileSync(new URL('../../../docs/fleet-files.md', import.meta.url), 'utf8');
    // Blocks that show one section alone (tenants:, hosts:) are fragments.
    const fleets = yamlBlocks(docs).filter((b) => /^(scaleSets|generate):/.test(b));
    assert.equal(fleets.length, 4);
    for (const block of fleets) assert.ok(engineOf(parseFleet(block, 'docs.yaml')).fleet.size > 0);
  });
});

describe('Spot eviction policy and power state', () => {
  it('a Spot scale set gives its instances its evictionPolicy; a VM may start deallocated', () => {
    const specs = parseFleet(
      [
        'scaleSets:',
        '  - { name: spot, instances: 2, priority: Spot, evictionPolicy: Delete }',
        'vms:',
        '  - { name: lone, priority: Spot, powerState: deallocated }',
      ].join('\n'),
      'fleet.yaml',
    );
    const engine = engineOf(specs);
    assert.deepEqual(
      [...engine.fleet.vms.values()].map((vm) => [vm.name, vm.evictionPolicy, vm.powerState]),
      [
        ['spot_0', 'Delete', 'running'],
        ['spot_1', 'Delete', 'running'],
        ['lone', 'Deallocate', 'deallocated'],
      ],
    );
  });

  it('a Regular VM with an eviction policy or deallocated is refused at its place', () => {
    assert.throws(
      () => parseFleet('vms:\n  - { name: reg, evictionPolicy: Delete }', 'fleet.yaml'),
      /^FleetFileError: fleet\.yaml:2:\d+: vms\[0\]\.evictionPolicy: VM 'reg': evictionPolicy applies only to Spot VMs/,
    );
    assert.throws(
      () => parseFleet('vms:\n  - { name: reg, powerState: deallocated }', 'fleet.yaml'),
      /fleet\.yaml:2:\d+: vms\[0\]\.powerState: .*only to Spot VMs/,
    );
  });
});

describe('computer names', () => {
  const vmsOf = (text: readonly string[]) => engineOf(parseFleet(text.join('\n'), 'fleet.yaml')).fleet;

  it('derives them by default, and takes computerNamePrefix, computerName and orchestrationMode with ARM’s names', () => {
    const fleet = vmsOf([
      'scaleSets:',
      '  - { name: aks-nodepool1-12345678-vmss, instances: 19 }',
      '  - { name: winpool-scale-set, instances: 2, osType: Windows }',
      '  - { name: web, instances: 2, computerNamePrefix: frontend- }',
      '  - { name: flex, instances: 2, orchestrationMode: Flexible, computerNamePrefix: app }',
      'vms:',
      '  - { name: web_7, tenant: web, computerName: web-special }',
      '  - { name: lone }',
      '  - { name: other, computerName: db-primary }',
    ]);
    const name = (vm: string) => fleet.get(vm).computerName;
    assert.equal(name('aks-nodepool1-12345678-vmss_18'), 'aks-nodepool1-12345678-vmss00000I');
    assert.equal(name('winpool-scale-set_1'), 'winpool-s000001');
    assert.equal(name('web_1'), 'frontend-000001');
    assert.equal(name('web_7'), 'web-special');
    assert.equal(name('lone'), 'lone');
    assert.equal(name('other'), 'db-primary');
    const flex = [...fleet.vms.values()].filter((vm) => vm.scaleSet === 'flex');
    assert.equal(flex.length, 2);
    for (const vm of flex) {
      assert.match(vm.name, /^flex_[0-9a-f]{8}$/);
      assert.equal(vm.orchestrationMode, 'Flexible');
      assert.equal(vm.computerName, `app${vm.name.slice(5, 11)}`);
    }
  });

  it('a listed VM joins its scale set’s mode and prefix', () => {
    const fleet = vmsOf([
      'scaleSets:',
      '  - { name: flex, orchestrationMode: Flexible, computerNamePrefix: app- }',
      'vms:',
      '  - { name: flex_0a1b2c3d, tenant: flex }',
    ]);
    assert.equal(fleet.get('flex_0a1b2c3d').computerName, 'app-0a1b2c');
  });

  it('refuses names Azure refuses, at the value, with file:line:col', () => {
    refuses(
      ['vms:', '  - { name: a, computerName: a_b }'],
      `fleet.yaml:2:30: vms[0].computerName: VM 'a': computerName "a_b" holds "_"; a Linux computer name is 1-64 letters, digits, '-' and '.'`,
    );
    refuses(
      ['vms:', '  - { name: w, osType: Windows, computerName: sixteen-chars-xx }'],
      `fleet.yaml:2:47: vms[0].computerName: VM 'w': computerName "sixteen-chars-xx" has 16 characters; a Windows computer name is 1-15 letters, digits and '-'`,
    );
    refuses(
      ['scaleSets:', '  - { name: web, instances: 2, computerNamePrefix: frontends-, osType: Windows }'],
      `fleet.yaml:2:52: scaleSets[0].computerNamePrefix: VM 'web_0': computerNamePrefix "frontends-" has 10 characters; a Windows computer name prefix is 1-9 letters, digits and '-'`,
    );
    refuses(['vms:', '  - { name: a, computerName: 42 }'], 'fleet.yaml:2:30: vms[0].computerName: expected string, received number');
    refuses(
      ['scaleSets:', '  - { name: web, instances: 2, orchestrationMode: Flexibel }'],
      'fleet.yaml:2:51: scaleSets[0].orchestrationMode: expected one of "Uniform"|"Flexible"',
    );
  });

  it('keeps the scale-set settings to scale sets, and one of each per scale set', () => {
    refuses(
      ['tenants:', '  - { name: as, kind: availabilitySet, computerNamePrefix: x }', 'vms:', '  - { name: a, tenant: as }'],
      "fleet.yaml:2:60: tenants[0].computerNamePrefix: VM 'a': computerNamePrefix applies only to scale-set VMs (tenantKind scaleSet)",
    );
    refuses(
      [
        'scaleSets:',
        '  - { name: web, instances: 2, orchestrationMode: Flexible }',
        'vms:',
        '  - { name: web-x, tenant: web, orchestrationMode: Uniform }',
      ],
      "fleet.yaml:4:52: vms[0].orchestrationMode: VM 'web-x': scale set 'web' is Flexible, not Uniform",
    );
  });

  it('refuses two VMs of one scale set with one computer name, at the second', () => {
    refuses(
      ['scaleSets:', '  - { name: web, instances: 2 }', 'vms:', '  - { name: web_01, tenant: web }'],
      "fleet.yaml:4:13: vms[0].name: VM 'web_01': computer name 'web000001' already belongs to VM 'web_1' of scale set 'web'; computer names are unique in a scale set (give one VM its own computerName)",
    );
    refuses(
      ['scaleSets:', '  - { name: web, instances: 2 }', 'vms:', '  - { name: web-x, tenant: web, computerName: WEB000001 }'],
      "fleet.yaml:4:47: vms[0].computerName: VM 'web-x': computer name 'WEB000001' already belongs to VM 'web_1' of scale set 'web'; computer names are unique in a scale set",
    );
  });
});
