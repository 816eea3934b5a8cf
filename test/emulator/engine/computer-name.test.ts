// Computer names (osProfile.computerName): the names Azure derives for scale-set VMs, the limits on
// declared ones, and the fleet's rules for them (unique in a scale set, one mode and prefix per set).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  base36InstanceId,
  computerNamePrefixProblem,
  computerNameProblem,
  defaultComputerName,
  flexibleComputerNameSuffix,
  flexibleNameSuffixes,
  uniformInstanceId,
} from '../../../src/emulator/engine/computer-name.js';
import { EngineError } from '../../../src/emulator/engine/errors.js';
import { Fleet, vmToSpec, type VmSpec } from '../../../src/emulator/engine/fleet.js';
import { generateScaleSet } from '../../../src/emulator/fleet/generator.js';

let ids = 0;
const newFleet = () => new Fleet(() => `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`);
const uniform = (name: string, scaleSet: string | null, osType: 'Linux' | 'Windows' = 'Linux', computerNamePrefix?: string) =>
  defaultComputerName({ name, scaleSet, orchestrationMode: scaleSet === null ? null : 'Uniform', computerNamePrefix, osType });

describe('base-36 instance ids', () => {
  // [imds] Six base-36 digits, zero-padded, upper case (Learn: prefix nsgvmss, instance 85 → nsgvmss00002D).
  const cases: [number | string, string][] = [
    [0, '000000'],
    [1, '000001'],
    [10, '00000A'],
    [18, '00000I'],
    [35, '00000Z'],
    [36, '000010'],
    [85, '00002D'],
    [1146, '0000VU'],
    [36 ** 6 - 1, 'ZZZZZZ'],
    ['007', '000007'],
  ];
  for (const [id, want] of cases) it(`instance ${id} → ${want}`, () => assert.equal(base36InstanceId(id), want));

  it('[choice] wraps round past ZZZZZZ, exactly even for ids beyond 2^53', () => {
    assert.equal(base36InstanceId(36 ** 6), '000000');
    assert.equal(base36InstanceId(36 ** 6 + 18), '00000I');
    assert.equal(base36InstanceId('99999999999999999999'), base36InstanceId(Number(10n ** 20n % 36n ** 6n) - 1));
  });

  it('the instance id is the digits after the last _', () => {
    assert.equal(uniformInstanceId('web_18'), '18');
    assert.equal(uniformInstanceId('my_set_03'), '03');
    assert.equal(uniformInstanceId('web-a'), null);
    assert.equal(uniformInstanceId('web_1a'), null);
  });
});

describe('default computer names', () => {
  it('a VM outside scale sets keeps its name', () => {
    assert.equal(uniform('web-0', null), 'web-0');
    assert.equal(uniform('contoso.db_1', null, 'Windows'), 'contoso.db_1');
  });

  it('a Uniform instance is its scale set name and six base-36 digits of its instance id', () => {
    assert.equal(uniform('aks-nodepool1-12345678-vmss_18', 'aks-nodepool1-12345678-vmss'), 'aks-nodepool1-12345678-vmss00000I');
    assert.equal(uniform('web_0', 'web'), 'web000000');
    assert.equal(uniform('web_35', 'web'), 'web00000Z');
    assert.equal(uniform('web_36', 'web'), 'web000010');
  });

  it('on Windows the default prefix is cut to 9 characters, so the name fits in 15', () => {
    assert.equal(uniform('averylongscaleset_36', 'averylongscaleset', 'Windows'), 'averylong000010');
    assert.equal(uniform('averylongscaleset_36', 'averylongscaleset', 'Linux'), 'averylongscaleset000010');
    assert.equal(uniform('short_1', 'short', 'Windows'), 'short000001');
  });

  it('[choice] on Linux a default prefix is cut to 58 characters, so the name fits in 64', () => {
    const set = 'a'.repeat(70);
    assert.equal(uniform(`${set}_1`, set), `${'a'.repeat(58)}000001`);
  });

  it('a declared prefix replaces the scale set name, uncut', () => {
    assert.equal(uniform('web_18', 'web', 'Linux', 'frontend-'), 'frontend-00000I');
  });

  it('[choice] a Uniform VM without an instance id in its name keeps its name', () => {
    assert.equal(uniform('batch-a', 'batch'), 'batch-a');
  });

  it('[choice] a Flexible VM adds six hex digits of its name to the prefix', () => {
    const flexible = (name: string, prefix?: string, osType: 'Linux' | 'Windows' = 'Linux') =>
      defaultComputerName({ name, scaleSet: 'flexset', orchestrationMode: 'Flexible', computerNamePrefix: prefix, osType });
    assert.equal(flexible('flexset_1a2b3c4d'), 'flexset1a2b3c');
    assert.equal(flexible('flexset_1A2B3C4D', 'app-'), 'app-1a2b3c');
    assert.equal(flexible('flexset_1a2b3c4d', undefined, 'Windows'), 'flexset1a2b3c');
    // Any other name: six hex digits of a hash of it, the same every time.
    assert.match(flexible('listed-vm'), /^flexset[0-9a-f]{6}$/);
    assert.equal(flexible('listed-vm'), flexible('listed-vm'));
    assert.equal(flexibleComputerNameSuffix('listed-vm'), flexible('listed-vm').slice('flexset'.length));
  });
});

