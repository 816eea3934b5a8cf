// What happens to the VMs, per the seeds (SPEC §2 "What happens to the VM"): each test quotes the
// sentence it follows, from the French seed (000_…) unless it says otherwise.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EngineError } from '../../../src/emulator/engine/errors.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { MINUTE, SECOND, makeEngine } from './fixtures.js';

function codeOf(fn: () => unknown): string {
  try {
    fn();
    return 'ok';
  } catch (err) {
    if (err instanceof EngineError) return `${err.code}: ${err.message}`;
    throw err;
  }
}

const SET: VmSpec[] = [
  { name: 'a0', tenant: 'A', tenantKind: 'availabilitySet', faultDomainCount: 3, faultDomain: 0, host: 'h0' },
  { name: 'a1', tenant: 'A', tenantKind: 'availabilitySet', faultDomainCount: 3, faultDomain: 1, host: 'h1' },
  { name: 'a2', tenant: 'A', tenantKind: 'availabilitySet', faultDomainCount: 3, faultDomain: 2, host: 'h2' },
  { name: 'b0', tenant: 'B', tenantKind: 'availabilitySet', faultDomainCount: 2, faultDomain: 0, host: 'h0' },
];

describe('a Started event outlives its impact', () => {
  test('a 7 s Freeze is listed as Started for about 10 minutes; the VM is frozen only 7 s', () => {
    // "Durée de l'impact : 7 secondes • EventStatus: « Started » à complété (événement supprimé du
    // tableau d'événements) : 10 minutes"
    const { engine, advance } = makeEngine(SET);
    const op = engine.createOperation({ type: 'freeze', vms: ['a0'], durationInSeconds: 7 });
    engine.approve('a0', op.events);
    assert.equal(engine.vmStates().get('a0'), 'frozen');
    advance(7 * SECOND - 1);
    assert.equal(engine.vmStates().get('a0'), 'frozen');
    advance(1);
    assert.equal(engine.vmStates().get('a0'), undefined, 'running again after 7 s');
    const before = engine.incarnationOf('a0');
    advance(9 * MINUTE);
    const doc = engine.documentFor('a0');
    assert.deepEqual(
      doc.events.map((e) => [e.status, e.durationInSeconds]),
      [['Started', 7]],
    );
    assert.equal(doc.incarnation, before, 'the end of the impact changes no document');
    advance(MINUTE - 7 * SECOND);
    assert.deepEqual(engine.documentFor('a0').events, []);
  });
});

describe('routine maintenance impacts one fault domain at a time', () => {
  // "les machines virtuelles dans différents domaines d'erreur ne seront pas affectées par les
  // opérations de maintenance de routine en même temps […] Les machines virtuelles d'un domaine
  // d'erreur peuvent recevoir des événements planifiés avec EventStatus: « Scheduled » peu après la
  // fin de la maintenance d'un autre domaine d'erreur."
  for (const type of ['freeze', 'platform-reboot', 'host-update'] as const) {
    test(`${type} over an availability set rolls by fault domain`, () => {
      const { engine, advance } = makeEngine(SET);
      const op = engine.createOperation({ type, tenant: 'A' });
      assert.deepEqual(
        op.steps!.map((s) => s.faultDomain),
        [0, 1, 2],
      );
      const seen: string[][] = [];
      for (let t = 0; t < 2 * 60 * MINUTE; t += 30 * SECOND) {
        const fds = new Set(engine.events().flatMap((e) => e.resources.map((r) => engine.fleet.get(r).faultDomain)));
        assert.ok(fds.size <= 1, `fault domains ${[...fds]} have events at once`);
        for (const e of engine.events()) if (!seen.some((s) => s.join() === e.resources.join())) seen.push(e.resources);
        advance(30 * SECOND);
      }
      assert.deepEqual(seen, [['a0'], ['a1'], ['a2']]);
      assert.equal(engine.operation(op.id).status, 'completed');
    });
  }

  test('a routine operation over another fault domain of a tenant under a rollout waits its turn (409)', () => {
    const { engine } = makeEngine(SET);
    engine.createOperation({ type: 'freeze', tenant: 'A' });
    assert.match(
      codeOf(() => engine.createOperation({ type: 'platform-reboot', vms: ['a1'] })),
      /^conflict: a freeze is already in progress for tenant 'A'/,
    );
    assert.match(
      codeOf(() => engine.createOperation({ type: 'host-update', host: 'h0' })),
      /^conflict: a freeze is already in progress for tenant 'A'/,
    );
    // Another tenant may go at once; non-routine work is not held back.
    assert.equal(
      codeOf(() => engine.createOperation({ type: 'platform-reboot', tenant: 'B' })),
      'ok',
    );
    assert.equal(
      codeOf(() => engine.createOperation({ type: 'restart', vms: ['a2'] })),
      'ok',
    );
  });
});

