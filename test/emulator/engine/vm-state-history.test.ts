// VM states, the history of ended events and deleted VMs: what the dashboard reads from the engine.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine, EngineSnapshot } from '../../../src/emulator/engine/engine.js';
import { MAX_PAGE_LIMIT } from '../../../src/emulator/engine/paging.js';
import { STATE_WHILE_STARTED, VM_STATES } from '../../../src/emulator/engine/vm-state.js';
import { loadStateFile, writeStateFileSync } from '../../../src/emulator/state/file.js';
import { MINUTE, SECOND, T0, makeEngine } from './fixtures.js';

type Made = ReturnType<typeof makeEngine>;

/** Every ended event, oldest first: history() gives pages, newest first. */
const endedOf = (engine: Engine) => engine.history({ limit: MAX_PAGE_LIMIT }).items.reverse();

const states = ({ engine }: Made) => Object.fromEntries(engine.vmStates());
const historyIds = ({ engine }: Made) => endedOf(engine).map((h) => [h.id, h.cancelled ? 'cancelled' : 'completed']);

/** Creates an operation and returns its only event's id. */
function only(m: Made, request: Parameters<Made['engine']['createOperation']>[0]): string {
  const op = m.engine.createOperation(request);
  assert.equal(op.events.length, 1, `${request.type} should create one event`);
  return op.events[0]!;
}

describe('vmStates', () => {
  test('maps every event type to a state and lists only live VM states', () => {
    assert.deepEqual(STATE_WHILE_STARTED, {
      Freeze: 'frozen',
      Reboot: 'rebooting',
      Redeploy: 'redeploying',
      Terminate: 'deleting',
      Preempt: 'evicting',
    });
    for (const s of Object.values(STATE_WHILE_STARTED)) assert.ok(VM_STATES.includes(s));
    assert.ok(VM_STATES.includes('running') && VM_STATES.includes('deleted'));
  });

  test('no VM has a state while nothing is Started', () => {
    const m = makeEngine();
    assert.deepEqual(states(m), {});
    m.engine.createOperation({ type: 'freeze', vms: ['web0'] });
    m.engine.createOperation({ type: 'restart', vms: ['solo'] });
    assert.deepEqual(states(m), {}, 'Scheduled events leave their VMs running');
  });

  const cases = [
    { type: 'freeze', vm: 'web0', state: 'frozen' },
    { type: 'restart', vm: 'web1', state: 'rebooting' },
    { type: 'platform-reboot', vm: 'solo', state: 'rebooting' },
    { type: 'redeploy', vm: 'gpu0', state: 'redeploying' },
    { type: 'platform-redeploy', vm: 'web2', state: 'redeploying' },
    { type: 'delete', vm: 'ss0', state: 'deleting' },
    { type: 'spot-eviction', vm: 'ss0', state: 'evicting' },
  ] as const;
  for (const c of cases) {
    test(`${c.type}: ${c.vm} is ${c.state} while its event is Started, then running again`, () => {
      const m = makeEngine();
      const id = only(m, { type: c.type, vms: [c.vm] });
      assert.equal(m.engine.vmStates().get(c.vm), undefined, 'Scheduled: still running');
      m.engine.approve(c.vm, [id]);
      assert.equal(m.engine.event(id).status, 'Started');
      assert.deepEqual(states(m), { [c.vm]: c.state }, 'only the VM the event names, not the rest of its tenant');
      m.engine.complete(id);
      // [seed] An evicted Spot VM is deallocated by default ("Deallocate leaves it stopped").
      assert.deepEqual(states(m), c.type === 'spot-eviction' ? { ss0: 'deallocated' } : {});
      // A completed Terminate has deleted the VM; the others are back and running.
      assert.equal(m.engine.fleet.vms.has(c.vm), c.type !== 'delete');
    });
  }

  test('a hardware failure makes its VMs rebooting at once', () => {
    const m = makeEngine();
    m.engine.createOperation({ type: 'hardware-failure', vms: ['web0', 'web1'] });
    assert.deepEqual(states(m), { web0: 'rebooting', web1: 'rebooting' });
  });

  test('follows the clock: the state starts at NotBefore and ends with the impact', () => {
    const m = makeEngine();
    const id = only(m, { type: 'freeze', vms: ['web0'] });
    m.clock.advance(15 * MINUTE - SECOND);
    assert.deepEqual(states(m), {});
    // vmStates() applies what fell due by itself, without a tick from outside.
    m.clock.advance(SECOND);
    assert.deepEqual(states(m), { web0: 'frozen' });
    // [seed] The impact (the Freeze's 5 s DurationInSeconds) is shorter than the time Started.
    const impactEnd = m.engine.event(id).startedAt! + 5 * SECOND;
    m.clock.advanceTo(impactEnd - 1);
    assert.deepEqual(states(m), { web0: 'frozen' });
    m.clock.advanceTo(impactEnd);
    assert.deepEqual(states(m), {});
    assert.equal(m.engine.event(id).status, 'Started');
  });

  test('a job on a shared host changes the state of every VM it names, once all tenants approve', () => {
    const m = makeEngine([
      { name: 'a0', tenant: 'a', host: 'h' },
      { name: 'a1', tenant: 'a', host: 'h' },
      { name: 'b0', tenant: 'b', host: 'h' },
      { name: 'c0', tenant: 'c', host: 'elsewhere' },
    ]);
    const op = m.engine.createOperation({ type: 'platform-reboot', host: 'h' });
    const [a, b] = m.engine.events();
    assert.equal(op.events.length, 2);
    m.engine.approve('a0', [a!.id]);
    assert.deepEqual(states(m), {}, 'one tenant approving does not start the job');
    m.engine.approve('b0', [b!.id]);
    assert.deepEqual(states(m), { a0: 'rebooting', a1: 'rebooting', b0: 'rebooting' });
  });

  test('a cancelled event never changes a state; reset forgets Started events', () => {
    const m = makeEngine();
    const cancelled = only(m, { type: 'restart', vms: ['web0'] });
    m.engine.cancel(cancelled);
    m.engine.createOperation({ type: 'hardware-failure', vms: ['solo'] });
    assert.deepEqual(states(m), { solo: 'rebooting' });
    m.engine.reset();
    assert.deepEqual(states(m), {});
  });

  test('a VM removed while its event is Started has no state', () => {
    const m = makeEngine();
    m.engine.createOperation({ type: 'hardware-failure', vms: ['web0', 'web1'] });
    m.engine.removeVm('web0');
    assert.deepEqual(states(m), { web1: 'rebooting' });
  });
});

