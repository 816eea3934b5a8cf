// The seeds' "What happens to the VM", seen from outside: our ControlClient drives a manual clock,
// our ScheduledEventsClient reads each VM's document over IMDS.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ScheduledEventsClient } from '../../../src/client/index.js';
import { ControlApiError } from '../../../src/control/index.js';
import { startEmulator } from '../../../src/emulator/index.js';

async function refusal(promise: Promise<unknown>): Promise<ControlApiError> {
  const err = await promise.then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ControlApiError, String(err));
  return err;
}

test('a Spot VM evicted with Deallocate is stopped until started, and a second eviction gets 409', async () => {
  // SPEC §2 [seed]: "Deallocate leaves it stopped (not running, no further events) until it is started
  // again. A second eviction of a VM already being evicted gets 409."
  await using emu = await startEmulator({
    clock: 'manual',
    fleet: {
      vms: [
        { name: 'spot-0', tenant: 'pool', tenantKind: 'scaleSet', priority: 'Spot' },
        { name: 'spot-1', tenant: 'pool', tenantKind: 'scaleSet', priority: 'Spot' },
      ],
    },
  });
  const imds = new ScheduledEventsClient({ endpoint: emu.vmUrl('spot-0') });
  const { events } = await emu.trigger({ type: 'spot-eviction', vms: ['spot-0'] });
  const second = await refusal(emu.trigger({ type: 'spot-eviction', vms: ['spot-0'] }));
  assert.equal(second.status, 409);
  assert.match(second.error, /already has a Preempt event under way/);

  assert.deepEqual(
    (await imds.getDocument()).events.map((e) => [e.id, e.type, e.status]),
    [[events[0], 'Preempt', 'Scheduled']],
  );
  // NotBefore is 30 s ahead, rounded up to a whole second; the impact then lasts 60 s.
  await emu.advanceClock(30 + 1 + 60);
  assert.equal((await emu.vm('spot-0')).state, 'deallocated');
  assert.deepEqual((await imds.getDocument()).events, [], 'a stopped VM sees no events');

  const restart = await refusal(emu.trigger({ type: 'restart', vms: ['spot-0'] }));
  assert.equal(restart.status, 409);
  assert.match(restart.error, /deallocated/);

  const started = await emu.startVm('spot-0');
  assert.equal(started.state, 'running');
  // Started again, it sees its tenant's event, which is still listed as Started.
  assert.deepEqual(
    (await imds.getDocument()).events.map((e) => e.status),
    ['Started'],
  );
  assert.equal((await refusal(emu.startVm('spot-0'))).status, 409);
});

test("a redeployed VM has left its host: the host's later failure does not reach it", async () => {
  // "Redeploy: un déplacement vers un autre nœud est planifié pour la machine virtuelle" (000_…)
  await using emu = await startEmulator({
    clock: 'manual',
    fleet: {
      vms: [
        { name: 'app-0', host: 'rack1' },
        { name: 'db-0', host: 'rack1' },
      ],
    },
  });
  const { events } = await emu.trigger({ type: 'redeploy', vms: ['app-0'] });
  await emu.approve(events[0]!, 'app-0');
  const moved = await emu.vm('app-0');
  assert.notEqual(moved.host, 'rack1');
  const failure = await emu.trigger({ type: 'hardware-failure', host: 'rack1' });
  const hit = await Promise.all(failure.events.map((id) => emu.event(id)));
  assert.deepEqual(
    hit.flatMap((e) => e.resources),
    ['db-0'],
  );
});
