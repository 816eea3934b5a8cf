import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { EngineError } from '../../../src/emulator/engine/errors.js';
import { FIRST_INCARNATION } from '../../../src/emulator/engine/engine.js';
import { MINUTE, SECOND, T0, makeEngine } from './fixtures.js';

const ids = (doc: { events: { id: string }[] }) => doc.events.map((e) => e.id);

function assertEngineError(fn: () => unknown, code: EngineError['code'], pattern: RegExp) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof EngineError, `expected EngineError, got ${String(err)}`);
    assert.equal(err.code, code);
    assert.match(err.message, pattern);
    return true;
  });
}

describe('operations and their events', () => {
  const cases = [
    { type: 'restart', eventType: 'Reboot', source: 'User', notice: 15 * MINUTE },
    { type: 'redeploy', eventType: 'Redeploy', source: 'User', notice: 10 * MINUTE },
    { type: 'freeze', eventType: 'Freeze', source: 'Platform', notice: 15 * MINUTE },
    { type: 'platform-reboot', eventType: 'Reboot', source: 'Platform', notice: 15 * MINUTE },
    { type: 'platform-redeploy', eventType: 'Redeploy', source: 'Platform', notice: 10 * MINUTE },
    { type: 'degraded-hardware', eventType: 'Redeploy', source: 'Platform', notice: 7 * 24 * 60 * MINUTE },
  ] as const;
  for (const c of cases) {
    test(`${c.type} → ${c.eventType} from ${c.source} with ${c.notice / MINUTE} min notice`, () => {
      const { engine } = makeEngine();
      const op = engine.createOperation({ type: c.type, vms: ['web0'] });
      const [event] = engine.events();
      assert.deepEqual(op.events, [event!.id]);
      assert.equal(event!.type, c.eventType);
      assert.equal(event!.source, c.source);
      assert.equal(event!.status, 'Scheduled');
      assert.equal(event!.notBefore, T0 + c.notice);
      assert.deepEqual(event!.resources, ['web0']);
    });
  }

  test('freeze defaults to a 5 s DurationInSeconds; others to -1 (unknown)', () => {
    const { engine } = makeEngine();
    engine.createOperation({ type: 'freeze', vms: ['web0'] });
    engine.createOperation({ type: 'restart', vms: ['web1'] });
    assert.deepEqual(
      engine.events().map((e) => e.durationInSeconds),
      [5, -1],
    );
  });

  test('hardware failure arrives already Started as a Reboot with NotBefore ""', () => {
    const { engine } = makeEngine();
    engine.createOperation({ type: 'hardware-failure', vms: ['web0', 'web1'] });
    const doc = engine.documentFor('web2');
    assert.equal(doc.events.length, 1);
    assert.equal(doc.events[0]!.type, 'Reboot');
    assert.equal(doc.events[0]!.status, 'Started');
    assert.equal(doc.events[0]!.notBefore, null);
    assert.equal(engine.events()[0]!.startedBy, 'failure');
  });

  test('hardware failure takes no notBefore', () => {
    const { engine } = makeEngine();
    assertEngineError(
      () => engine.createOperation({ type: 'hardware-failure', vms: ['web0'], notBefore: T0 + 20 * MINUTE }),
      'invalid',
      /starts at once/,
    );
  });

  test('spot eviction: Preempt with 30 s notice, refused for Regular VMs', () => {
    const { engine } = makeEngine();
    engine.createOperation({ type: 'spot-eviction', vms: ['ss0'] });
    const [event] = engine.events();
    assert.equal(event!.type, 'Preempt');
    assert.equal(event!.notBefore, T0 + 30 * SECOND);
    assertEngineError(() => engine.createOperation({ type: 'spot-eviction', vms: ['ss1'] }), 'invalid', /Spot VMs; 'ss1' is Regular/);
  });

  test('delete: Terminate with the scale set notice, VM removed when it ends; without notice removed at once', () => {
    const { engine, advance } = makeEngine();
    const op = engine.createOperation({ type: 'delete', vms: ['ss0', 'ss1'] });
    assert.deepEqual(op.removedVms, ['ss1']);
    assert.equal(engine.fleet.vms.has('ss1'), false);
    const [event] = engine.events();
    assert.equal(event!.type, 'Terminate');
    assert.equal(event!.notBefore, T0 + 10 * MINUTE);
    advance(10 * MINUTE);
    assert.equal(engine.events()[0]!.status, 'Started');
    assert.equal(engine.fleet.vms.has('ss0'), true);
    advance(10 * MINUTE);
    assert.equal(engine.fleet.vms.has('ss0'), false);
    assert.equal(engine.events().length, 0);
  });

  test('reimage: a 15 min Reboot with OS image notification, nothing without it, refused outside scale sets', () => {
    const { engine } = makeEngine();
    const op = engine.createOperation({ type: 'reimage', vms: ['ss0', 'ss1'] });
    assert.deepEqual(op.reimagedVms, ['ss1']);
    const [event] = engine.events();
    assert.equal(event!.type, 'Reboot');
    assert.deepEqual(event!.resources, ['ss0']);
    assert.equal(event!.notBefore, T0 + 15 * MINUTE);
    assertEngineError(() => engine.createOperation({ type: 'reimage', vms: ['web0'] }), 'invalid', /scale-set VMs/);
  });

  test('one event per tenant when an operation spans tenants', () => {
    const { engine } = makeEngine();
    const op = engine.createOperation({ type: 'restart', vms: ['web0', 'web1', 'solo'] });
    assert.equal(op.events.length, 2);
    const events = engine.events();
    assert.deepEqual(
      events.map((e) => [e.tenant, e.resources]),
      [
        ['web', ['web0', 'web1']],
        ['solo', ['solo']],
      ],
    );
  });

  test('bad targets and types get a clear error and leave nothing behind', () => {
    const { engine } = makeEngine();
    assertEngineError(() => engine.createOperation({ type: 'host-update', vms: ['web0'] }), 'invalid', /host-update targets a "host"/);
    assertEngineError(() => engine.createOperation({ type: 'restart', host: 'h1' }), 'invalid', /not a host-level job/);
    assertEngineError(() => engine.createOperation({ type: 'freeze', host: 'nope' }), 'not-found', /no host named 'nope'/);
    assertEngineError(() => engine.createOperation({ type: 'freeze', tenant: 'nope' }), 'not-found', /no tenant named 'nope'/);
    assertEngineError(() => engine.createOperation({ type: 'explode', vms: ['web0'] }), 'invalid', /unknown operation type "explode"/);
    assertEngineError(() => engine.createOperation({ type: 'freeze', vms: [] }), 'invalid', /at least one VM/);
    assertEngineError(() => engine.createOperation({ type: 'freeze', vms: ['web0', 'web0'] }), 'invalid', /more than once/);
    assertEngineError(() => engine.createOperation({ type: 'freeze', vms: ['nope'] }), 'not-found', /no VM named 'nope'/);
    assertEngineError(() => engine.createOperation({ type: 'freeze' }), 'invalid', /exactly one target/);
    assertEngineError(
      () => engine.createOperation({ type: 'freeze', vms: ['web0'], durationInSeconds: -2 }),
      'invalid',
      /durationInSeconds/,
    );
    assert.equal(engine.events().length, 0, 'a refused operation leaves nothing behind');
    assert.equal(engine.operations().items.length, 0);
  });

  test('notBefore earlier than the minimum notice is refused unless forced', () => {
    const { engine } = makeEngine();
    assertEngineError(
      () => engine.createOperation({ type: 'freeze', vms: ['web0'], notBefore: T0 + 5 * MINUTE }),
      'invalid',
      /minimum notice of 900 s for Freeze.*"force": true/,
    );
    engine.createOperation({ type: 'freeze', vms: ['web0'], notBefore: T0 + 5 * MINUTE, force: true });
    assert.equal(engine.events()[0]!.notBefore, T0 + 5 * MINUTE);
    engine.createOperation({ type: 'freeze', vms: ['solo'], notBefore: T0 + 20 * MINUTE });
    assert.equal(engine.events()[1]!.notBefore, T0 + 20 * MINUTE);
  });

  test('NotBefore is rounded up to a whole second, so the wire value is never early', () => {
    const { engine, clock } = makeEngine();
    clock.advance(250);
    engine.createOperation({ type: 'freeze', vms: ['web0'] });
    assert.equal(engine.events()[0]!.notBefore, T0 + 15 * MINUTE + SECOND);
  });

  test('the dev timing factor divides notice and durations by 60', () => {
    const { engine, advance } = makeEngine(undefined, 60);
    engine.createOperation({ type: 'freeze', vms: ['web0'] });
    assert.equal(engine.events()[0]!.notBefore, T0 + 15 * SECOND);
    advance(15 * SECOND);
    assert.equal(engine.events()[0]!.status, 'Started');
    // DurationInSeconds stays what Azure would say; only the emulator's own waiting shrinks:
    // the 10 minutes Started become 10 s.
    assert.equal(engine.documentFor('web0').events[0]!.durationInSeconds, 5);
    advance(10 * SECOND - 1);
    assert.equal(engine.events().length, 1);
    advance(1);
    assert.equal(engine.events().length, 0);
  });
});