describe('history', () => {
  test('is empty before any event ends; live events are not in it', () => {
    const m = makeEngine();
    assert.deepEqual(endedOf(m.engine), []);
    m.engine.createOperation({ type: 'hardware-failure', vms: ['solo'] });
    m.engine.createOperation({ type: 'freeze', vms: ['web0'] });
    assert.deepEqual(endedOf(m.engine), []);
  });

  test('keeps a completed event as it was when it ended, with endedAt', () => {
    const m = makeEngine();
    const id = only(m, { type: 'restart', vms: ['web0'], description: 'kernel patch' });
    m.advance(MINUTE);
    m.engine.approve('web0', [id]);
    const started = m.engine.event(id);
    m.advance(2 * MINUTE);
    m.engine.complete(id);
    const [h, ...rest] = endedOf(m.engine);
    assert.deepEqual(rest, []);
    assert.equal(h!.id, id);
    assert.equal(h!.tenant, 'web');
    assert.deepEqual(h!.resources, ['web0']);
    assert.equal(h!.cancelled, false);
    assert.equal(h!.endedAt, T0 + 3 * MINUTE);
    assert.deepEqual(h!.event, started, 'the event exactly as it was');
    assert.equal(h!.event.status, 'Started');
    assert.equal(h!.event.startedBy, 'approval');
    assert.deepEqual(h!.event.approvals, [{ vm: 'web0', at: T0 + MINUTE }]);
    assert.equal(h!.event.description, 'kernel patch');
  });

  test('keeps a cancelled event still Scheduled, marked cancelled', () => {
    const m = makeEngine();
    const id = only(m, { type: 'redeploy', vms: ['solo'] });
    const before = m.engine.event(id);
    m.advance(30 * SECOND);
    m.engine.cancel(id);
    const [h] = endedOf(m.engine);
    assert.equal(h!.cancelled, true);
    assert.equal(h!.endedAt, T0 + 30 * SECOND);
    assert.deepEqual(h!.event, before);
    assert.equal(h!.event.status, 'Scheduled');
    assert.equal(h!.event.startedAt, null);
  });

  test('an event that runs its course ends at its endsAt, even when the clock jumps past it', () => {
    const m = makeEngine();
    const id = only(m, { type: 'freeze', vms: ['web0'] });
    m.clock.advance(2 * 60 * MINUTE);
    // history() ticks by itself.
    const [h] = endedOf(m.engine);
    assert.equal(h!.id, id);
    assert.equal(h!.cancelled, false);
    assert.equal(h!.event.startedAt, T0 + 15 * MINUTE);
    assert.equal(h!.event.startedBy, 'notBefore');
    assert.equal(h!.endedAt, h!.event.endsAt);
    assert.equal(h!.endedAt, T0 + 15 * MINUTE + 10 * MINUTE, '[seed] about 10 minutes Started');
  });

  test('lists events in the order they ended, not the order they were created', () => {
    const m = makeEngine();
    const byTime = only(m, { type: 'freeze', vms: ['web0'] }); // ends at 15 min 5 s
    const completed = only(m, { type: 'restart', vms: ['solo'] });
    const cancelled = only(m, { type: 'redeploy', vms: ['gpu0'] });
    m.engine.approve('solo', [completed]);
    m.advance(MINUTE);
    m.engine.complete(completed);
    m.advance(MINUTE);
    m.engine.cancel(cancelled);
    m.advance(60 * MINUTE);
    assert.deepEqual(historyIds(m), [
      [completed, 'completed'],
      [cancelled, 'cancelled'],
      [byTime, 'completed'],
    ]);
    const endedAt = endedOf(m.engine).map((h) => h.endedAt);
    assert.deepEqual(
      endedAt,
      [...endedAt].sort((x, y) => x - y),
    );
  });

  test('cancelling a shared-host job ends every tenant’s event', () => {
    const m = makeEngine([
      { name: 'a0', tenant: 'a', host: 'h' },
      { name: 'b0', tenant: 'b', host: 'h' },
    ]);
    const op = m.engine.createOperation({ type: 'freeze', host: 'h' });
    m.engine.cancel(op.events[1]!);
    assert.deepEqual(
      endedOf(m.engine).map((h) => [h.tenant, h.cancelled]),
      [
        ['a', true],
        ['b', true],
      ],
    );
    assert.deepEqual(new Set(endedOf(m.engine).map((h) => h.event.jobId)).size, 1, 'one job');
  });

  test('a late approval of an ended event does not change its history', () => {
    const m = makeEngine();
    const id = only(m, { type: 'freeze', vms: ['web0'] });
    m.engine.cancel(id);
    const before = endedOf(m.engine);
    m.advance(MINUTE);
    m.engine.approve('web1', [id]);
    assert.deepEqual(endedOf(m.engine), before);
    assert.deepEqual(before[0]!.event.approvals, []);
  });

  test('returns copies: changing them changes nothing in the engine', () => {
    const m = makeEngine();
    const id = only(m, { type: 'freeze', vms: ['web0'] });
    m.engine.cancel(id);
    const [h] = endedOf(m.engine);
    h!.resources.push('x');
    h!.event.resources.push('y');
    h!.event.approvals.push({ vm: 'z', at: 0 });
    h!.event.status = 'Started';
    const [again] = endedOf(m.engine);
    assert.deepEqual(again!.resources, ['web0']);
    assert.deepEqual(again!.event.resources, ['web0']);
    assert.deepEqual(again!.event.approvals, []);
    assert.equal(again!.event.status, 'Scheduled');
  });

  test('a Terminate that deletes the last VM of a tenant ends its other events after it', () => {
    const m = makeEngine();
    // ss1 has no terminate notification: deleted at once; ss0 gets a Terminate with 10 min notice.
    const del = m.engine.createOperation({ type: 'delete', tenant: 'ss' });
    assert.deepEqual(del.removedVms, ['ss1']);
    const terminate = del.events[0]!;
    const freeze = only(m, { type: 'freeze', vms: ['ss0'], notBefore: T0 + 60 * MINUTE });
    m.advance(10 * MINUTE);
    assert.equal(m.engine.event(terminate).status, 'Started');
    m.engine.complete(terminate);
    assert.deepEqual(historyIds(m), [
      [terminate, 'completed'],
      [freeze, 'cancelled'],
    ]);
    assert.equal(endedOf(m.engine)[0]!.event.type, 'Terminate');
  });

  test('reset clears it', () => {
    const m = makeEngine();
    m.engine.cancel(only(m, { type: 'freeze', vms: ['web0'] }));
    assert.equal(endedOf(m.engine).length, 1);
    m.engine.reset();
    assert.deepEqual(endedOf(m.engine), []);
  });
});

