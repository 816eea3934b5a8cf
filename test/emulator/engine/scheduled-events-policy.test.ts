// Automatic approval of user-initiated events. SPEC §4 (Event Grid and ARM): fleet files accept
// "userInitiatedReboot.automaticallyApprove, userInitiatedRedeploy.automaticallyApprove", which
// "let user-initiated events proceed without waiting".
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { mergePolicies } from '../../../src/emulator/engine/scheduled-events-policy.js';
import { MINUTE, makeEngine } from './fixtures.js';

const approveReboot = { userInitiatedReboot: { automaticallyApprove: true } };
const approveRedeploy = { userInitiatedRedeploy: { automaticallyApprove: true } };
const fleet: VmSpec[] = [
  { name: 'a0', tenant: 'a', faultDomain: 0, scheduledEventsPolicy: { ...approveReboot, ...approveRedeploy } },
  { name: 'a1', tenant: 'a', faultDomain: 1, scheduledEventsPolicy: approveReboot },
  { name: 'b0', tenant: 'b', scheduledEventsPolicy: approveRedeploy },
  { name: 'c0' },
];

describe('scheduledEventsPolicy: automatic approval', () => {
  test('a restart of a VM whose policy approves reboots starts at once, by policy; one without waits', () => {
    const { engine } = makeEngine(fleet);
    const approved = engine.createOperation({ type: 'restart', vms: ['a0'] });
    const waits = engine.createOperation({ type: 'restart', vms: ['c0'] });
    const [on] = engine.events().filter((e) => e.operationId === approved.id);
    const [off] = engine.events().filter((e) => e.operationId === waits.id);
    assert.equal(on!.status, 'Started');
    assert.equal(on!.startedBy, 'policy');
    assert.equal(off!.status, 'Scheduled');
    assert.equal(engine.documentFor('a0').events[0]!.status, 'Started');
  });

  test('each kind has its own setting: a redeploy is not approved by the reboot setting', () => {
    const { engine } = makeEngine(fleet);
    engine.createOperation({ type: 'redeploy', vms: ['a1'] });
    engine.createOperation({ type: 'redeploy', vms: ['b0'] });
    const byVm = new Map(engine.events().map((e) => [e.resources[0], e]));
    assert.equal(byVm.get('a1')!.status, 'Scheduled');
    assert.equal(byVm.get('b0')!.status, 'Started');
    assert.equal(byVm.get('b0')!.startedBy, 'policy');
  });

  test('an event naming several VMs starts at once only if every one of them approves', () => {
    const { engine } = makeEngine(fleet);
    engine.createOperation({ type: 'redeploy', vms: ['a0', 'a1'] });
    const [event] = engine.events();
    assert.deepEqual(event!.resources, ['a0', 'a1']);
    assert.equal(event!.status, 'Scheduled', 'a1 has no automatic approval of redeploys');
  });

  test('platform maintenance is never approved by the policy', () => {
    const { engine, advance } = makeEngine(fleet);
    engine.createOperation({ type: 'platform-reboot', vms: ['a0'] });
    assert.equal(engine.events()[0]!.status, 'Scheduled');
    advance(20 * MINUTE);
    assert.equal(engine.events()[0]!.startedBy, 'notBefore');
  });

  test('the policy and the events it started survive a snapshot and restore', () => {
    const { engine } = makeEngine(fleet);
    engine.createOperation({ type: 'restart', vms: ['a0'] });
    const saved = engine.snapshot();
    const { engine: restored } = makeEngine(fleet);
    restored.restore(saved);
    assert.equal(restored.events()[0]!.startedBy, 'policy');
    assert.deepEqual(restored.fleet.get('b0').instance.scheduledEventsPolicy, approveRedeploy);
  });

  test("merging: a VM's settings win one by one; either side alone is kept", () => {
    assert.deepEqual(mergePolicies(approveReboot, undefined), approveReboot);
    assert.deepEqual(mergePolicies(undefined, approveRedeploy), approveRedeploy);
    assert.deepEqual(mergePolicies({ ...approveReboot, ...approveRedeploy }, { userInitiatedReboot: { automaticallyApprove: false } }), {
      userInitiatedReboot: { automaticallyApprove: false },
      ...approveRedeploy,
    });
  });
});