describe('lifecycle', () => {
  test('Scheduled → Started at NotBefore → impact → removed about 10 minutes after it started', () => {
    // [seed] "EventStatus: « Scheduled » pour délai d'expiration d'approbation : 15 minutes • Durée de
    // l'impact : 7 secondes • EventStatus: « Started » à complété (événement supprimé du tableau
    // d'événements) : 10 minutes" (000_…, the typical timeline): the impact is not the time in the document.
    const { engine, advance } = makeEngine();
    engine.createOperation({ type: 'freeze', vms: ['web0'] });
    advance(15 * MINUTE - 1);
    assert.equal(engine.events()[0]!.status, 'Scheduled');
    advance(1);
    const started = engine.events()[0]!;
    assert.equal(started.status, 'Started');
    assert.equal(started.startedAt, T0 + 15 * MINUTE);
    assert.equal(started.startedBy, 'notBefore');
    assert.equal(engine.documentFor('web0').events[0]!.notBefore, null);
    assert.equal(engine.vmStates().get('web0'), 'frozen');
    advance(5 * SECOND);
    // The 5 s impact is over: the VM runs again, and the event is still listed as Started.
    assert.equal(engine.vmStates().get('web0'), undefined);
    assert.equal(engine.documentFor('web0').events[0]!.status, 'Started');
    advance(10 * MINUTE - 5 * SECOND - 1);
    assert.equal(engine.events().length, 1);
    advance(1);
    assert.deepEqual(engine.events(), []);
  });

  test('an event with unknown duration stays Started for the table default (10 min)', () => {
    const { engine, advance } = makeEngine();
    engine.createOperation({ type: 'restart', vms: ['web0'] });
    advance(15 * MINUTE);
    advance(10 * MINUTE - 1);
    assert.equal(engine.events().length, 1);
    advance(1);
    assert.equal(engine.events().length, 0);
  });

  test('a long advance applies each transition at its own time, one incarnation each', () => {
    const { engine, advance } = makeEngine();
    engine.createOperation({ type: 'freeze', vms: ['solo'] });
    const before = engine.incarnationOf('solo');
    const seen: number[] = [];
    engine.onChange((vms) => {
      if (vms.includes('solo')) seen.push(engine.incarnationOf('solo'));
    });
    advance(24 * 60 * MINUTE);
    assert.deepEqual(seen, [before + 1, before + 2]);
  });

  test('cancel removes a Scheduled event with no impact; a Started one cannot be cancelled', () => {
    const { engine, advance } = makeEngine();
    const a = engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
    const b = engine.createOperation({ type: 'restart', vms: ['web1'] }).events[0]!;
    engine.cancel(a);
    assert.deepEqual(ids(engine.documentFor('web0')), [b]);
    advance(15 * MINUTE);
    assertEngineError(() => engine.cancel(b), 'conflict', /already Started/);
    assertEngineError(() => engine.cancel(a), 'conflict', /already ended/);
    assertEngineError(() => engine.cancel('nope'), 'not-found', /no event/);
  });

  test('complete ends a Started event now; a Scheduled one cannot be completed', () => {
    const { engine } = makeEngine();
    const id = engine.createOperation({ type: 'hardware-failure', vms: ['web0'] }).events[0]!;
    engine.complete(id);
    assert.deepEqual(engine.events(), []);
    const id2 = engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
    assertEngineError(() => engine.complete(id2), 'conflict', /still Scheduled/);
  });
});

