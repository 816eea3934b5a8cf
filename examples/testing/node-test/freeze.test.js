import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScheduledEventsClient, startEmulator } from 'forewarn';

test('an approved Freeze starts', async (t) => {
  const emu = await startEmulator({ clock: 'manual', fleet: { vms: [{ name: 'web-0' }] } });
  t.after(() => emu.close());
  await emu.trigger({ type: 'freeze', vms: ['web-0'] });
  const vm = new ScheduledEventsClient({ endpoint: emu.vmUrl('web-0') });
  const [freeze] = (await vm.getDocument()).events;
  assert.equal(freeze?.type, 'Freeze');
  await vm.approve(freeze.id);
  await emu.advanceClock(1);
  assert.equal((await vm.getDocument()).events[0]?.status, 'Started');
});
