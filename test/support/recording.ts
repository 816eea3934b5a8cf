// The seeds' Freeze example played on an emulator, for the recording and replay tests.
import type { Emulator } from '../../src/emulator/emulator.js';
import type { ManualClock } from '../../src/shared/clock.js';
import { waitFor } from './wait.js';

export const FREEZE_FLEET = [
  { name: 'WestNO_0', tenant: 'west' },
  { name: 'WestNO_1', tenant: 'west' },
];

/**
 * The seeds' example, as the emulator plays it: "La DocumentIncarnation change à chaque fois qu’il y
 * a de nouvelles informations dans Events", 1 (empty) → 2 (Freeze Scheduled) → 3 (Started, once
 * approved: "Une approbation de l’événement permettrait au gel de se poursuivre") → 4 (empty).
 * `seen` counts the documents the observer has read so far; each step waits for it, so a poller
 * sees every document. Returns the EventId.
 */
export async function playFreeze(emu: Emulator, seen: () => number): Promise<string> {
  const id = emu.engine.createOperation({
    type: 'freeze',
    vms: ['WestNO_0', 'WestNO_1'],
    durationInSeconds: 5,
    description: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
  }).events[0]!;
  await waitFor('the observer to see it Scheduled', () => (seen() >= 2 ? true : undefined), 10_000, 20);
  emu.engine.approve('WestNO_0', [id]);
  await waitFor('the observer to see it Started', () => (seen() >= 3 ? true : undefined), 10_000, 20);
  (emu.clock as ManualClock).advance(11 * 60_000);
  emu.engine.tick();
  return id;
}