describe('approvals', () => {
  test('an approval from any VM that sees the event starts it for all its Resources', () => {
    const { engine } = makeEngine();
    const id = engine.createOperation({ type: 'freeze', vms: ['web0', 'web1'] }).events[0]!;
    engine.approve('web2', [id]);
    const event = engine.events()[0]!;
    assert.equal(event.status, 'Started');
    assert.equal(event.startedBy, 'approval');
    assert.equal(event.startedAt, T0);
    assert.deepEqual(event.approvals, [{ vm: 'web2', at: T0 }]);
    for (const vm of ['web0', 'web1', 'web2']) assert.equal(engine.documentFor(vm).events[0]!.status, 'Started');
  });

  test('one request may approve several events; ids match case-insensitively', () => {
    const { engine } = makeEngine();
    const a = engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
    const b = engine.createOperation({ type: 'restart', vms: ['web1'] }).events[0]!;
    engine.approve('web0', [a.toLowerCase(), b]);
    assert.deepEqual(
      engine.events().map((e) => e.status),
      ['Started', 'Started'],
    );
  });

  test('repeated approvals and approvals of Started or ended events change nothing', () => {
    const { engine } = makeEngine();
    const id = engine.createOperation({ type: 'hardware-failure', vms: ['web0'] }).events[0]!;
    const inc = engine.incarnationOf('web0');
    engine.approve('web0', [id]);
    assert.equal(engine.incarnationOf('web0'), inc);
    assert.deepEqual(engine.events()[0]!.approvals, []);
    engine.complete(id);
    const after = engine.incarnationOf('web0');
    engine.approve('web1', [id]);
    assert.equal(engine.incarnationOf('web0'), after);
  });

  test('an id never issued, or of an event the VM cannot see, is refused and nothing is approved', () => {
    const { engine } = makeEngine();
    const web = engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
    const solo = engine.createOperation({ type: 'freeze', vms: ['solo'] }).events[0]!;
    assertEngineError(() => engine.approve('web0', ['C7061BAC-AFDC-4513-B24B-AA5F13A16123']), 'invalid', /never issued/);
    assertEngineError(() => engine.approve('web0', [web, solo]), 'invalid', /not an event that VM 'web0' can see/);
    assert.deepEqual(
      engine.events().map((e) => e.status),
      ['Scheduled', 'Scheduled'],
    );
    assertEngineError(() => engine.approve('ghost', [web]), 'not-found', /no VM named 'ghost'/);
  });
});

