import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Fleet, type VmSpec } from '../../../src/emulator/engine/fleet.js';
import {
  AVAILABILITY_SET_DEFAULTS,
  FleetGeneratorError,
  SCALE_SET_DEFAULTS,
  generateAvailabilitySets,
  generateScaleSet,
  scaleSetTenants,
} from '../../../src/emulator/fleet/generator.js';
import { placement } from '../../support/fleet.js';

let ids = 0;
const newFleet = () => new Fleet(() => `id-${ids++}`);

/** The fleet rule, checked without the engine: per host, one fault domain per tenant. */
function assertOneFaultDomainPerHostAndTenant(specs: readonly VmSpec[]): void {
  const seen = new Map<string, number>();
  for (const s of specs) {
    assert.ok(s.host !== undefined, `${s.name} has no host`);
    const key = `${s.host}\u0000${s.tenant}`;
    const fd = seen.get(key);
    if (fd === undefined) seen.set(key, s.faultDomain!);
    else assert.equal(s.faultDomain, fd, `host ${s.host} carries tenant ${s.tenant} in fault domains ${fd} and ${s.faultDomain}`);
  }
}

/** Options with a fault domain count of 1 to `max`, and the others drawn by `rest` for that count. */
function withFaultDomains<T extends object>(max: number, rest: (fdCount: number) => { [K in keyof T]: fc.Arbitrary<T[K]> }) {
  return fc.integer({ min: 1, max }).chain((fdCount) => fc.record(rest(fdCount)).map((o) => ({ ...o, faultDomainCount: fdCount })));
}

function assertGeneratorError(fn: () => unknown, path: readonly (string | number)[], problem: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof FleetGeneratorError, String(err));
    assert.deepEqual(err.path, path);
    if (typeof problem === 'string') assert.equal(err.problem, problem);
    else assert.match(err.problem, problem);
    return true;
  });
}

