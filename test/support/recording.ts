// The seeds' Freeze example played on an emulator, synthetic recordings, and `forewarn` run to its end, for the recording and replay tests.
import type { Emulator } from '../../src/emulator/emulator.js';
import type { Recording } from '../../src/protocol/recording.js';
import type { ManualClock } from '../../src/shared/clock.js';
import { CliProcess } from './cli.js';
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

/** A recording's start, for the synthetic recordings below. */
export const RECORDED_START = Date.parse('2026-01-05T10:00:00.000Z');

export interface SampleOptions {
  eventId?: string;
  vmName?: string;
}

/**
 * A small recording in the shape `forewarn record` writes: empty, a Freeze Scheduled with 15 minutes'
 * notice, Started 5 s later (so the recording shows an approval), and gone.
 */
export function sampleRecording(options: SampleOptions = {}): Recording {
  const id = options.eventId ?? 'A7061BAC-AFDC-4513-B24B-AA5F13A16123';
  const vm = options.vmName ?? 'web-0';
  const event = (status: string, notBefore: string) => ({
    EventId: id,
    EventStatus: status,
    EventType: 'Freeze',
    ResourceType: 'VirtualMachine',
    Resources: [vm],
    NotBefore: notBefore,
    Description: 'paused for a live migration',
    EventSource: 'Platform',
    DurationInSeconds: 5,
  });
  return {
    header: {
      format: 'forewarn-recording',
      version: 1,
      apiVersion: '2020-07-01',
      startedAt: new Date(RECORDED_START).toISOString(),
      source: 'poll',
      endpoint: null,
      vm: { name: vm, vmId: null, resourceId: null, location: null },
      anonymised: false,
    },
    changes: [
      { at: 0, document: { DocumentIncarnation: 1, Events: [] } },
      { at: 1000, document: { DocumentIncarnation: 2, Events: [event('Scheduled', new Date(RECORDED_START + 901_000).toUTCString())] } },
      { at: 6000, document: { DocumentIncarnation: 3, Events: [event('Started', '')] } },
      { at: 12_000, document: { DocumentIncarnation: 4, Events: [] } },
    ],
  };
}

/**
 * `changes` documents in the shape that cost the most to check for recorded approvals: each shows a new
 * event already Started, which no earlier document showed.
 */
export function startedEverywhere(changes: number): Recording {
  const recording = sampleRecording();
  recording.changes = Array.from({ length: changes }, (_, i) => ({
    at: i * 1000,
    document: {
      DocumentIncarnation: i + 1,
      Events: [
        {
          EventId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
          EventStatus: 'Started',
          EventType: 'Freeze',
          ResourceType: 'VirtualMachine',
          Resources: ['web-0'],
          NotBefore: '',
          EventSource: 'Platform',
          DurationInSeconds: 5,
        },
      ],
    },
  }));
  return recording;
}

/** How a `forewarn` process ended, or `running` if it had not within the time (it is then killed). */
export async function exitWithin(
  args: readonly string[],
  timeoutMs = 15_000,
): Promise<{ code: number | null | 'running'; stdout: string; stderr: string }> {
  const proc = new CliProcess(args);
  const timer = new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), timeoutMs).unref());
  const code = await Promise.race([proc.exited, timer]);
  if (code === 'running') {
    proc.child.kill('SIGKILL');
    await proc.exited;
  }
  return { code, stdout: proc.stdout, stderr: proc.stderr };
}
