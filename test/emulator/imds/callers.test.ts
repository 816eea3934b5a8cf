// The per-VM table behind every IMDS request: one caller per VM, kept until its document changes.
// A stale answer here would be served to every later GET, so each way a document changes is covered.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Callers } from '../../../src/emulator/imds/callers.js';
import { Identifier } from '../../../src/emulator/imds/identity.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { EngineError } from '../../../src/emulator/engine/errors.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { makeEngine, MINUTE } from '../engine/fixtures.js';

const V = '2020-07-01';
const FLEET: VmSpec[] = [{ name: 'a' }, { name: 'b', address: '10.0.0.2' }];

function table(fleet: VmSpec[] = FLEET, rateLimit = 0) {
  const rig = makeEngine(fleet);
  const limiter = new RateLimiter(rateLimit, () => 0);
  const callers = new Callers(rig.engine, new Identifier(rig.engine.fleet), limiter);
  return { ...rig, limiter, callers };
}

const eventIds = (body: Buffer) => (JSON.parse(body.toString()) as { Events: { EventId: string }[] }).Events.map((e) => e.EventId);

describe('IMDS callers', () => {
  it('finds each VM once: the same caller and the same answer until something changes', () => {
    const { callers } = table();
    const a = callers.of('127.0.0.1', 'a')!;
    assert.equal(a.vm.name, 'a');
    assert.equal(callers.of('127.0.0.1', 'a'), a);
    assert.equal(callers.answer(a, V), callers.answer(a, V));
    assert.equal(callers.of('127.0.0.1', 'nobody'), undefined);
  });

  it('takes the source address before the prefix, and the only VM without either', () => {
    const { callers } = table();
    assert.equal(callers.of('10.0.0.2', 'a')!.vm.name, 'b');
    assert.equal(callers.of('127.0.0.1', undefined), undefined, 'two VMs and no way to choose');
    const solo = table([{ name: 'solo' }]).callers;
    assert.equal(solo.of('127.0.0.1', undefined)!.vm.name, 'solo');
    assert.equal(solo.of('127.0.0.1', undefined), solo.of(undefined, 'solo'));
  });

  it('answers a new event at once, to a caller held from before it', () => {
    const { engine, callers } = table();
    const held = callers.of(undefined, 'a')!;
    assert.deepEqual(eventIds(callers.answer(held, V).body), []);
    const id = engine.createOperation({ type: 'freeze', vms: ['a'] }).events[0]!;
    assert.deepEqual(eventIds(callers.answer(held, V).body), [id], 'a held request gets the new document');
    const fresh = callers.of(undefined, 'a')!;
    assert.notEqual(fresh, held);
    assert.deepEqual(eventIds(callers.answer(fresh, V).body), [id]);
  });

  it('answers a transition that fell due on the clock without anything else reading the engine', () => {
    const { engine, clock, callers } = table();
    const caller = callers.of(undefined, 'a')!;
    const id = engine.createOperation({ type: 'freeze', vms: ['a'] }).events[0]!;
    assert.match(callers.answer(caller, V).body.toString(), /"Scheduled"/);
    clock.advance(20 * MINUTE);
    const later = callers.of(undefined, 'a')!;
    const body = callers.answer(later, V).body.toString();
    assert.match(body, new RegExp(`"EventId":"${id}","EventStatus":"Started"`), 'the Freeze started meanwhile');
  });

  it('forgets a removed VM: the prefix finds nothing and a held caller gets not-found', () => {
    const { engine, callers } = table();
    const held = callers.of(undefined, 'a')!;
    callers.answer(held, V);
    engine.removeVm('a');
    assert.equal(callers.of(undefined, 'a'), undefined);
    assert.throws(
      () => callers.answer(held, V),
      (err) => err instanceof EngineError && err.code === 'not-found',
    );
  });

  it('a VM removed and added again under its name is the new VM', () => {
    const { engine, callers } = table();
    const old = callers.of(undefined, 'a')!;
    engine.removeVm('a');
    engine.addVm({ name: 'a', address: '10.0.0.9' });
    const now = callers.of(undefined, 'a')!;
    assert.notEqual(now.vm, old.vm);
    assert.equal(now.vm.address, '10.0.0.9');
  });

  it('serves the restored documents after a restore, not the ones it had rendered', () => {
    const source = table();
    const id = source.engine.createOperation({ type: 'freeze', vms: ['a'] }).events[0]!;
    const snapshot = JSON.parse(JSON.stringify(source.engine.snapshot()));
    const { engine, callers } = table();
    const before = callers.of(undefined, 'a')!;
    assert.deepEqual(eventIds(callers.answer(before, V).body), []);
    engine.restore(snapshot);
    assert.deepEqual(eventIds(callers.answer(callers.of(undefined, 'a')!, V).body), [id]);
  });

  it('keeps a VM’s rate-limit bucket across document changes, and a reset refills it in place', () => {
    const { engine, limiter, callers } = table(FLEET, 2);
    const first = callers.of(undefined, 'a')!;
    assert.equal(limiter.take(first.bucket), true);
    assert.equal(limiter.take(first.bucket), true);
    assert.equal(limiter.take(first.bucket), false, 'two a second, on a clock that does not move');
    engine.createOperation({ type: 'freeze', vms: ['a'] });
    const second = callers.of(undefined, 'a')!;
    assert.notEqual(second, first);
    assert.equal(second.bucket, first.bucket);
    assert.equal(limiter.take(second.bucket), false, 'a new event does not refill the quota');
    limiter.reset();
    assert.equal(limiter.take(first.bucket), true);
    assert.equal(limiter.allow('a'), true, 'allow(name) spends from the same bucket');
    assert.equal(limiter.take(first.bucket), false);
  });
});