describe('a redeploy moves the VM to another host', () => {
  // "Redeploy: un déplacement vers un autre nœud est planifié pour la machine virtuelle (le contenu
  // des disques éphémères est perdu)."
  for (const type of ['redeploy', 'platform-redeploy', 'degraded-hardware'] as const) {
    test(`after ${type}, a failure of the old host no longer touches it`, () => {
      const { engine, advance } = makeEngine(SET);
      const op = engine.createOperation({ type, vms: ['a0'], notBefore: engine.now() + 7 * 24 * 60 * MINUTE, force: true });
      engine.approve('a0', op.events);
      const host = engine.fleet.get('a0').host;
      assert.notEqual(host, 'h0');
      assert.ok(engine.fleet.hosts.get(host)!.vms.has('a0'));
      assert.ok(!engine.fleet.hosts.get('h0')!.vms.has('a0'));
      advance(10 * MINUTE);
      const failure = engine.createOperation({ type: 'hardware-failure', host: 'h0' });
      const hit = failure.events.flatMap((id) => engine.event(id).resources);
      assert.deepEqual(hit, ['b0']);
      // The move is kept in the state a save and restore carry.
      const saved = engine.snapshot();
      assert.equal(saved.vms.find((v) => v.name === 'a0')!.host, host);
    });
  }
});

describe('a Preempt evicts the Spot VM per its eviction policy', () => {
  // "Preempt: la machine virtuelle Spot est supprimée" (000_…); SPEC §2: "After a Preempt the Spot VM
  // is evicted per its eviction policy: Delete removes it; Deallocate leaves it stopped (not running,
  // no further events) until it is started again. A second eviction of a VM already being evicted gets 409."
  const SPOT: VmSpec[] = [
    { name: 's0', tenant: 'S', tenantKind: 'scaleSet', priority: 'Spot', evictionPolicy: 'Delete' },
    { name: 's1', tenant: 'S', tenantKind: 'scaleSet', priority: 'Spot' },
    { name: 's2', tenant: 'S', tenantKind: 'scaleSet', priority: 'Spot' },
  ];

  test('Delete removes the VM once the impact is over', () => {
    const { engine, advance } = makeEngine(SPOT);
    engine.createOperation({ type: 'spot-eviction', vms: ['s0'] });
    advance(30 * SECOND);
    assert.equal(engine.vmStates().get('s0'), 'evicting');
    advance(MINUTE);
    assert.ok(!engine.fleet.vms.has('s0'));
    assert.deepEqual(
      engine.deletedVms().map((d) => d.name),
      ['s0'],
    );
  });

  test('Deallocate (the default) stops the VM: no further events until it is started again', () => {
    const { engine, advance } = makeEngine(SPOT);
    assert.equal(engine.fleet.get('s1').evictionPolicy, 'Deallocate');
    engine.createOperation({ type: 'spot-eviction', vms: ['s1'] });
    advance(30 * SECOND + MINUTE);
    assert.equal(engine.fleet.get('s1').powerState, 'deallocated');
    assert.equal(engine.vmStates().get('s1'), 'deallocated');
    assert.deepEqual(engine.documentFor('s1').events, [], 'a stopped VM sees nothing');
    advance(10 * MINUTE);
    // Its tenant's next events pass it by; naming it is refused.
    const op = engine.createOperation({ type: 'freeze', tenant: 'S' });
    assert.deepEqual(op.vms, ['s0', 's2']);
    assert.deepEqual(engine.documentFor('s1').events, []);
    assert.match(
      codeOf(() => engine.createOperation({ type: 'restart', vms: ['s1'] })),
      /^conflict: VM 's1' is deallocated/,
    );
    engine.startVm('s1');
    assert.equal(engine.fleet.get('s1').powerState, 'running');
    assert.equal(engine.documentFor('s1').events.length, 1, "running again, it sees its tenant's events");
    assert.match(
      codeOf(() => engine.startVm('s1')),
      /^conflict: VM 's1' is running, not deallocated/,
    );
  });

  test('a second eviction of a VM already being evicted gets 409', () => {
    const { engine, advance } = makeEngine(SPOT);
    engine.createOperation({ type: 'spot-eviction', vms: ['s2'] });
    assert.match(
      codeOf(() => engine.createOperation({ type: 'spot-eviction', vms: ['s2'] })),
      /^conflict: VM 's2' already has a Preempt event under way/,
    );
    advance(30 * SECOND);
    assert.match(
      codeOf(() => engine.createOperation({ type: 'spot-eviction', vms: ['s2'] })),
      /^conflict: /,
    );
  });

  test('a Regular VM takes no eviction policy', () => {
    assert.throws(() => makeEngine([{ name: 'r', evictionPolicy: 'Delete' }]), /evictionPolicy applies only to Spot VMs/);
  });
});

describe('a tenant emptied by its own deletes', () => {
  test('a Started Terminate whose tenant another delete empties ends completed, not cancelled', () => {
    const { engine, advance } = makeEngine([
      { name: 'ss0', tenant: 'ss', tenantKind: 'scaleSet', terminateNotificationMinutes: 5 },
      { name: 'ss1', tenant: 'ss', tenantKind: 'scaleSet', terminateNotificationMinutes: 5 },
    ]);
    const a = engine.createOperation({ type: 'delete', vms: ['ss0'] });
    const b = engine.createOperation({ type: 'delete', vms: ['ss1'] });
    advance(6 * MINUTE);
    assert.deepEqual([engine.operation(a.id).status, engine.operation(b.id).status], ['completed', 'completed']);
    assert.deepEqual(
      engine.history().items.map((h) => h.cancelled),
      [false, false],
    );
    assert.deepEqual(
      engine
        .deletedVms()
        .map((d) => d.name)
        .sort(),
      ['ss0', 'ss1'],
    );
  });
});