describe('delivery and incarnations', () => {
  test('every VM of the tenant sees the event; other tenants do not', () => {
    const { engine } = makeEngine();
    const id = engine.createOperation({ type: 'freeze', vms: ['web1'] }).events[0]!;
    for (const vm of ['web0', 'web1', 'web2']) assert.deepEqual(ids(engine.documentFor(vm)), [id]);
    for (const vm of ['ss0', 'gpu0', 'solo']) assert.deepEqual(ids(engine.documentFor(vm)), []);
  });

  test('GPU VMs of a single-fault-domain scale set see only their own events', () => {
    const { engine } = makeEngine();
    const id = engine.createOperation({ type: 'freeze', vms: ['gpu0'] }).events[0]!;
    assert.deepEqual(ids(engine.documentFor('gpu0')), [id]);
    assert.deepEqual(ids(engine.documentFor('gpu1')), []);
    assert.equal(engine.incarnationOf('gpu1'), FIRST_INCARNATION);
  });

  test('GPU VMs in a scale set with several fault domains see the whole tenant', () => {
    const { engine } = makeEngine([
      { name: 'g0', tenant: 'g', tenantKind: 'scaleSet', gpu: true, faultDomainCount: 2 },
      { name: 'g1', tenant: 'g', tenantKind: 'scaleSet', gpu: true, faultDomainCount: 2, faultDomain: 1 },
    ]);
    const id = engine.createOperation({ type: 'freeze', vms: ['g0'] }).events[0]!;
    assert.deepEqual(ids(engine.documentFor('g1')), [id]);
  });

  test('an incarnation moves by one per change of the visible events and only then', () => {
    const { engine, advance } = makeEngine();
    assert.equal(engine.incarnationOf('web0'), 1);
    const id = engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
    assert.equal(engine.incarnationOf('web0'), 2);
    assert.equal(engine.incarnationOf('solo'), 1);
    advance(MINUTE);
    assert.equal(engine.incarnationOf('web0'), 2);
    engine.approve('web1', [id]);
    assert.equal(engine.incarnationOf('web0'), 3);
    // The impact ending changes no document.
    advance(5 * SECOND);
    assert.equal(engine.incarnationOf('web0'), 3);
    advance(10 * MINUTE);
    assert.equal(engine.incarnationOf('web0'), 4);
    assert.deepEqual(engine.documentFor('web0').events, []);
  });

  test('two events in one document, in creation order', () => {
    const { engine } = makeEngine();
    const a = engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
    const b = engine.createOperation({ type: 'restart', vms: ['web2'] }).events[0]!;
    assert.deepEqual(ids(engine.documentFor('web1')), [a, b]);
  });

  test('a VM added to a tenant sees its live events; a returning name never goes backwards', () => {
    const { engine } = makeEngine();
    const id = engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
    engine.addVm({ name: 'web3', tenant: 'web', faultDomain: 2 });
    assert.deepEqual(ids(engine.documentFor('web3')), [id]);
    const inc = engine.incarnationOf('web3');
    engine.removeVm('web3');
    engine.addVm({ name: 'web3', tenant: 'web' });
    assert.ok(engine.incarnationOf('web3') > inc);
  });
});

