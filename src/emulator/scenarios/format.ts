// The scenario file format: a fleet and a timeline of steps. The zod schema checks structure
// (and documents the control API body); load.ts adds the checks that need the whole file.
import { z } from 'zod';
import { EVENT_SOURCES, EVENT_STATUSES, EVENT_TYPES, type EventSource, type EventStatus, type EventType } from '../../protocol/types.js';
import type { VmSpec } from '../engine/fleet.js';
import { OPERATION_TYPES, type OperationType } from '../engine/operations.js';
import { FAULT_STATUSES, type FaultSpec } from '../imds/faults.js';

export const ACTIONS = ['operation', 'approve', 'cancel', 'complete', 'fault', 'expect'] as const;
export type ActionKind = (typeof ACTIONS)[number];

// ---- offsets ------------------------------------------------------------------------

const UNIT_SECONDS = { d: 86_400, h: 3_600, m: 60, s: 1 } as const;
const OFFSET = /^(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$/;

/** Nominal seconds from `0`, `90`, `30s`, `15m`, `2h`, `7d` or `1h30m`; null if it is none of those. */
export function parseOffset(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : null;
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (/^\d+(?:\.\d+)?$/.test(text)) return Number(text);
  const m = OFFSET.exec(text);
  if (!m || text === '') return null;
  const [, d, h, min, s] = m;
  return Number(d ?? 0) * UNIT_SECONDS.d + Number(h ?? 0) * UNIT_SECONDS.h + Number(min ?? 0) * UNIT_SECONDS.m + Number(s ?? 0);
}

/** `15m`, `1h30m`, `7d`, `0.5s`, `0s`: the shortest form parseOffset reads back. */
export function formatOffset(seconds: number): string {
  if (seconds < 0) return `-${formatOffset(-seconds)}`;
  let rest = Math.round(seconds * 1000) / 1000;
  let out = '';
  for (const [unit, size] of Object.entries(UNIT_SECONDS)) {
    if (size === 1) break;
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest = Math.round((rest - n * size) * 1000) / 1000;
  }
  if (rest > 0 || out === '') out += `${rest}s`;
  return out;
}

export const OFFSET_HELP = 'seconds, or a duration such as 30s, 15m, 2h, 7d or 1h30m';

// ---- the document as written --------------------------------------------------------

const Offset = z
  .union([z.number(), z.string()])
  .meta({ description: `Nominal time from the start: ${OFFSET_HELP}`, examples: [0, '30s', '15m', '7d'] });
const Ref = z.string().meta({ description: 'An event: NAME (its first event), NAME.TENANT (host jobs) or NAME#K (K-th, 0-based)' });
const Name = z.string();

const OperationStep = z.strictObject({
  type: z.enum(OPERATION_TYPES),
  vms: z.array(Name).optional(),
  host: Name.optional(),
  tenant: Name.optional(),
  notBefore: z
    .string()
    .optional()
    .meta({ description: '"+OFFSET" after this step, or "OFFSET" from the start; absent: the minimum notice' }),
  durationInSeconds: z.int().min(-1).optional(),
  description: z.string().optional(),
  force: z.boolean().optional(),
});

const ApproveStep = z.strictObject({
  vm: Name.meta({ description: 'The VM that POSTs the approval' }),
  events: z.array(Ref).min(1),
  expectStatus: z.literal([200, 400, 404]).optional().meta({ description: 'What IMDS should answer; 200 when absent' }),
});

const EventStep = z.union([Ref, z.strictObject({ event: Ref, expectStatus: z.literal([200, 404, 409]).optional() })], {
  error: 'expected an event reference, or {event: REF, expectStatus?: 200|404|409}',
});

const FaultStep = z.strictObject({
  vm: Name.optional(),
  status: z.literal(FAULT_STATUSES).optional(),
  latencyMs: z.int().min(0).optional(),
  drop: z.boolean().optional(),
  count: z.int().min(1).optional(),
});

const ExpectedEventSchema = z.strictObject({
  ref: Ref.optional(),
  type: z.enum(EVENT_TYPES).optional(),
  status: z.enum(EVENT_STATUSES).optional(),
  resources: z.array(Name).optional(),
  source: z.enum(EVENT_SOURCES).optional(),
  durationInSeconds: z.int().optional(),
  notBefore: z.string().optional().meta({ description: '"" (Started), "+OFFSET" after the event was created, or "OFFSET" from the start' }),
  description: z.string().optional(),
});

const ExpectStep = z.strictObject({
  vm: Name,
  events: z.array(ExpectedEventSchema).optional().meta({ description: 'Exactly the events of its document, in order' }),
  gone: z.boolean().optional().meta({ description: 'true: the VM has been deleted' }),
  incarnation: z.enum(['changed', 'unchanged']).optional().meta({ description: 'Against the previous expect for this VM' }),
});

const StepSchema = z.strictObject({
  at: Offset,
  as: Name.optional().meta({ description: "Names an operation's events for later steps" }),
  operation: OperationStep.optional(),
  approve: ApproveStep.optional(),
  cancel: EventStep.optional(),
  complete: EventStep.optional(),
  fault: FaultStep.optional(),
  expect: ExpectStep.optional(),
});

export const ScenarioDocumentSchema = z.strictObject({
  name: z.string().min(1),
  description: z.string().optional(),
  fleet: z
    .record(z.string(), z.unknown())
    .meta({ description: 'A fleet file inline: vms, and optional tenants, scaleSets, generate, hosts' }),
  steps: z.array(StepSchema).min(1).meta({ description: 'Each step has at and exactly one action' }),
});
export type ScenarioDocument = z.infer<typeof ScenarioDocumentSchema>;

// ---- the checked scenario -------------------------------------------------------------

export interface EventRef {
  /** As written. */
  text: string;
  name: string;
  tenant?: string | undefined;
  index?: number | undefined;
}

/** `"+X"` is relative (to the step, or to the event's creation); `"X"` is from the start. */
export interface TimeSpec {
  relative: boolean;
  seconds: number;
}

export interface ExpectedEvent {
  ref?: EventRef | undefined;
  type?: EventType | undefined;
  status?: EventStatus | undefined;
  resources?: string[] | undefined;
  source?: EventSource | undefined;
  durationInSeconds?: number | undefined;
  /** 'started' is `""`. */
  notBefore?: TimeSpec | 'started' | undefined;
  description?: string | undefined;
}

export type Action =
  | {
      kind: 'operation';
      as?: string | undefined;
      type: OperationType;
      vms?: string[] | undefined;
      host?: string | undefined;
      tenant?: string | undefined;
      notBefore?: TimeSpec | undefined;
      durationInSeconds?: number | undefined;
      description?: string | undefined;
      force?: boolean | undefined;
    }
  | { kind: 'approve'; vm: string; events: EventRef[]; expectStatus: number }
  | { kind: 'cancel' | 'complete'; event: EventRef; expectStatus: number }
  | { kind: 'fault'; fault: FaultSpec }
  | {
      kind: 'expect';
      vm: string;
      events?: ExpectedEvent[] | undefined;
      gone: boolean;
      incarnation?: 'changed' | 'unchanged' | undefined;
    };

export interface ScenarioStep {
  index: number;
  /** Nominal seconds from the start. */
  at: number;
  /** Where it is written; 0 when unknown. */
  line: number;
  action: Action;
}

export interface Scenario {
  name: string;
  description: string;
  /** Where it came from, for messages. */
  file: string;
  fleet: VmSpec[];
  steps: ScenarioStep[];
  /** The document as written, as plain data: what a client POSTs to /v1/scenarios. */
  source: ScenarioDocument;
}

/** One line saying what a step does. */
export function describeAction(action: Action): string {
  switch (action.kind) {
    case 'operation': {
      const target = action.vms
        ? `vms ${action.vms.join(',')}`
        : action.host !== undefined
          ? `host ${action.host}`
          : `tenant ${action.tenant}`;
      const nb = action.notBefore ? ` notBefore ${formatTimeSpec(action.notBefore)}` : '';
      return `operation ${action.type} on ${target}${nb}${action.as ? ` as ${action.as}` : ''}`;
    }
    case 'approve':
      return `approve ${action.events.map((r) => r.text).join(', ')} as ${action.vm}${action.expectStatus !== 200 ? ` (expect ${action.expectStatus})` : ''}`;
    case 'cancel':
    case 'complete':
      return `${action.kind} ${action.event.text}${action.expectStatus !== 200 ? ` (expect ${action.expectStatus})` : ''}`;
    case 'fault': {
      const f = action.fault;
      const what = [
        f.status !== undefined ? `status ${f.status}` : '',
        f.latencyMs ? `latency ${f.latencyMs} ms` : '',
        f.drop ? 'drop' : '',
      ]
        .filter((s) => s !== '')
        .join(' + ');
      return `fault ${what} for ${f.vm ?? 'every VM'} x${f.count ?? 1}`;
    }
    case 'expect': {
      if (action.gone) return `expect ${action.vm} gone`;
      const n = action.events?.length ?? 0;
      const inc = action.incarnation ? `, incarnation ${action.incarnation}` : '';
      return `expect ${action.vm}: ${n === 0 ? 'no events' : action.events!.map(describeExpected).join(', ')}${inc}`;
    }
  }
}

export function formatTimeSpec(t: TimeSpec | 'started'): string {
  return t === 'started' ? '""' : `${t.relative ? '+' : ''}${formatOffset(t.seconds)}`;
}

export function describeExpected(e: ExpectedEvent): string {
  const parts = [e.ref?.text, e.type, e.status].filter((s) => s !== undefined);
  return parts.length > 0 ? parts.join(' ') : 'any event';
}

// ---- the run report ------------------------------------------------------------------

const isoTime = z.string().meta({ description: 'ISO 8601 time in UTC' });

export const StepReportSchema = z.object({
  index: z.int(),
  at: z.string().meta({ description: 'Nominal offset from the start, as 15m' }),
  line: z.int().meta({ description: 'Line of the step in its file; 0 when unknown' }),
  time: isoTime.meta({ description: 'Simulated time the step ran at' }),
  action: z.enum(ACTIONS),
  summary: z.string(),
  ok: z.boolean(),
  message: z.string().optional().meta({ description: 'What happened; for a failure, expected vs actual' }),
  expected: z.unknown().optional(),
  actual: z.unknown().optional(),
});
export type StepReport = z.infer<typeof StepReportSchema>;

export const ScenarioReportSchema = z.object({
  name: z.string(),
  description: z.string(),
  passed: z.boolean().meta({ description: 'Every step ran and was ok' }),
  timing: z.number().meta({ description: 'Timing factor: 1 realistic, 60 dev' }),
  clock: z.enum(['manual', 'system']),
  startedAt: isoTime,
  finishedAt: z.union([isoTime, z.null()]).meta({ description: 'null while running' }),
  aborted: z.boolean().meta({ description: 'Stopped before its last step' }),
  steps: z.array(StepReportSchema).meta({ description: 'The steps run so far' }),
});
export type ScenarioReport = z.infer<typeof ScenarioReportSchema>;
