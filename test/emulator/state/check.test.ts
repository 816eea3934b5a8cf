import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EngineSnapshot } from '../../../src/emulator/engine/engine.js';
import { MAX_SAVED_AT_MS, checkSnapshot } from '../../../src/emulator/state/check.js';
import { FLEET, MINUTE, makeEngine } from '../engine/fixtures.js';

/** A snapshot with live, ended and cancelled events, a rolling update, a delete and a removed VM. */
function richSnapshot(): EngineSnapshot {
  const { engine, advance } = makeEngine([
    ...FLEET,
    { name: 'ss2', tenant: 'ss', tenantKind: 'scaleSet', terminateNotificationMinutes: 5 },
    { name: '__proto__', tenant: 'constructor', tenantKind: 'availabilitySet', host: 'toString' },
    { name: 'hasOwnProperty', tenant: 'constructor', tenantKind: 'availabilitySet', host: 'toString' },
  ]);
  engine.createOperation({ type: 'freeze', vms: ['web0'] });
  engine.createOperation({ type: 'host-update', tenant: 'web' });
  const cancelled = engine.createOperation({ type: 'restart', vms: ['solo'] });
  engine.cancel(cancelled.events[0]!);
  engine.createOperation({ type: 'delete', vms: ['ss2'] });
  advance(20 * MINUTE);
  engine.removeVm('gpu1');
  engine.createOperation({ type: 'redeploy', tenant: 'constructor' });
  engine.approve('__proto__', [engine.events().find((e) => e.tenant === 'constructor')!.id]);
  engine.createOperation({ type: 'freeze', vms: ['ss0'] });
  return JSON.parse(JSON.stringify(engine.snapshot())) as EngineSnapshot;
}

const paths = (s: EngineSnapshot) => checkSnapshot(s).map((p) => p.path.join('.'));