describe('generated Flexible names', () => {
  it('are 8 hex digits, the same for the same scale set and index, different across scale sets', () => {
    const a = flexibleNameSuffixes('flex');
    const b = flexibleNameSuffixes('flex');
    const other = flexibleNameSuffixes('other');
    for (let i = 0; i < 50; i++) {
      assert.match(a(i), /^[0-9a-f]{8}$/);
      assert.equal(a(i), b(i));
    }
    assert.notEqual(a(0), other(0));
  });

  it('differ in their first six digits, so generated computer names never collide', () => {
    const suffix = flexibleNameSuffixes('big');
    const seen = new Set<string>();
    for (let i = 0; i < 200_000; i++) seen.add(suffix(i).slice(0, 6));
    assert.equal(seen.size, 200_000);
  });

  it('generateScaleSet names Flexible instances <name>_<8 hex> and marks them Flexible', () => {
    const specs = generateScaleSet({ name: 'flex', instances: 3, orchestrationMode: 'Flexible' });
    const suffix = flexibleNameSuffixes('flex');
    assert.deepEqual(
      specs.map((s) => s.name),
      [0, 1, 2].map((i) => `flex_${suffix(i)}`),
    );
    assert.ok(specs.every((s) => s.orchestrationMode === 'Flexible'));
    // Uniform names are unchanged.
    assert.deepEqual(
      generateScaleSet({ name: 'web', instances: 2 }).map((s) => s.name),
      ['web_0', 'web_1'],
    );
  });
});

describe('declared names: Azure limits', () => {
  it('Windows computer names: 1-15 letters, digits and -, not all digits', () => {
    assert.equal(computerNameProblem('web-01', 'Windows'), null);
    assert.equal(computerNameProblem('a'.repeat(15), 'Windows'), null);
    assert.match(
      computerNameProblem('a'.repeat(16), 'Windows')!,
      /has 16 characters; a Windows computer name is 1-15 letters, digits and '-'/,
    );
    assert.match(computerNameProblem('web.01', 'Windows')!, /holds "\."/);
    assert.match(computerNameProblem('web_01', 'Windows')!, /holds "_"/);
    assert.match(computerNameProblem('12345', 'Windows')!, /all digits/);
    assert.match(computerNameProblem('web-', 'Windows')!, /ends in '-'/);
    assert.match(computerNameProblem('', 'Windows')!, /has 0 characters/);
  });

  it('Linux computer names: 1-64 letters, digits, - and ., not ending in - or .', () => {
    assert.equal(computerNameProblem('web.internal-01', 'Linux'), null);
    assert.equal(computerNameProblem('12345', 'Linux'), null);
    assert.equal(computerNameProblem('a'.repeat(64), 'Linux'), null);
    assert.match(computerNameProblem('a'.repeat(65), 'Linux')!, /has 65 characters; a Linux computer name is 1-64/);
    assert.match(computerNameProblem('web_01', 'Linux')!, /holds "_"/);
    assert.match(computerNameProblem('-web', 'Linux')!, /does not start with a letter or digit/);
    assert.match(computerNameProblem('web.', 'Linux')!, /ends in '\.'/);
  });

  it('prefixes: 1-9 characters on Windows, 1-58 on Linux, and may end in -', () => {
    assert.equal(computerNamePrefixProblem('frontend-', 'Windows'), null);
    assert.match(computerNamePrefixProblem('frontends-', 'Windows')!, /has 10 characters; a Windows computer name prefix is 1-9/);
    assert.match(computerNamePrefixProblem('123', 'Windows')!, /all digits/);
    assert.equal(computerNamePrefixProblem('a'.repeat(58), 'Linux'), null);
    assert.match(computerNamePrefixProblem('a'.repeat(59), 'Linux')!, /1-58/);
    assert.match(computerNamePrefixProblem('web.', 'Linux')!, /ends in '\.'/);
  });
});

/** The EngineError of adding `spec` to a fleet already holding `before`. */
function refusal(before: readonly VmSpec[], spec: VmSpec): EngineError {
  const fleet = newFleet();
  for (const s of before) fleet.add(s);
  try {
    fleet.add(spec);
  } catch (err) {
    assert.ok(err instanceof EngineError, String(err));
    return err;
  }
  assert.fail(`expected ${spec.name} to be refused`);
}

