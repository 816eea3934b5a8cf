// `forewarn scenario from-recording`: a recording turned into a scenario whose expectations are
// what the recorded VM saw, so a real incident becomes a regression test of the emulator's story
// and of the code under test. Each recorded event becomes an operation of the nearest kind, created
// when it was first seen with its recorded NotBefore, duration and description; an approval the
// recording shows is an approve step; an event's end is a complete (or, never Started, a cancel)
// step at the time it left the document; every recorded document is an expect step.
import type { RawEvent, Recording } from '../../protocol/recording.js';
import type { ScenarioDocument } from './format.js';
import { recordedApprovals } from '../replay/timeline.js';
import { printable } from '../../shared/printable.js';
import type { OperationType } from '../engine/operations.js';

type Step = ScenarioDocument['steps'][number];

/** [choice] The emulator's operation nearest to a recorded event: type first, then who asked (EventSource). */
export function operationFor(event: RawEvent): OperationType {
  const user = event.EventSource === 'User';
  switch (event.EventType) {
    case 'Freeze':
      return 'freeze';
    case 'Reboot':
      return user ? 'restart' : 'platform-reboot';
    case 'Redeploy':
      return user ? 'redeploy' : 'platform-redeploy';
    case 'Preempt':
      return 'spot-eviction';
    case 'Terminate':
      return 'delete';
    default:
      // Both come from the recording, and this message reaches a terminal.
      throw new Error(
        `event ${printable(event.EventId, 100)} has type ${printable(String(event.EventType), 100)}, which no operation makes`,
      );
  }
}

const seconds = (ms: number) => Math.round(ms) / 1000;

export function scenarioFromRecording(recording: Recording, name: string): ScenarioDocument {
  const { header, changes } = recording;
  const start = Date.parse(header.startedAt);
  const vm = header.vm?.name ?? 'vm0';
  const names = new Set<string>([vm]);
  const spot = new Set<string>();
  const refs = new Map<string, string>();
  const steps: Step[] = [];
  const live = new Map<string, RawEvent>();
  const approved = recordedApprovals(recording);

  changes.forEach((change, i) => {
    const at = seconds(change.at);
    const now = new Map(change.document.Events.map((e) => [e.EventId.toUpperCase(), e]));
    for (const [key, event] of now) {
      const previous = live.get(key);
      if (previous === undefined) {
        const ref = `e${refs.size + 1}`;
        refs.set(key, ref);
        const resources = Array.isArray(event.Resources) ? event.Resources.filter((r): r is string => typeof r === 'string') : [vm];
        for (const r of resources) names.add(r);
        const type = operationFor(event);
        if (type === 'spot-eviction') for (const r of resources) spot.add(r);
        const notBefore = typeof event.NotBefore === 'string' && event.NotBefore !== '' ? Date.parse(event.NotBefore) : Number.NaN;
        steps.push({
          at,
          as: ref,
          operation: {
            type,
            vms: resources,
            // Recorded notices can be shorter than the emulator's minimum: they happened.
            force: true,
            ...(Number.isNaN(notBefore) ? {} : { notBefore: String(Math.max(at, seconds(notBefore - start))) }),
            ...(typeof event.DurationInSeconds === 'number' ? { durationInSeconds: event.DurationInSeconds } : {}),
            ...(typeof event.Description === 'string' ? { description: event.Description } : {}),
          },
        });
      }
      const wasScheduled = previous === undefined || previous.EventStatus === 'Scheduled';
      if (event.EventStatus === 'Started' && wasScheduled && approved(key, i)) {
        steps.push({ at, approve: { vm, events: [refs.get(key)!] } });
      }
    }
    for (const [key, event] of live) {
      if (now.has(key)) continue;
      const ref = refs.get(key)!;
      steps.push(event.EventStatus === 'Started' ? { at, complete: ref } : { at, cancel: ref });
    }
    steps.push({
      at,
      expect: {
        vm,
        ...(i === 0 ? {} : { incarnation: 'changed' as const }),
        events: change.document.Events.map((e) => ({
          ref: refs.get(e.EventId.toUpperCase())!,
          ...(typeof e.EventType === 'string' ? { type: e.EventType as never } : {}),
          ...(typeof e.EventStatus === 'string' ? { status: e.EventStatus as never } : {}),
        })),
      },
    });
    live.clear();
    for (const [key, event] of now) live.set(key, event);
  });

  return {
    name,
    description: `From the recording of ${vm} started ${header.startedAt}: ${changes.length} documents.`,
    fleet: {
      tenants: [{ name: 'recorded', kind: 'availabilitySet' }],
      vms: [...names].map((n) => ({ name: n, tenant: 'recorded', ...(spot.has(n) ? { priority: 'Spot' } : {}) })),
    },
    steps,
  };
}
