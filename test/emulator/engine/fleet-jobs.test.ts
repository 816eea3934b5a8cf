// Shared hosts, rolling host updates and the activation profile.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { EngineError } from '../../../src/emulator/engine/errors.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { Timing } from '../../../src/emulator/engine/timing.js';
import { MINUTE, SECOND, T0, makeEngine } from './fixtures.js';

/** Host hA carries three customers: availability sets A and B and a standalone VM. */
const SHARED: VmSpec[] = [
  { name: 'a0', tenant: 'A', tenantKind: 'availabilitySet', faultDomain: 0, faultDomainCount: 3, host: 'hA' },
  { name: 'a1', tenant: 'A', tenantKind: 'availabilitySet', faultDomain: 1, faultDomainCount: 3, host: 'hB' },
  { name: 'a2', tenant: 'A', tenantKind: 'availabilitySet', faultDomain: 2, faultDomainCount: 3, host: 'hC' },
  { name: 'b0', tenant: 'B', tenantKind: 'availabilitySet', faultDomain: 1, host: 'hA' },
  { name: 'b1', tenant: 'B', tenantKind: 'availabilitySet', faultDomain: 0, host: 'hB' },
  { name: 'c0', host: 'hA' },
];

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof EngineError) return `${err.code}: ${err.message}`;
    throw err;
  }
  return 'ok';
}

describe('shared hosts', () => {
  test('a host job gives each tenant its own event with only its own VMs', () => {
    const { engine } = makeEngine(SHARED);
    const op = engine.createOperation({ type: 'freeze', host: 'hA' });
    const events = engine.events();
    assert.equal(events.length, 3);
    assert.deepEqual(
      events.map((e) => [e.tenant, e.resources]),
      [
        ['A', ['a0']],
        ['B', ['b0']],
        ['c0', ['c0']],
      ],
    );
    assert.equal(new Set(events.map((e) => e.id)).size, 3, 'distinct EventIds');
    assert.equal(new Set(events.map((e) => e.jobId)).size, 1, 'one job');
    assert.deepEqual(
      op.events,
      events.map((e) => e.id),
    );
    // Delivery is still per tenant: a1 sees A's event, though its own host is not touched.
    assert.deepEqual(
      engine.documentFor('a1').events.map((e) => e.resources),
      [['a0']],
    );
  });

  test('the job starts only when every tenant has approved', () => {
    const { engine, clock } = makeEngine(SHARED);
    engine.createOperation({ type: 'freeze', host: 'hA' });
    const [a, b, c] = engine.events();
    engine.approve('a2', [a!.id]);
    clock.advance(MINUTE);
    engine.approve('b1', [b!.id]);
    assert.deepEqual(
      engine.events().map((e) => e.status),
      ['Scheduled', 'Scheduled', 'Scheduled'],
    );
    assert.deepEqual(engine.jobMembers(a!.id), [
      { tenant: 'A', event: a!.id, approved: true },
      { tenant: 'B', event: b!.id, approved: true },
      { tenant: 'c0', event: c!.id, approved: false },
    ]);
    clock.advance(MINUTE);
    engine.approve('c0', [c!.id]);
    const started = engine.events();
    assert.deepEqual(
      started.map((e) => e.status),
      ['Started', 'Started', 'Started'],
    );
    assert.deepEqual(
      started.map((e) => e.startedAt),
      [T0 + 2 * MINUTE, T0 + 2 * MINUTE, T0 + 2 * MINUTE],
    );
  });

  test('without every approval the job starts at NotBefore, for all tenants at once', () => {
    const { engine, advance } = makeEngine(SHARED);
    engine.createOperation({ type: 'platform-reboot', host: 'hA' });
    const [a] = engine.events();
    engine.approve('a0', [a!.id]);
    advance(15 * MINUTE - 1);
    assert.ok(engine.events().every((e) => e.status === 'Scheduled'));
    advance(1);
    assert.ok(engine.events().every((e) => e.status === 'Started' && e.startedBy === 'notBefore'));
  });

  test("cancelling one tenant's event cancels the whole job", () => {
    const { engine } = makeEngine(SHARED);
    const op = engine.createOperation({ type: 'freeze', host: 'hA' });
    engine.cancel(op.events[1]!);
    assert.deepEqual(engine.events(), []);
    assert.equal(engine.operation(op.id).status, 'cancelled');
  });

  test('a host hardware failure reaches every VM on the host, already Started, one event per tenant', () => {
    const { engine } = makeEngine(SHARED);
    engine.createOperation({ type: 'hardware-failure', host: 'hA' });
    const events = engine.events();
    assert.deepEqual(
      events.map((e) => [e.tenant, e.type, e.status, e.resources]),
      [
        ['A', 'Reboot', 'Started', ['a0']],
        ['B', 'Reboot', 'Started', ['b0']],
        ['c0', 'Reboot', 'Started', ['c0']],
      ],
    );
  });

  test('degraded hardware on a host is announced 7 days ahead and waits for every tenant', () => {
    const { engine } = makeEngine(SHARED);
    engine.createOperation({ type: 'degraded-hardware', host: 'hA' });
    const events = engine.events();
    assert.ok(events.every((e) => e.type === 'Redeploy' && e.notBefore === T0 + 7 * 24 * 60 * MINUTE));
    engine.approve('a0', [events[0]!.id]);
    engine.approve('b0', [events[1]!.id]);
    assert.ok(engine.events().every((e) => e.status === 'Scheduled'));
  });

  test('user operations are not host jobs', () => {
    const { engine } = makeEngine(SHARED);
    assert.match(
      codeOf(() => engine.createOperation({ type: 'restart', host: 'hA' })),
      /^invalid: 'restart' is not a host-level job/,
    );
  });
});