describe('the fleet and computer names', () => {
  const ss = (name: string, more: Partial<VmSpec> = {}): VmSpec => ({ name, tenant: 'web', tenantKind: 'scaleSet', ...more });

  it('gives each VM its computer name', () => {
    const fleet = newFleet();
    fleet.add({ name: 'lone' });
    fleet.add(ss('web_18'));
    fleet.add(ss('web_19', { computerName: 'custom-host' }));
    fleet.add({ name: 'win_3', tenant: 'averylongscaleset', tenantKind: 'scaleSet', osType: 'Windows' });
    assert.equal(fleet.get('lone').computerName, 'lone');
    assert.equal(fleet.get('web_18').computerName, 'web00000I');
    assert.equal(fleet.get('web_19').computerName, 'custom-host');
    assert.equal(fleet.get('win_3').computerName, 'averylong000003');
    assert.equal(fleet.get('web_18').orchestrationMode, 'Uniform');
    assert.equal(fleet.get('lone').orchestrationMode, null);
  });

  it('refuses two VMs of one scale set with one computer name, without case', () => {
    const derived = refusal([ss('web_3')], ss('web_03'));
    assert.equal(derived.code, 'conflict');
    assert.deepEqual(derived.fields, ['name']);
    assert.match(derived.message, /computer name 'web000003' already belongs to VM 'web_3' of scale set 'web'/);
    const declared = refusal([ss('web_3')], ss('web_4', { computerName: 'WEB000003' }));
    assert.deepEqual(declared.fields, ['computerName']);
  });

  it('[choice] lets VMs outside one scale set share a computer name', () => {
    const fleet = newFleet();
    fleet.add({ name: 'a', computerName: 'host' });
    fleet.add({ name: 'b', computerName: 'host' });
    fleet.add({ name: 'other_3', tenant: 'other', tenantKind: 'scaleSet', computerNamePrefix: 'web' });
    fleet.add(ss('web_3'));
    assert.equal(fleet.get('web_3').computerName, fleet.get('other_3').computerName);
  });

  it('frees a computer name when its VM goes', () => {
    const fleet = newFleet();
    fleet.add(ss('web_3'));
    fleet.remove('web_3');
    assert.equal(fleet.add(ss('web_03')).computerName, 'web000003');
  });

  it('checks declared names against the OS, blaming the field and the osType', () => {
    const windows = refusal([], { name: 'w', osType: 'Windows', computerName: 'a-very-long-windows-name' });
    assert.equal(windows.code, 'invalid');
    assert.deepEqual(windows.fields, ['computerName', 'osType']);
    assert.match(windows.message, /^computerName "a-very-long-windows-name" has 24 characters; a Windows computer name is 1-15/);
    const prefix = refusal([], ss('web_0', { osType: 'Windows', computerNamePrefix: 'frontends-' }));
    assert.deepEqual(prefix.fields, ['computerNamePrefix', 'osType']);
  });

  it('keeps orchestrationMode and computerNamePrefix to scale sets, one of each per scale set', () => {
    assert.deepEqual(refusal([], { name: 'a', computerNamePrefix: 'x' }).fields, ['computerNamePrefix']);
    assert.match(refusal([], { name: 'a', orchestrationMode: 'Flexible' }).message, /orchestrationMode applies only to scale-set VMs/);
    const mode = refusal([ss('web_0')], ss('web_1', { orchestrationMode: 'Flexible' }));
    assert.equal(mode.code, 'conflict');
    assert.match(mode.message, /scale set 'web' is Uniform, not Flexible/);
    const prefix = refusal([ss('web_0', { computerNamePrefix: 'app' })], ss('web_1', { computerNamePrefix: 'other' }));
    assert.match(prefix.message, /scale set 'web' has computerNamePrefix 'app', not 'other'/);
    // Placement groups are one scale set.
    assert.match(
      refusal([{ name: 'p_0', tenant: 'p-pg0', tenantKind: 'scaleSet', scaleSet: 'p' }], {
        name: 'p_1',
        tenant: 'p-pg1',
        tenantKind: 'scaleSet',
        scaleSet: 'p',
        orchestrationMode: 'Flexible',
      }).message,
      /scale set 'p' is Uniform/,
    );
  });

  it('a VM joining a scale set takes its mode and prefix, and keeps them in its spec', () => {
    const fleet = newFleet();
    fleet.add(ss('web_ab12cd34', { orchestrationMode: 'Flexible', computerNamePrefix: 'app-' }));
    const joined = fleet.add(ss('web-extra'));
    assert.equal(joined.orchestrationMode, 'Flexible');
    assert.match(joined.computerName, /^app-[0-9a-f]{6}$/);
    const spec = vmToSpec(joined, fleet.tenantOf(joined));
    assert.equal(spec.orchestrationMode, 'Flexible');
    assert.equal(spec.computerNamePrefix, 'app-');
    assert.equal(spec.computerName, undefined, 'a derived name is not saved: it is derived again');
  });
});