describe('checkSnapshot', () => {
  it('finds nothing wrong in a state the engine wrote, names like __proto__ included', () => {
    const s = richSnapshot();
    assert.ok(s.ended.length > 0 && s.events.length > 0 && (s.deleted ?? []).length > 0, 'the fixture covers every part');
    assert.ok(Object.hasOwn(s.incarnations, '__proto__'));
    assert.deepEqual(checkSnapshot(s), []);
  });

  it('reports a live event whose tenant does not exist', () => {
    const s = richSnapshot();
    s.events[0]!.tenant = 'nobody';
    const found = checkSnapshot(s);
    assert.deepEqual(
      found.map((p) => p.path.join('.')),
      ['events.0.tenant'],
    );
    assert.match(found[0]!.message, /no tenant named 'nobody' in the fleet/);
  });

  it('accepts a live event naming a VM that was removed and added again under another tenant, as the engine allows', () => {
    const { engine } = makeEngine([
      { name: 'a', tenant: 'web' },
      { name: 'b', tenant: 'web' },
    ]);
    engine.createOperation({ type: 'freeze', vms: ['a'] });
    engine.removeVm('a');
    engine.addVm({ name: 'a', tenant: 'other' });
    assert.deepEqual(checkSnapshot(JSON.parse(JSON.stringify(engine.snapshot())) as EngineSnapshot), []);
  });

  it('reports a live event naming a VM the state never had, in its resources or its approvals', () => {
    const s = richSnapshot();
    const named = s.events.findIndex((e) => e.tenant === 'web');
    // Object.prototype's names are no VMs either.
    s.events[named]!.resources.push('ghost', 'valueOf');
    const approved = s.events.findIndex((e) => e.approvals.length > 0);
    assert.ok(named >= 0 && approved >= 0 && named !== approved, 'the fixture has both');
    s.events[approved]!.approvals[0]!.vm = 'phantom';
    const found = checkSnapshot(s);
    const n = s.events[named]!.resources.length;
    const expected = [
      [named, `events.${named}.resources.${n - 2}`],
      [named, `events.${named}.resources.${n - 1}`],
      [approved, `events.${approved}.approvals.0.vm`],
    ]
      .sort((a, b) => Number(a[0]) - Number(b[0]))
      .map(([, path]) => path);
    assert.deepEqual(
      found.map((p) => p.path.join('.')),
      expected,
    );
    assert.match(found.find((p) => p.path.at(-1) === n - 2)!.message, /VM 'ghost' is not in the fleet and never was/);
    assert.match(found.find((p) => p.path.at(-1) === 'vm')!.message, /VM 'phantom' approved it, but is not in the fleet and never was/);
  });

  it('accepts live events naming VMs that have left the fleet, and their approvals, as the engine writes them', () => {
    const { engine, advance } = makeEngine();
    // ss0's Terminate removes it when the impact ends; the event stays Started after that.
    const terminate = engine.createOperation({ type: 'delete', vms: ['ss0'] }).events[0]!;
    advance(11 * MINUTE);
    // gpu1 approves its Freeze (Started), then is taken out through the control API; its tenant keeps gpu0.
    const freeze = engine.createOperation({ type: 'freeze', vms: ['gpu1'] }).events[0]!;
    engine.approve('gpu1', [freeze]);
    engine.removeVm('gpu1');
    const s = JSON.parse(JSON.stringify(engine.snapshot())) as EngineSnapshot;
    const names = new Set(s.vms.map((v) => v.name));
    const live = (id: string) => s.events.find((e) => e.id === id)!;
    assert.equal(live(terminate).status, 'Started');
    assert.ok(!names.has('gpu1') && !names.has('ss0') && live(freeze).approvals[0]!.vm === 'gpu1', 'the fixture covers both');
    assert.deepEqual(checkSnapshot(s), []);
  });

  it('reports a Started event with no endsAt, which would stay Started for ever', () => {
    const s = richSnapshot();
    const started = s.events.findIndex((e) => e.status === 'Started');
    s.events[started]!.endsAt = null;
    const found = checkSnapshot(s);
    assert.deepEqual(
      found.map((p) => p.path.join('.')),
      [`events.${started}.endsAt`],
    );
    assert.match(found[0]!.message, /a Started event has an endsAt/);
  });

  it('reports duplicate ids, unknown operations and operations naming unknown events', () => {
    const s = richSnapshot();
    s.ended[0]!.id = s.events[0]!.id;
    s.events[0]!.operationId = 'no-such-operation';
    const running = s.operations.findIndex((o) => o.status === 'running');
    s.operations[running]!.events.push('NO-SUCH-EVENT');
    s.operations.push(structuredClone(s.operations[1]!));
    const found = paths(s);
    assert.ok(found.includes('ended.0.id'), found.join());
    assert.ok(found.includes('events.0.operationId'), found.join());
    assert.ok(found.includes(`operations.${running}.events.${s.operations[running]!.events.length - 1}`), found.join());
    assert.ok(found.includes(`operations.${s.operations.length - 1}.id`), found.join());
  });

  it('allows history that refers to history already forgotten (--history-limit), but not a live event of a finished operation', () => {
    const s = richSnapshot();
    const finished = s.operations.findIndex((o) => o.status !== 'running' && o.events.length > 0);
    assert.ok(finished >= 0);
    // Its operation forgotten, its ended events kept.
    const [gone] = s.operations.splice(finished, 1);
    assert.ok(s.ended.some((e) => e.event?.operationId === gone!.id));
    // Another finished operation kept, its ended events forgotten.
    const kept = s.operations.find((o) => o.status !== 'running' && o.events.length > 0)!;
    s.ended = s.ended.filter((e) => !kept.events.includes(e.id));
    assert.deepEqual(checkSnapshot(s), []);
    const live = s.events[0]!;
    s.operations.find((o) => o.id === live.operationId)!.status = 'completed';
    assert.match(
      checkSnapshot(s)
        .map((p) => p.message)
        .join(),
      /has finished, yet this event is live/,
    );
  });

  it('reports a host that carries one tenant in two fault domains, and a vmId used twice, as the fleet forbids', () => {
    const s = richSnapshot();
    const web1 = s.vms.find((v) => v.name === 'web1')!;
    web1.host = 'h1';
    const found = checkSnapshot(s);
    const i = s.vms.indexOf(web1);
    assert.ok(
      found.some((p) => p.path.join('.') === `vms.${i}.faultDomain` && /host 'h1' already carries 'web0'/.test(p.message)),
      JSON.stringify(found),
    );
    const s2 = richSnapshot();
    s2.vms[1]!.vmId = s2.vms[0]!.vmId!.toUpperCase();
    assert.deepEqual(paths(s2), ['vms.1.vmId']);
  });

  it('reports times outside the Date range, savedAt after year 9999 and statuses that contradict their times', () => {
    const s = richSnapshot();
    s.savedAt = 1e300;
    s.events[0]!.notBefore = 9e15;
    s.ended[0]!.endedAt = -1e16;
    const started = s.events.find((e) => e.status === 'Started')!;
    started.startedAt = null;
    const scheduled = s.events.find((e) => e.status === 'Scheduled')!;
    scheduled.endsAt = scheduled.notBefore;
    s.activation = { __proto__x: { enabledAt: Number.NaN, enablingAt: null, lastRequestAt: null } };
    const found = paths(s);
    for (const p of [
      'savedAt',
      'events.0.notBefore',
      'ended.0.endedAt',
      `events.${s.events.indexOf(started)}.startedAt`,
      `events.${s.events.indexOf(scheduled)}.endsAt`,
      'activation.__proto__x.enabledAt',
    ]) {
      assert.ok(found.includes(p), `${p} in ${found.join()}`);
    }
    const s2 = richSnapshot();
    s2.savedAt = MAX_SAVED_AT_MS + 1;
    assert.deepEqual(paths(s2), ['savedAt']);
    s2.savedAt = MAX_SAVED_AT_MS;
    assert.deepEqual(paths(s2), []);
  });

  it('allows incarnations and activation for VMs that are gone, but not a deleted VM still in the fleet', () => {
    const s = richSnapshot();
    s.incarnations['long-gone'] = 7;
    assert.deepEqual(checkSnapshot(s), []);
    s.deleted!.push({ ...s.deleted![0]!, name: 'web0' });
    assert.deepEqual(paths(s), [`deleted.${s.deleted!.length - 1}.name`]);
  });

  it('reports every problem, not only the first', () => {
    const s = richSnapshot();
    s.events.forEach((e) => (e.tenant = 'nobody'));
    assert.ok(checkSnapshot(s).filter((p) => p.path.at(-1) === 'tenant').length >= s.events.length);
  });
});