describe('rolling host update', () => {
  test('one fault domain at a time, the next Scheduled shortly after the previous completes', () => {
    const { engine, advance } = makeEngine(SHARED);
    const op = engine.createOperation({ type: 'host-update', tenant: 'A' });
    assert.deepEqual(
      op.steps!.map((s) => [s.faultDomain, s.vms, s.status]),
      [
        [0, ['a0'], 'scheduled'],
        [1, ['a1'], 'pending'],
        [2, ['a2'], 'pending'],
      ],
    );
    let [event] = engine.events();
    assert.deepEqual([event!.type, event!.source, event!.resources, event!.durationInSeconds], ['Freeze', 'Platform', ['a0'], 9]);
    engine.approve('a2', [event!.id]);
    assert.equal(engine.operation(op.id).steps![0]!.status, 'started');
    // [seed] The event stays Started about 10 minutes after its 9 s impact; the next fault domain
    // is Scheduled "peu après la fin de la maintenance d'un autre domaine d'erreur" (000_…), [choice] a minute after its removal.
    advance(10 * MINUTE);
    assert.deepEqual(engine.events(), [], 'FD 0 done; FD 1 not yet scheduled');
    assert.equal(engine.operation(op.id).steps![0]!.status, 'done');
    advance(MINUTE - 1);
    assert.deepEqual(engine.events(), []);
    advance(1);
    [event] = engine.events();
    assert.deepEqual(event!.resources, ['a1']);
    assert.equal(event!.notBefore, T0 + 10 * MINUTE + MINUTE + 15 * MINUTE);
    // Unapproved, it starts at NotBefore; then FD 2 follows.
    advance(15 * MINUTE + 10 * MINUTE + MINUTE);
    [event] = engine.events();
    assert.deepEqual(event!.resources, ['a2']);
    advance(15 * MINUTE + 10 * MINUTE);
    const done = engine.operation(op.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(
      done.steps!.map((s) => s.status),
      ['done', 'done', 'done'],
    );
    assert.equal(done.events.length, 3);
  });

  test("later steps keep the operation's duration and description", () => {
    const { engine, advance } = makeEngine(SHARED);
    engine.createOperation({ type: 'host-update', tenant: 'A', durationInSeconds: 30, description: 'Host OS update' });
    advance(15 * MINUTE + 10 * MINUTE + MINUTE);
    const [event] = engine.events();
    assert.deepEqual([event!.resources, event!.durationInSeconds, event!.description], [['a1'], 30, 'Host OS update']);
  });

  test('routine maintenance never overlaps within a tenant', () => {
    const { engine, advance } = makeEngine(SHARED);
    const op = engine.createOperation({ type: 'host-update', tenant: 'A' });
    assert.match(
      codeOf(() => engine.createOperation({ type: 'host-update', tenant: 'A' })),
      /^conflict: a host update is already in progress for tenant 'A'/,
    );
    assert.match(
      codeOf(() => engine.createOperation({ type: 'host-update', host: 'hB' })),
      /^conflict: .*tenant 'A'/,
    );
    assert.equal(
      codeOf(() => engine.createOperation({ type: 'host-update', tenant: 'B' })),
      'ok',
    );
    advance(3 * (26 * MINUTE));
    assert.equal(engine.operation(op.id).status, 'completed');
    assert.equal(
      codeOf(() => engine.createOperation({ type: 'host-update', tenant: 'A' })),
      'ok',
      'free again once done',
    );
  });

  test('cancelling a step calls off the rest of the rollout', () => {
    const { engine, advance } = makeEngine(SHARED);
    const op = engine.createOperation({ type: 'host-update', tenant: 'A' });
    engine.cancel(op.events[0]!);
    advance(24 * 60 * MINUTE);
    const after = engine.operation(op.id);
    assert.equal(after.status, 'cancelled');
    assert.deepEqual(
      after.steps!.map((s) => s.status),
      ['cancelled', 'cancelled', 'cancelled'],
    );
    assert.deepEqual(engine.events(), []);
  });

  test('a fault domain whose VMs have all gone is skipped', () => {
    const { engine, advance } = makeEngine(SHARED);
    const op = engine.createOperation({ type: 'host-update', tenant: 'A' });
    engine.removeVm('a1');
    advance(15 * MINUTE + 10 * MINUTE + MINUTE);
    assert.deepEqual(engine.events()[0]!.resources, ['a2']);
    assert.deepEqual(
      engine.operation(op.id).steps!.map((s) => s.status),
      ['done', 'skipped', 'scheduled'],
    );
  });

  test('a host update on a host is one shared job', () => {
    const { engine } = makeEngine(SHARED);
    engine.createOperation({ type: 'host-update', host: 'hA' });
    assert.equal(new Set(engine.events().map((e) => e.jobId)).size, 1);
    assert.equal(engine.events().length, 3);
  });
});

describe('activation profile', () => {
  function activated(delaySeconds = 120, factor = 1) {
    const clock = new ManualClock(T0);
    const engine = new Engine({
      clock,
      timing: new Timing(factor),
      fleet: [
        { name: 'w0', tenant: 'w', faultDomain: 0 },
        { name: 'w1', tenant: 'w', faultDomain: 1 },
      ],
      activation: { mode: 'realistic', firstCallDelaySeconds: delaySeconds },
    });
    const advance = (ms: number) => {
      clock.advance(ms);
      engine.tick();
    };
    return { engine, clock, advance };
  }

  test('a VM sees no events until its first request has enabled it, after the delay', () => {
    const { engine, advance } = activated();
    const id = engine.createOperation({ type: 'freeze', vms: ['w0'] }).events[0]!;
    assert.deepEqual(engine.documentFor('w0').events, []);
    assert.equal(engine.activationOf('w0').status, 'disabled');
    assert.deepEqual(engine.recordRequest('w0'), { delayMs: 120 * SECOND });
    assert.equal(engine.activationOf('w0').status, 'enabling');
    advance(60 * SECOND);
    assert.deepEqual(engine.recordRequest('w0'), { delayMs: 60 * SECOND }, 'a second call waits for the same enabling');
    const inc = engine.incarnationOf('w0');
    advance(60 * SECOND);
    assert.equal(engine.activationOf('w0').status, 'enabled');
    assert.deepEqual(
      engine.documentFor('w0').events.map((e) => e.id),
      [id],
    );
    assert.equal(engine.incarnationOf('w0'), inc + 1);
    assert.deepEqual(engine.documentFor('w1').events, [], 'w1 has not asked yet');
    assert.match(
      codeOf(() => engine.approve('w1', [id])),
      /^invalid: .*can see/,
    );
  });

  test('24 h without a request disables it again; requests keep it enabled', () => {
    const { engine, advance } = activated(0);
    engine.recordRequest('w0');
    assert.equal(engine.activationOf('w0').status, 'enabled', 'a zero delay enables at once');
    advance(20 * 60 * MINUTE);
    engine.recordRequest('w0');
    advance(20 * 60 * MINUTE);
    assert.equal(engine.activationOf('w0').status, 'enabled');
    engine.createOperation({ type: 'degraded-hardware', vms: ['w0'] });
    assert.equal(engine.documentFor('w0').events.length, 1);
    advance(4 * 60 * MINUTE);
    assert.equal(engine.activationOf('w0').status, 'disabled');
    assert.deepEqual(engine.documentFor('w0').events, []);
  });

  test('the delay is at most 120 s and follows the timing factor', () => {
    assert.throws(() => activated(121), /from 0 to 120/);
    const { engine } = activated(120, 60);
    assert.deepEqual(engine.recordRequest('w0'), { delayMs: 2 * SECOND });
  });

  test('with activation off requests change nothing', () => {
    const { engine } = makeEngine();
    assert.deepEqual(engine.recordRequest('web0'), { delayMs: 0 });
    assert.equal(engine.activationOf('web0').status, 'enabled');
  });
});