describe('fleet rules', () => {
  test('defaults: a standalone VM is its own tenant on its own host', () => {
    const { engine } = makeEngine([]);
    const vm = engine.addVm({ name: 'a' });
    assert.equal(vm.tenant, 'a');
    assert.equal(engine.fleet.tenants.get('a')!.kind, 'standalone');
    assert.equal(vm.host, 'host-a');
    assert.equal(vm.priority, 'Regular');
  });

  test('bad specs are refused with a message that names the problem', () => {
    const { engine } = makeEngine();
    assertEngineError(() => engine.addVm({ name: 'web0' }), 'conflict', /already exists/);
    assertEngineError(() => engine.addVm({ name: 'bad name' }), 'invalid', /VM name/);
    assertEngineError(
      () => engine.addVm({ name: 'x', tenant: 'web', faultDomain: 3 }),
      'invalid',
      /faultDomain must be an integer from 0 to 2/,
    );
    assertEngineError(
      () => engine.addVm({ name: 'x', tenant: 'web', tenantKind: 'scaleSet' }),
      'conflict',
      /is a availabilitySet|is an? availabilitySet/,
    );
    assertEngineError(() => engine.addVm({ name: 'x', tenant: 'solo', tenantKind: 'standalone' }), 'conflict', /cannot hold a second VM/);
    assertEngineError(() => engine.addVm({ name: 'x', tenant: 'ss', terminateNotificationMinutes: 20 }), 'invalid', /from 5 to 15/);
    assertEngineError(() => engine.addVm({ name: 'x', terminateNotificationMinutes: 10 }), 'invalid', /only to scale-set VMs/);
    assertEngineError(() => engine.addVm({ name: 'x', tenant: 'web', faultDomainCount: 5 }), 'conflict', /has 3 fault domains/);
  });

  test('addresses are unique and IPv4-mapped forms match', () => {
    const { engine } = makeEngine([]);
    engine.addVm({ name: 'a', address: '127.0.0.2' });
    assert.equal(engine.fleet.byAddress('::ffff:127.0.0.2')?.name, 'a');
    assertEngineError(() => engine.addVm({ name: 'b', address: '127.0.0.2' }), 'conflict', /already belongs to VM 'a'/);
  });
});

