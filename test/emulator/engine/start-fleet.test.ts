// The start fleet is kept copy-on-write: only VMs that changed or left keep their original. Whatever
// happens to the fleet, a reset returns to the start exactly, and a snapshot saves it exactly.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FLEET, MINUTE, makeEngine } from './fixtures.js';

describe('the start fleet', () => {
  test('a reset undoes a move, an eviction, a start, a removal, a re-added name and a new VM', () => {
    const { engine, advance } = makeEngine();
    const start = engine.snapshot().initialFleet;
    const startVms = engine.snapshot().vms;
    assert.deepEqual(start, startVms);

    engine.createOperation({ type: 'redeploy', vms: ['web1'] });
    engine.createOperation({ type: 'spot-eviction', vms: ['ss0'] });
    advance(30 * MINUTE);
    assert.notEqual(engine.fleet.get('web1').host, 'h2', 'the redeploy moved web1');
    assert.equal(engine.fleet.get('ss0').powerState, 'deallocated');
    engine.startVm('ss0');
    engine.removeVm('solo');
    engine.removeVm('web2');
    engine.addVm({ name: 'web2', tenant: 'web', faultDomain: 0, host: 'h9' });
    engine.addVm({ name: 'late', tenant: 'web', faultDomain: 1, host: 'h8' });
    engine.removeVm('gpu0');
    engine.addVm({ name: 'gpu0' });

    assert.deepEqual(engine.snapshot().initialFleet, start, 'the snapshot saves the start, not the fleet');
    engine.reset();
    assert.deepEqual(engine.snapshot().vms, startVms);
    assert.deepEqual(engine.snapshot().initialFleet, start);
  });

  test('after a reset the start is tracked afresh: later changes are undone by the next reset', () => {
    const { engine, advance } = makeEngine();
    const startVms = engine.snapshot().vms;
    engine.createOperation({ type: 'redeploy', vms: ['web0'] });
    advance(30 * MINUTE);
    engine.reset();
    engine.createOperation({ type: 'redeploy', vms: ['web0'] });
    advance(30 * MINUTE);
    engine.removeVm('web1');
    engine.reset();
    assert.deepEqual(engine.snapshot().vms, startVms);
  });

  test('a borrowed fleet (keepStartFleet) is undone by the next plain reset; a new fleet becomes the start', () => {
    const { engine } = makeEngine();
    const startVms = engine.snapshot().vms;
    const other = [{ name: 'x0' }, { name: 'x1', tenant: 'xs', faultDomain: 1 }];
    engine.reset(other, { keepStartFleet: true });
    assert.deepEqual([...engine.fleet.vms.keys()], ['x0', 'x1']);
    assert.deepEqual(engine.snapshot().initialFleet, startVms);
    engine.removeVm('x0');
    engine.reset();
    assert.deepEqual(engine.snapshot().vms, startVms);

    engine.reset(other);
    const otherVms = engine.snapshot().vms;
    assert.deepEqual(engine.snapshot().initialFleet, otherVms);
    engine.removeVm('x1');
    engine.reset();
    assert.deepEqual(engine.snapshot().vms, otherVms);
  });

  test('a restored engine resets to the saved start, not to the fleet it was saved with', () => {
    const { engine } = makeEngine();
    const startVms = engine.snapshot().vms;
    engine.removeVm('solo');
    engine.addVm({ name: 'late' });
    const saved = engine.snapshot();
    const { engine: restored } = makeEngine(FLEET.slice(0, 2));
    restored.restore(saved);
    assert.deepEqual(
      [...restored.fleet.vms.keys()],
      saved.vms.map((vm) => vm.name),
    );
    restored.reset();
    assert.deepEqual(restored.snapshot().vms, startVms);
  });

  test('a snapshot is a copy: changing it does not change the start', () => {
    const { engine } = makeEngine();
    const snapshot = engine.snapshot();
    snapshot.initialFleet[0]!.host = 'elsewhere';
    engine.removeVm('web0');
    engine.snapshot().initialFleet[0]!.host = 'elsewhere too';
    engine.reset();
    assert.equal(engine.fleet.get('web0').host, 'h1');
  });
});