describe('deletedVms', () => {
  test('a delete without terminate notification removes the VM at once and remembers where it was', () => {
    const m = makeEngine();
    const vm = m.engine.fleet.get('ss1');
    m.advance(MINUTE);
    const op = m.engine.createOperation({ type: 'delete', vms: ['ss1'] });
    assert.deepEqual(op.events, []);
    assert.deepEqual(op.removedVms, ['ss1']);
    assert.equal(m.engine.fleet.vms.has('ss1'), false);
    assert.deepEqual(m.engine.deletedVms(), [
      {
        name: 'ss1',
        tenant: 'ss',
        host: vm.host,
        faultDomain: vm.faultDomain,
        updateDomain: vm.updateDomain,
        deletedAt: T0 + MINUTE,
        operation: op.id,
      },
    ]);
  });

  test("a delete with terminate notification removes the VM when its Terminate's impact is over", () => {
    const m = makeEngine();
    const vm = m.engine.fleet.get('ss0');
    const op = m.engine.createOperation({ type: 'delete', vms: ['ss0'] });
    const id = op.events[0]!;
    assert.deepEqual(m.engine.deletedVms(), [], 'Scheduled: not deleted yet');
    m.advance(10 * MINUTE);
    assert.equal(m.engine.event(id).status, 'Started');
    assert.equal(m.engine.vmStates().get('ss0'), 'deleting');
    assert.deepEqual(m.engine.deletedVms(), [], 'Started: deleting, not deleted');
    // [choice] The VM is gone once the impact (60 s when unknown) is over; the event stays listed for the rest of its tenant.
    const impactEnd = m.engine.event(id).startedAt! + MINUTE;
    m.advance(impactEnd - 1 - m.clock.now());
    assert.equal(m.engine.fleet.vms.has('ss0'), true);
    m.advance(1);
    assert.equal(m.engine.fleet.vms.has('ss0'), false);
    assert.equal(m.engine.event(id).status, 'Started');
    assert.deepEqual(m.engine.deletedVms(), [
      {
        name: 'ss0',
        tenant: 'ss',
        host: vm.host,
        faultDomain: vm.faultDomain,
        updateDomain: vm.updateDomain,
        deletedAt: impactEnd,
        operation: op.id,
      },
    ]);
  });

  test('a Terminate completed early deletes at that time', () => {
    const m = makeEngine();
    const op = m.engine.createOperation({ type: 'delete', vms: ['ss0'] });
    m.engine.approve('ss0', op.events);
    m.advance(3 * SECOND);
    m.engine.complete(op.events[0]!);
    assert.deepEqual(
      m.engine.deletedVms().map((d) => [d.name, d.deletedAt, d.operation]),
      [['ss0', T0 + 3 * SECOND, op.id]],
    );
  });

  test('applies a Terminate that fell due without a tick from outside', () => {
    const m = makeEngine();
    m.engine.createOperation({ type: 'delete', vms: ['ss0'] });
    m.clock.advance(60 * MINUTE);
    assert.deepEqual(
      m.engine.deletedVms().map((d) => d.name),
      ['ss0'],
    );
  });

  test('a cancelled Terminate deletes nothing', () => {
    const m = makeEngine();
    const op = m.engine.createOperation({ type: 'delete', vms: ['ss0'] });
    m.engine.cancel(op.events[0]!);
    m.advance(60 * MINUTE);
    assert.deepEqual(m.engine.deletedVms(), []);
    assert.equal(m.engine.fleet.vms.has('ss0'), true);
  });

  test('a VM taken out with removeVm (the control API) is not listed', () => {
    const m = makeEngine();
    m.engine.removeVm('solo');
    m.engine.removeVm('ss1');
    assert.deepEqual(m.engine.deletedVms(), []);
  });

  test('adding a VM of the same name drops its entry, and only its', () => {
    const m = makeEngine();
    m.engine.createOperation({ type: 'delete', vms: ['ss1'] });
    m.engine.createOperation({ type: 'delete', vms: ['web0'] });
    assert.deepEqual(
      m.engine.deletedVms().map((d) => d.name),
      ['ss1', 'web0'],
    );
    m.engine.addVm({ name: 'ss1', tenant: 'ss', tenantKind: 'scaleSet' });
    assert.deepEqual(
      m.engine.deletedVms().map((d) => d.name),
      ['web0'],
    );
    // Removing it again through the control API does not bring the entry back.
    m.engine.removeVm('ss1');
    assert.deepEqual(
      m.engine.deletedVms().map((d) => d.name),
      ['web0'],
    );
  });

  test('deleting again after a re-add records the new deletion', () => {
    const m = makeEngine();
    m.engine.createOperation({ type: 'delete', vms: ['solo'] });
    m.engine.addVm({ name: 'solo' });
    m.advance(MINUTE);
    const second = m.engine.createOperation({ type: 'delete', vms: ['solo'] });
    assert.deepEqual(
      m.engine.deletedVms().map((d) => [d.name, d.deletedAt, d.operation]),
      [['solo', T0 + MINUTE, second.id]],
    );
  });

  test('reset clears them; the reset fleet has the VMs back', () => {
    const m = makeEngine();
    m.engine.createOperation({ type: 'delete', vms: ['ss1'] });
    m.engine.reset();
    assert.deepEqual(m.engine.deletedVms(), []);
    assert.equal(m.engine.fleet.vms.has('ss1'), true);
  });

  test('returns copies', () => {
    const m = makeEngine();
    m.engine.createOperation({ type: 'delete', vms: ['ss1'] });
    m.engine.deletedVms()[0]!.name = 'changed';
    assert.equal(m.engine.deletedVms()[0]!.name, 'ss1');
  });
});