describe('reset and snapshots', () => {
  test('reset returns to the initial fleet with no events; incarnations keep rising', () => {
    const { engine } = makeEngine();
    engine.createOperation({ type: 'freeze', vms: ['web0'] });
    engine.createOperation({ type: 'delete', vms: ['ss1'] });
    engine.addVm({ name: 'extra' });
    const inc = engine.incarnationOf('web0');
    const soloInc = engine.incarnationOf('solo');
    engine.reset();
    assert.deepEqual(engine.events(), []);
    assert.equal(engine.fleet.vms.has('ss1'), true);
    assert.equal(engine.fleet.vms.has('extra'), false);
    assert.equal(engine.incarnationOf('web0'), inc + 1);
    assert.equal(engine.incarnationOf('solo'), soloInc, 'an unchanged document keeps its incarnation');
  });

  test('a snapshot restores the same events, ids, statuses and incarnations', () => {
    const a = makeEngine();
    const id = a.engine.createOperation({ type: 'freeze', vms: ['web0'] }).events[0]!;
    a.engine.createOperation({ type: 'hardware-failure', vms: ['solo'] });
    const snap = JSON.parse(JSON.stringify(a.engine.snapshot()));
    const b = makeEngine([]);
    b.engine.restore(snap);
    assert.deepEqual(b.engine.events(), a.engine.events());
    assert.deepEqual(b.engine.documentFor('web1'), a.engine.documentFor('web1'));
    assert.equal(b.engine.fleet.get('web0').vmId, a.engine.fleet.get('web0').vmId);
    b.advance(15 * MINUTE);
    assert.equal(b.engine.event(id).status, 'Started');
  });
});

describe('listeners', () => {
  test('a restore reports every VM it may have changed, gone ones included, without new incarnations', () => {
    const a = makeEngine();
    a.engine.createOperation({ type: 'freeze', vms: ['web0'] });
    const snap = JSON.parse(JSON.stringify(a.engine.snapshot()));
    const b = makeEngine();
    b.engine.addVm({ name: 'extra' });
    const incarnation = a.engine.incarnationOf('web0');
    const reported = new Set<string>();
    b.engine.onChange((vms) => vms.forEach((vm) => reported.add(vm)));
    b.engine.restore(snap);
    // Caches keyed by VM (the IMDS answers, the event stream) rely on this to drop what they hold.
    for (const vm of [...a.engine.fleet.vms.keys(), 'extra']) assert.ok(reported.has(vm), `${vm} reported`);
    assert.equal(b.engine.incarnationOf('web0'), incarnation, 'the saved incarnation, not a new one');
  });

  test('a listener that changes the schedule mid-tick loses no transition', () => {
    const { engine, advance } = makeEngine();
    engine.createOperation({ type: 'freeze', vms: ['web0'] });
    let created = false;
    engine.onChange(() => {
      // On the first Freeze's start, force a second one due before the first ends: it must start and end too.
      if (!created && engine.events().some((e) => e.status === 'Started')) {
        created = true;
        engine.createOperation({ type: 'freeze', vms: ['solo'], notBefore: T0 + MINUTE, force: true });
      }
    });
    advance(60 * MINUTE);
    assert.ok(created);
    assert.deepEqual(engine.events(), [], 'both Freezes have started and ended');
  });
});

describe('fleet realism', () => {
  test('a host lies in one fault domain of each tenant it serves', () => {
    const { engine } = makeEngine([]);
    engine.addVm({ name: 'a0', tenant: 'a', faultDomain: 0, host: 'h' });
    engine.addVm({ name: 'b1', tenant: 'b', faultDomain: 1, host: 'h' }); // another tenant may differ
    assertEngineError(
      () => engine.addVm({ name: 'a1', tenant: 'a', faultDomain: 1, host: 'h' }),
      'conflict',
      /one fault domain of each tenant/,
    );
  });

  test("update domains are bounded by the tenant's count; scale sets keep their own name apart from the placement group", () => {
    const { engine } = makeEngine([]);
    assertEngineError(() => engine.addVm({ name: 'x', tenant: 't', updateDomain: 5 }), 'invalid', /from 0 to 4/);
    const vm = engine.addVm({
      name: 'x',
      tenant: 'ss-pg1',
      tenantKind: 'scaleSet',
      scaleSet: 'ss',
      updateDomainCount: 10,
      updateDomain: 9,
    });
    assert.equal(vm.scaleSet, 'ss');
    assert.equal(engine.addVm({ name: 'y', tenant: 'plain', tenantKind: 'scaleSet' }).scaleSet, 'plain');
    assert.equal(engine.addVm({ name: 'z' }).scaleSet, null);
    assertEngineError(() => engine.addVm({ name: 'w', scaleSet: 'ss' }), 'invalid', /only to scale-set VMs/);
  });
});

