import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { ScheduledEventsClient, startEmulator } from 'forewarn';

// One emulator per file on free ports; reset() between tests so none sees another's events.
let emu;
beforeAll(async () => (emu = await startEmulator({ clock: 'manual', fleet: { vms: [{ name: 'web-0' }] } })));
afterAll(() => emu.close());
beforeEach(() => emu.reset());

test('an approved Freeze starts', async () => {
  await emu.trigger({ type: 'freeze', vms: ['web-0'] });
  const vm = new ScheduledEventsClient({ endpoint: emu.vmUrl('web-0') });
  const [freeze] = (await vm.getDocument()).events;
  expect(freeze?.type).toBe('Freeze');
  await vm.approve(freeze.id);
  await emu.advanceClock(1);
  expect((await vm.getDocument()).events[0]?.status).toBe('Started');
});

test('an unapproved Freeze waits for its NotBefore', async () => {
  await emu.trigger({ type: 'freeze', vms: ['web-0'] });
  const vm = new ScheduledEventsClient({ endpoint: emu.vmUrl('web-0') });
  // Only this test's event: reset() removed the Freeze the test above left Started.
  expect((await vm.getDocument()).events.map((e) => e.status)).toEqual(['Scheduled']);
  await emu.advanceClock(14 * 60);
  expect((await vm.getDocument()).events[0]?.status).toBe('Scheduled');
  await emu.advanceClock(61); // a Freeze gets 15 minutes of notice; NotBefore is in whole seconds
  expect((await vm.getDocument()).events[0]?.status).toBe('Started');
});