/** An engine with two ended events (one completed, one cancelled), two deleted VMs and a live Terminate. */
function eventful(): Made & { terminate: string } {
  const m = makeEngine();
  const completed = only(m, { type: 'freeze', vms: ['web0'] });
  m.engine.approve('web0', [completed]);
  m.advance(2 * SECOND);
  m.engine.complete(completed);
  m.advance(MINUTE);
  m.engine.cancel(only(m, { type: 'restart', vms: ['solo'] }));
  m.engine.createOperation({ type: 'delete', vms: ['ss1'] });
  m.engine.createOperation({ type: 'delete', vms: ['gpu0'] });
  const terminate = only(m, { type: 'delete', vms: ['ss0'] });
  return { ...m, terminate };
}

describe('snapshots and state files', () => {
  test('a snapshot keeps history and deleted VMs through restore', () => {
    const a = eventful();
    const snap = JSON.parse(JSON.stringify(a.engine.snapshot())) as EngineSnapshot;
    assert.equal(snap.ended.length, 2);
    assert.equal(snap.deleted?.length, 2);
    const b = makeEngine([]);
    b.clock.advanceTo(a.clock.now());
    b.engine.restore(snap);
    assert.deepEqual(endedOf(b.engine), endedOf(a.engine));
    assert.deepEqual(b.engine.deletedVms(), a.engine.deletedVms());
    // And the live Terminate still deletes its VM when it runs its course after the restore.
    b.advance(60 * MINUTE);
    assert.deepEqual(
      b.engine.deletedVms().map((d) => d.name),
      ['ss1', 'gpu0', 'ss0'],
    );
    assert.deepEqual(
      endedOf(b.engine).map((h) => h.id),
      [...endedOf(a.engine).map((h) => h.id), a.terminate],
    );
  });

  test('a snapshot is taken as things stand, without applying what fell due halfway', () => {
    const a = eventful();
    a.clock.advance(60 * MINUTE);
    const snap = a.engine.snapshot();
    // Nothing ticked: ss0 is still in the fleet, its Terminate still live, and not yet among the deleted.
    assert.ok(snap.vms.some((vm) => vm.name === 'ss0'));
    assert.ok(snap.events.some((e) => e.id === a.terminate));
    assert.deepEqual(
      snap.deleted?.map((d) => d.name),
      ['ss1', 'gpu0'],
    );
    // Restoring applies it.
    const b = makeEngine([]);
    b.clock.advanceTo(a.clock.now());
    b.engine.restore(JSON.parse(JSON.stringify(snap)));
    assert.deepEqual(
      b.engine.deletedVms().map((d) => d.name),
      ['ss1', 'gpu0', 'ss0'],
    );
  });

  test('restore drops a deleted entry whose name is in the restored fleet', () => {
    const a = eventful();
    const snap = JSON.parse(JSON.stringify(a.engine.snapshot())) as EngineSnapshot;
    snap.deleted!.push({ name: 'web1', tenant: 'web', host: 'h2', faultDomain: 1, updateDomain: 1, deletedAt: T0, operation: 'x' });
    const b = makeEngine([]);
    b.engine.restore(snap);
    assert.deepEqual(
      b.engine.deletedVms().map((d) => d.name),
      ['ss1', 'gpu0'],
    );
  });

  test('an older snapshot without ended events or deleted VMs restores with a history of what it knows', () => {
    const a = eventful();
    const snap = JSON.parse(JSON.stringify(a.engine.snapshot())) as EngineSnapshot;
    const [first, second] = snap.ended;
    // An older file knew nothing of the first event but its id; the second is known in full.
    snap.ended = [{ ...first!, event: null }, second!];
    delete snap.deleted;
    const b = makeEngine([]);
    b.engine.restore(snap);
    assert.deepEqual(
      endedOf(b.engine).map((h) => h.id),
      [second!.id],
    );
    assert.deepEqual(b.engine.deletedVms(), []);
    // The ended event without history still answers a late approval as ended, not unknown.
    assert.throws(() => b.engine.event(first!.id), /has already ended/);
    b.engine.approve('web1', [first!.id]);
  });

  test('a state file keeps history and deleted VMs', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'forewarn-history-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'state.json');
    const a = eventful();
    writeStateFileSync(path, a.engine.snapshot());
    const loaded = loadStateFile(path)!;
    assert.deepEqual(loaded, JSON.parse(JSON.stringify(a.engine.snapshot())));
    assert.equal(loaded.ended.filter((e) => e.event !== null).length, 2);
    const b = makeEngine([]);
    b.clock.advanceTo(a.clock.now());
    b.engine.restore(loaded);
    assert.deepEqual(endedOf(b.engine), endedOf(a.engine));
    assert.deepEqual(b.engine.deletedVms(), a.engine.deletedVms());
  });

  test('an older state file, whose ended entries have no event and which has no deleted list, still loads', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'forewarn-history-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'state.json');
    const a = eventful();
    writeStateFileSync(path, a.engine.snapshot());
    const old = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown> & { ended: Record<string, unknown>[] };
    for (const e of old.ended) delete e.event;
    delete old.deleted;
    writeFileSync(path, JSON.stringify(old));

    const loaded = loadStateFile(path)!;
    assert.equal(loaded.ended.length, 2);
    for (const e of loaded.ended) assert.equal(e.event, null);
    assert.equal(loaded.deleted, undefined);
    const b = makeEngine([]);
    b.clock.advanceTo(a.clock.now());
    b.engine.restore(loaded);
    assert.deepEqual(endedOf(b.engine), [], 'nothing is known of how those events were');
    assert.deepEqual(b.engine.deletedVms(), []);
    assert.deepEqual(b.engine.events(), a.engine.events(), 'the rest of the state is all there');
  });

  test('a state file with a malformed deleted entry or ended event is refused', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'forewarn-history-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'state.json');
    const a = eventful();
    const good = JSON.parse(JSON.stringify(a.engine.snapshot())) as EngineSnapshot;
    writeFileSync(path, JSON.stringify({ ...good, deleted: [{ ...good.deleted![0]!, deletedAt: 'yesterday' }] }));
    assert.throws(() => loadStateFile(path), /deleted\[0\]\.deletedAt/);
    writeFileSync(path, JSON.stringify({ ...good, ended: [{ ...good.ended[0]!, event: { id: 'x' } }] }));
    assert.throws(() => loadStateFile(path), /ended\[0\]\.event/);
  });
});