describe('addresses', () => {
  test('addresses are kept in the canonical form Node reports peers in', async () => {
    const { normalizeAddress } = await import('../../../src/emulator/engine/fleet.js');
    assert.equal(normalizeAddress('10.0.0.4'), '10.0.0.4');
    assert.equal(normalizeAddress('::FFFF:10.0.0.4'), '10.0.0.4');
    assert.equal(normalizeAddress('::ffff:a00:4'), '10.0.0.4');
    assert.equal(normalizeAddress('fd00::0001'), 'fd00::1');
    assert.equal(normalizeAddress('0:0:0:0:0:0:0:1'), '::1');
    assert.equal(normalizeAddress('FD00:0:0:0:0:0:0:ABCD'), 'fd00::abcd');
    assert.equal(normalizeAddress('banana'), null);
    assert.equal(normalizeAddress('10.0.0.256'), null);
  });

  test('a VM given an address in any spelling matches its peer address; a bad one is refused', () => {
    const { engine } = makeEngine([]);
    engine.addVm({ name: 'a', address: 'FD00::0001' });
    assert.equal(engine.fleet.byAddress('fd00::1')?.name, 'a');
    assertEngineError(() => engine.addVm({ name: 'b', address: 'banana' }), 'invalid', /"banana" is not an IPv4 or IPv6 address/);
  });
});

describe('reset with a new fleet', () => {
  test('replaces the start fleet, checked whole first', () => {
    const { engine } = makeEngine();
    engine.createOperation({ type: 'freeze', vms: ['web0'] });
    assert.throws(() => engine.reset([{ name: 'n0' }, { name: 'n0' }]), /already exists/);
    assert.equal(engine.events().length, 1, 'a refused fleet changes nothing');
    engine.reset([{ name: 'n0' }, { name: 'n1', tenant: 'n', faultDomain: 1 }]);
    assert.deepEqual([...engine.fleet.vms.keys()], ['n0', 'n1']);
    assert.deepEqual(engine.events(), []);
    engine.addVm({ name: 'extra' });
    engine.reset();
    assert.deepEqual([...engine.fleet.vms.keys()], ['n0', 'n1'], 'the new fleet is the start state now');
  });
});

describe('fleet placement', () => {
  test('the host rule follows VMs as they come and go on a crowded host', () => {
    const { engine } = makeEngine([]);
    for (let i = 0; i < 2000; i++) engine.addVm({ name: `v${i}`, tenant: `t${i % 50}`, faultDomain: 0, host: 'big' });
    engine.removeVm('v0');
    assertEngineError(
      () => engine.addVm({ name: 'x', tenant: 't0', faultDomain: 1, host: 'big' }),
      'conflict',
      /carries 'v50' of tenant 't0' in fault domain 0/,
    );
    for (let i = 50; i < 2000; i += 50) engine.removeVm(`v${i}`);
    // Tenant t0 has left the host, so a new t0 VM may sit in any fault domain there.
    engine.addVm({ name: 'x', tenant: 't0', faultDomain: 1, host: 'big' });
  });
});

describe('borrowing the engine', () => {
  test('reset with keepStartFleet installs a fleet but a later reset goes back to the start fleet', () => {
    const { engine } = makeEngine();
    const changed: string[] = [];
    engine.onChange((vms) => changed.push(...vms));
    engine.reset([{ name: 'scenario0' }], { keepStartFleet: true });
    assert.deepEqual([...engine.fleet.vms.keys()], ['scenario0']);
    assert.ok(changed.includes('scenario0'), 'listeners hear about the swap');
    engine.reset();
    assert.ok(engine.fleet.vms.has('web0'));
    assert.equal(engine.fleet.vms.has('scenario0'), false);
  });
});
