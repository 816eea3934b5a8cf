// Files that parse but lie: alias bombs, impossible cross-references and sizes, refused with their place.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { run } from '../../../src/cli/program.js';
import { FleetFileError, MAX_FILE_FLEET_VMS, parseFleet } from '../../../src/emulator/fleet/file.js';
import { ScenarioError, parseScenario } from '../../../src/emulator/scenarios/load.js';
import { assertNoStack, captureIo } from '../../support/cli.js';
import { tempDir } from '../../support/temp.js';

const dir = tempDir('lies');

/** "Billion laughs": nine levels of ten aliases each, 10^9 values from under 500 bytes. */
function aliasBomb(indent = ''): string {
  const lines = [`${indent}l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]`];
  for (let i = 1; i <= 8; i++)
    lines.push(
      `${indent}l${i}: &l${i} [${Array(10)
        .fill(`*l${i - 1}`)
        .join(', ')}]`,
    );
  return lines.join('\n');
}

function timed<T>(f: () => T): { value: T | Error; ms: number } {
  const t = performance.now();
  try {
    return { value: f(), ms: performance.now() - t };
  } catch (err) {
    return { value: err as Error, ms: performance.now() - t };
  }
}

describe('a YAML alias bomb', () => {
  it('is refused in a fleet file at once, at the alias, naming the field', () => {
    const { value, ms } = timed(() => parseFleet(`vms: [{ name: a }]\n${aliasBomb()}\n`, 'bomb.yaml'));
    assert.ok(value instanceof FleetFileError, String(value));
    assert.match(value.message, /^bomb\.yaml:10:10: l8\[0\]: YAML aliases expand too far \(\*l7 stands for \d+ values\)/);
    assert.ok(ms < 500, `took ${ms.toFixed(0)} ms`);
  });

  it('is refused in a scenario file at once, inside its fleet', () => {
    const text = `name: bomb\nsteps: [{ at: 0, expect: { vm: a, events: [] } }]\nfleet:\n  vms: [{ name: a }]\n${aliasBomb('  ')}\n`;
    const { value, ms } = timed(() => parseScenario(text, 'bomb.yaml'));
    assert.ok(value instanceof ScenarioError, String(value));
    assert.match(value.message, /^bomb\.yaml:13:12: fleet\.l8\[0\]: YAML aliases expand too far/);
    assert.ok(ms < 500, `took ${ms.toFixed(0)} ms`);
  });

  it('still lets a few aliases share defaults', () => {
    const specs = parseFleet('vms:\n  - { name: a, tenant: &t web }\n  - { name: b, tenant: *t }\n', 'ok.yaml');
    assert.deepEqual(
      specs.map((s) => s.tenant),
      ['web', 'web'],
    );
  });
});

describe('fleet files that lie', () => {
  const bad: [string, string, RegExp][] = [
    [
      'a tenant declared but never joined',
      'tenants:\n  - { name: web, kind: availabilitySet }\nvms:\n  - { name: a, tenant: wbe }\n',
      /^f\.yaml:2:13: tenants\[0\]\.name: tenant 'web' is declared but no VM is in it$/,
    ],
    [
      'two VMs with one vmId',
      'vms:\n  - { name: a, vmId: ABC }\n  - { name: b, vmId: abc }\n',
      /^f\.yaml:3:22: vms\[1\]\.vmId: VM 'b': vmId abc already belongs to VM 'a'$/,
    ],
    [
      'entries adding up past the file limit',
      'generate:\n  - { availabilitySets: 1000, vmsPerSet: 1000, hosts: 2 }\n  - { availabilitySets: 1, vmsPerSet: 1, hosts: 2, prefix: b }\n',
      new RegExp(
        `^f\\.yaml:3:39: generate\\[1\\]\\.vmsPerSet: brings the fleet to ${MAX_FILE_FLEET_VMS + 1} VMs with the entries before it; a fleet file makes at most ${MAX_FILE_FLEET_VMS}$`,
      ),
    ],
    [
      'a host in two fault domains of one tenant',
      'vms:\n  - { name: a, tenant: t, faultDomain: 0, host: h }\n  - { name: b, tenant: t, faultDomain: 1, host: h }\n',
      /^f\.yaml:3:40: vms\[1\]\.faultDomain: VM 'b': host 'h' already carries 'a' of tenant 't' in fault domain 0/,
    ],
    [
      'a VM placed on a host twice',
      'vms: [{ name: a }]\nhosts:\n  - { name: h, vms: [a] }\n  - { name: g, vms: [a] }\n',
      /^f\.yaml:4:22: hosts\[1\]\.vms\[0\]: VM 'a' is already placed on host 'h'/,
    ],
  ];
  for (const [what, text, expected] of bad) {
    it(`refuses ${what}, naming file:line:col and the field`, () => {
      const { value, ms } = timed(() => parseFleet(text, 'f.yaml'));
      assert.ok(value instanceof FleetFileError, String(value));
      assert.match(value.message, expected);
      // The total is checked before anything is generated.
      assert.ok(ms < 1000, `took ${ms.toFixed(0)} ms`);
    });
  }
});

describe('forewarn emulator with a lying file', () => {
  it('--fleet BAD exits 2 with file:line:col: field: problem and no stack trace', async () => {
    const path = join(dir, 'bomb.yaml');
    writeFileSync(path, `vms: [{ name: a }]\n${aliasBomb()}\n`);
    const io = captureIo();
    const code = await run(['emulator', '--fleet', path, '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0'], io);
    assert.equal(code, 2, io.err);
    assert.match(
      io.err,
      new RegExp(`^forewarn: ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:10:10: l8\\[0\\]: YAML aliases expand too far`),
    );
    assertNoStack(io.err);
  });

  it('--state BAD exits 2 naming the field, with no stack trace', async () => {
    const path = join(dir, 'state.json');
    const event = {
      id: 'E1',
      operationId: 'o1',
      jobId: 'E1',
      tenant: 'nobody',
      type: 'Freeze',
      source: 'User',
      description: '',
      durationInSeconds: 5,
      resources: ['vm0'],
      status: 'Scheduled',
      createdAt: 0,
      notBefore: 1e300,
      startedAt: null,
      endsAt: null,
      startedBy: null,
      approvals: [],
    };
    const snapshot = {
      format: 'forewarn-state',
      version: 1,
      savedAt: 1e300,
      initialFleet: [{ name: 'vm0' }],
      vms: [{ name: 'vm0' }],
      events: [event],
      ended: [],
      operations: [],
      incarnations: { vm0: 1 },
    };
    writeFileSync(path, JSON.stringify(snapshot));
    const io = captureIo();
    const code = await run(['emulator', '--state', path, '--clock', 'manual', '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0'], io);
    assert.equal(code, 2, io.err);
    // The loader runs checkSnapshot (src/emulator/state/check.ts) and names the first problem's field.
    assert.match(io.err, /state\.json\b.*savedAt: 1e\+300 is not a time/);
    assertNoStack(io.err);
  });
});