describe('generateAvailabilitySets', () => {
  it('names sets and VMs, assigns FD and UD by index, and gives each host one fault domain', () => {
    const specs = generateAvailabilitySets({ sets: 2, vmsPerSet: 3, hosts: 4, updateDomainCount: 2 });
    const common = { tenantKind: 'availabilitySet', faultDomainCount: 2, updateDomainCount: 2 } as const;
    assert.deepEqual(specs, [
      { name: 'as0-vm0', tenant: 'as0', faultDomain: 0, updateDomain: 0, host: 'host0', ...common },
      { name: 'as0-vm1', tenant: 'as0', faultDomain: 1, updateDomain: 1, host: 'host1', ...common },
      { name: 'as0-vm2', tenant: 'as0', faultDomain: 0, updateDomain: 0, host: 'host2', ...common },
      // The round robin of each fault domain carries on across sets, so hosts are shared.
      { name: 'as1-vm0', tenant: 'as1', faultDomain: 0, updateDomain: 0, host: 'host0', ...common },
      { name: 'as1-vm1', tenant: 'as1', faultDomain: 1, updateDomain: 1, host: 'host3', ...common },
      { name: 'as1-vm2', tenant: 'as1', faultDomain: 0, updateDomain: 0, host: 'host2', ...common },
    ]);
  });

  it('takes prefixes and three fault domains', () => {
    const specs = generateAvailabilitySets({ sets: 1, vmsPerSet: 4, hosts: 3, faultDomainCount: 3, prefix: 'cust', hostPrefix: 'rack' });
    assert.deepEqual(placement(specs), [
      ['cust0-vm0', 'cust0', 0, 0, 'rack0'],
      ['cust0-vm1', 'cust0', 1, 1, 'rack1'],
      ['cust0-vm2', 'cust0', 2, 2, 'rack2'],
      ['cust0-vm3', 'cust0', 0, 3, 'rack0'],
    ]);
  });

  it('keeps the host rule, places every VM and balances hosts (property)', () => {
    fc.assert(
      fc.property(
        withFaultDomains(3, (fdCount) => ({
          sets: fc.integer({ min: 1, max: 15 }),
          vmsPerSet: fc.integer({ min: 1, max: 25 }),
          hosts: fc.integer({ min: fdCount, max: 50 }),
          updateDomainCount: fc.integer({ min: 1, max: 20 }),
        })),
        (o) => {
          const specs = generateAvailabilitySets(o);
          assert.equal(specs.length, o.sets * o.vmsPerSet);
          assert.equal(new Set(specs.map((s) => s.name)).size, specs.length);
          const perTenant = new Map<string, number>();
          const perHost = new Map<string, { fd: number; count: number }>();
          for (const s of specs) {
            const i = Number(s.name.slice(s.name.lastIndexOf('-vm') + 3));
            assert.equal(s.faultDomain, i % o.faultDomainCount);
            assert.equal(s.updateDomain, i % o.updateDomainCount);
            perTenant.set(s.tenant!, (perTenant.get(s.tenant!) ?? 0) + 1);
            const h = Number(/^host(\d+)$/.exec(s.host!)![1]);
            assert.ok(h < o.hosts, `${s.host} beyond ${o.hosts} hosts`);
            // Host h serves fault domain h mod FD count, whatever the set.
            assert.equal(h % o.faultDomainCount, s.faultDomain);
            const e = perHost.get(s.host!) ?? { fd: s.faultDomain!, count: 0 };
            e.count++;
            perHost.set(s.host!, e);
          }
          assert.equal(perTenant.size, o.sets);
          assert.ok([...perTenant.values()].every((n) => n === o.vmsPerSet));
          assertOneFaultDomainPerHostAndTenant(specs);
          // Round robin: hosts of one fault domain differ by at most one VM.
          for (let f = 0; f < o.faultDomainCount; f++) {
            const counts = [...perHost.values()].filter((e) => e.fd === f).map((e) => e.count);
            if (counts.length > 0) assert.ok(Math.max(...counts) - Math.min(...counts) <= 1, `unbalanced FD ${f}: ${counts}`);
          }
          // And the engine agrees.
          const fleet = newFleet();
          for (const s of specs) fleet.add(s);
          assert.equal(fleet.tenants.size, o.sets);
          assert.ok(fleet.hosts.size <= o.hosts);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('builds 100,000 VMs', () => {
    const specs = generateAvailabilitySets({ sets: 10_000, vmsPerSet: 10, hosts: 2_000 });
    assert.equal(specs.length, 100_000);
    assert.equal(specs[99_999]!.name, 'as9999-vm9');
    assert.equal(new Set(specs.map((s) => s.name)).size, 100_000);
    assert.equal(new Set(specs.map((s) => s.host)).size, 2_000);
    assertOneFaultDomainPerHostAndTenant(specs);
  });

  it('rejects fewer hosts than fault domains, and bad numbers, naming the option', () => {
    const cases: [Parameters<typeof generateAvailabilitySets>[0], string, string][] = [
      [{ sets: 1, vmsPerSet: 1, hosts: 1 }, 'hosts', 'must be at least the fault domain count (2), got 1'],
      [{ sets: 1, vmsPerSet: 1, hosts: 2, faultDomainCount: 3 }, 'hosts', 'must be at least the fault domain count (3), got 2'],
      [{ sets: 0, vmsPerSet: 1, hosts: 2 }, 'sets', 'must be a positive integer, got 0'],
      [{ sets: 1, vmsPerSet: 1.5, hosts: 2 }, 'vmsPerSet', 'must be a positive integer, got 1.5'],
      [{ sets: 1, vmsPerSet: 1, hosts: 4, faultDomainCount: 4 }, 'faultDomainCount', 'must be an integer from 1 to 3, got 4'],
      [{ sets: 1, vmsPerSet: 1, hosts: 2, updateDomainCount: 21 }, 'updateDomainCount', 'must be an integer from 1 to 20, got 21'],
    ];
    for (const [options, option, problem] of cases) assertGeneratorError(() => generateAvailabilitySets(options), [option], problem);
    assertGeneratorError(() => generateAvailabilitySets({ sets: 2_000, vmsPerSet: 1_000, hosts: 2 }), ['vmsPerSet'], /at most 1000000/);
    assert.throws(() => generateAvailabilitySets({ sets: 1, vmsPerSet: 1, hosts: 1 }), {
      message: 'hosts: must be at least the fault domain count (2), got 1',
    });
  });

  it('uses the engine’s default counts', () => {
    const fleet = newFleet();
    fleet.add({ name: 'a', tenant: 'as', tenantKind: 'availabilitySet' });
    fleet.add({ name: 'b', tenant: 'ss', tenantKind: 'scaleSet' });
    const as = fleet.tenants.get('as')!;
    const ss = fleet.tenants.get('ss')!;
    assert.deepEqual({ faultDomainCount: as.faultDomainCount, updateDomainCount: as.updateDomainCount }, AVAILABILITY_SET_DEFAULTS);
    assert.deepEqual({ faultDomainCount: ss.faultDomainCount, updateDomainCount: ss.updateDomainCount }, SCALE_SET_DEFAULTS);
  });
});

describe('generateScaleSet', () => {
  it('names instances <name>_<i> in one tenant by default, with the engine’s counts', () => {
    const specs = generateScaleSet({ name: 'ss', instances: 6 });
    assert.deepEqual(placement(specs, true), [
      ['ss_0', 'ss', 0, 0, undefined, undefined],
      ['ss_1', 'ss', 1, 1, undefined, undefined],
      ['ss_2', 'ss', 2, 2, undefined, undefined],
      ['ss_3', 'ss', 3, 3, undefined, undefined],
      ['ss_4', 'ss', 4, 4, undefined, undefined],
      ['ss_5', 'ss', 0, 0, undefined, undefined],
    ]);
    assert.ok(specs.every((s) => s.tenantKind === 'scaleSet' && s.faultDomainCount === 5 && s.updateDomainCount === 5));
    assert.ok(specs.every((s) => !('priority' in s) && !('gpu' in s) && !('terminateNotificationMinutes' in s)));
  });

  it('spreads instances round robin over placement groups, then fault domains', () => {
    const specs = generateScaleSet({
      name: 'web',
      instances: 6,
      placementGroups: 2,
      faultDomainCount: 2,
      updateDomainCount: 3,
      terminateNotificationMinutes: 10,
      hosts: ['h0', 'h1', 'h2', 'h3'],
    });
    assert.deepEqual(placement(specs, true), [
      ['web_0', 'web-pg0', 0, 0, 'h0', 'web'],
      ['web_1', 'web-pg1', 0, 0, 'h2', 'web'],
      ['web_2', 'web-pg0', 1, 1, 'h1', 'web'],
      ['web_3', 'web-pg1', 1, 1, 'h3', 'web'],
      ['web_4', 'web-pg0', 0, 2, 'h0', 'web'],
      ['web_5', 'web-pg1', 0, 2, 'h2', 'web'],
    ]);
    assert.ok(specs.every((s) => s.terminateNotificationMinutes === 10));
    assert.deepEqual(scaleSetTenants('web', 2), ['web-pg0', 'web-pg1']);
    assert.deepEqual(scaleSetTenants('web'), ['web']);
  });

  it('copies the settings that are on to every instance', () => {
    const [spot] = generateScaleSet({ name: 'spot', instances: 1, priority: 'Spot' });
    assert.equal(spot!.priority, 'Spot');
    const gpu = generateScaleSet({ name: 'gpu', instances: 3, faultDomainCount: 1, gpu: true });
    assert.ok(gpu.every((s) => s.gpu === true && s.faultDomain === 0 && s.faultDomainCount === 1));
    const fleet = newFleet();
    for (const s of gpu) fleet.add(s);
    assert.ok(fleet.seesOnlyOwnEvents(fleet.get('gpu_0')));
    const [app] = generateScaleSet({ name: 'app', instances: 1, osImageNotification: true, hosts: 5, hostPrefix: 'n' });
    assert.equal(app!.osImageNotification, true);
    assert.equal(app!.host, 'n0');
  });

  it('keeps the host rule for every placement group (property)', () => {
    const options = withFaultDomains(5, (fdCount) => ({
      instances: fc.integer({ min: 0, max: 80 }),
      placementGroups: fc.integer({ min: 1, max: 4 }),
      hosts: fc.integer({ min: fdCount, max: 20 }),
    }));
    fc.assert(
      fc.property(options, (o) => {
        const specs = generateScaleSet({ name: 'ss', ...o });
        assert.equal(specs.length, o.instances);
        assertOneFaultDomainPerHostAndTenant(specs);
        const fleet = newFleet();
        for (const s of specs) fleet.add(s);
        assert.equal(fleet.tenants.size, Math.min(o.instances, o.placementGroups));
      }),
      { numRuns: 100 },
    );
  });

  it('rejects bad options, naming them', () => {
    assertGeneratorError(
      () => generateScaleSet({ name: 'ss', instances: 2, hosts: 4 }),
      ['hosts'],
      'must be at least the fault domain count (5), got 4',
    );
    assertGeneratorError(
      () => generateScaleSet({ name: 'ss', instances: 2, hosts: ['a', 'b', 'a'], faultDomainCount: 1 }),
      ['hosts', 2],
      "host 'a' is listed twice",
    );
    assertGeneratorError(
      () => generateScaleSet({ name: 'ss', instances: 2, hostPrefix: 'x' }),
      ['hostPrefix'],
      'applies only with a host count (hosts: N)',
    );
    assertGeneratorError(
      () => generateScaleSet({ name: 'ss', instances: -1 }),
      ['instances'],
      'must be an integer from 0 to 1000000, got -1',
    );
    assertGeneratorError(
      () => generateScaleSet({ name: 'ss', instances: 1, placementGroups: 0 }),
      ['placementGroups'],
      'must be a positive integer, got 0',
    );
  });
});
