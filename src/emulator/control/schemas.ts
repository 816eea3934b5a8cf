// The control API's bodies: each zod schema is at once the validator, the TS type and the OpenAPI schema.
import { z } from 'zod';
import { API_VERSIONS } from '../../protocol/versions.js';
import { EVENT_SOURCES, EVENT_STATUSES, EVENT_TYPES } from '../../protocol/types.js';
import {
  ACTIVATION_MODES,
  ACTIVATION_STATUSES,
  CLOCK_MODES,
  OPERATION_TYPES,
  START_CAUSES,
  STEP_STATUSES,
  type ControlErrorBody,
} from '../../protocol/control.js';
import type { ActivationOptions, ActivationStatus } from '../engine/activation.js';
import type { ClockMode } from '../../shared/clock.js';
import { OPERATION_STATUSES, type StartCause } from '../engine/engine.js';
import { formatFieldPath, type FieldPath } from '../engine/errors.js';
import { EVICTION_POLICIES, POWER_STATES, PRIORITIES, TENANT_KINDS } from '../engine/fleet.js';
import type { StepStatus } from '../engine/rolling.js';
import { TIMING_PROFILES } from '../engine/timing.js';
import { VM_STATES } from '../engine/vm-state.js';
import { FAULT_STATUSES } from '../imds/faults.js';
import { ScenarioDocumentSchema, ScenarioReportSchema } from '../scenarios/format.js';
import { InstanceSettingsSchema, VmSpecSchema } from '../fleet/vm-spec.js';
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS, PROCESS_KINDS } from '../impact/binding.js';
import { IMPACT_SIGNALS } from '../impact/signals.js';
import type { ProcessView } from '../impact/controller.js';
import { IMPACT_ACTIONS, PROCESS_STATUSES, type ImpactEntry } from '../impact/log.js';
import { EVENT_GRID_SCHEMAS } from '../../protocol/eventgrid.js';
import { DEFAULT_SCHEMA, SUBSCRIPTION_LIMITS, type SubscriptionSetting } from '../eventgrid/subscriptions.js';
import type { SubscriptionView } from '../eventgrid/event-grid.js';
import { DEAD_LETTER_LIMIT } from '../eventgrid/delivery.js';

/** Every schema the OpenAPI document names, keyed by its component id. */
export const registry = z.registry<{ id: string; description?: string }>();

/** [choice] The longest single clock advance; longer is almost surely a unit mistake. */
export const MAX_ADVANCE_SECONDS = 10 * 365.25 * 86_400;
export const MAX_LATENCY_MS = 120_000;
export const MAX_DESCRIPTION_LENGTH = 1000;

const isoTime = z.string().meta({ description: 'ISO 8601 time in UTC', examples: ['2024-01-01T00:15:00.000Z'] });
const isoTimeOrNull = z.union([isoTime, z.null()]);

/** The named `--timing` profiles, as the engine's table has them. */
export const TIMING_PROFILE_NAMES = Object.keys(TIMING_PROFILES) as (keyof typeof TIMING_PROFILES)[];

// The control contract's lists (src/protocol/control.ts) against the engine's types: a member missing
// on either side fails to compile, so the two cannot drift apart.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _contractMatchesEngine: [
  Same<(typeof CLOCK_MODES)[number], ClockMode>,
  Same<(typeof ACTIVATION_MODES)[number], ActivationOptions['mode']>,
  Same<(typeof ACTIVATION_STATUSES)[number], ActivationStatus>,
  Same<(typeof START_CAUSES)[number], StartCause>,
  Same<(typeof STEP_STATUSES)[number], StepStatus>,
] = [true, true, true, true, true];

// ---- request bodies ----------------------------------------------------------

export const VmBody = VmSpecSchema.register(registry, { id: 'VmBody', description: 'A VM to add; only name is required' });
export type VmBody = z.infer<typeof VmBody>;

export const OperationBody = z
  .strictObject({
    type: z.enum(OPERATION_TYPES),
    vms: z.array(z.string()).optional(),
    host: z.string().optional(),
    tenant: z.string().optional(),
    notBefore: z
      .string()
      .optional()
      .meta({ description: 'ISO 8601 (RFC 1123 also accepted); earlier than the minimum notice needs force' }),
    durationInSeconds: z.int().min(-1).optional(),
    description: z.string().max(MAX_DESCRIPTION_LENGTH).optional(),
    force: z.boolean().optional().meta({ description: 'Allow a notBefore earlier than the minimum notice' }),
  })
  .register(registry, { id: 'OperationBody', description: 'Exactly one of vms, host or tenant names the target' });
export type OperationBody = z.infer<typeof OperationBody>;

export const ApproveBody = z
  .strictObject({ vm: z.string().meta({ description: 'The VM that approves, as if it POSTed to IMDS; it must see the event' }) })
  .register(registry, { id: 'ApproveBody' });
export type ApproveBody = z.infer<typeof ApproveBody>;

export const AdvanceBody = z
  .strictObject({ seconds: z.number().positive().max(MAX_ADVANCE_SECONDS) })
  .register(registry, { id: 'AdvanceBody' });
export type AdvanceBody = z.infer<typeof AdvanceBody>;

export const FaultBody = z
  .strictObject({
    vm: z.string().optional().meta({ description: 'Only this VM; absent means any VM' }),
    status: z.literal(FAULT_STATUSES).optional(),
    latencyMs: z.int().min(0).max(MAX_LATENCY_MS).optional(),
    drop: z.boolean().optional().meta({ description: 'Close the connection without answering' }),
    count: z
      .int()
      .min(1)
      .optional()
      .meta({ description: 'How many IMDS requests (or Event Grid notifications) it affects; 1 when absent' }),
    duplicate: z.boolean().optional().meta({
      description:
        'Event Grid, not IMDS: publish the next `count` notifications (of events naming `vm`, if given) twice, with the same id. Alone: not with status, latencyMs or drop',
    }),
  })
  .refine((f) => f.status !== undefined || f.latencyMs !== undefined || f.drop === true || f.duplicate === true, {
    message: 'a fault needs at least one of "status", "latencyMs", "drop": true or "duplicate": true',
  })
  .refine((f) => f.duplicate !== true || (f.status === undefined && f.latencyMs === undefined && f.drop === undefined), {
    message: '"duplicate" is an Event Grid fault; it does not go with the IMDS faults "status", "latencyMs" or "drop"',
  })
  .register(registry, {
    id: 'FaultBody',
    description: 'At least one of status, latencyMs or drop (IMDS), or duplicate alone (Event Grid)',
  });
export type FaultBody = z.infer<typeof FaultBody>;

const noNul = (s: string) => !s.includes('\0');
const pathText = z.string().min(1).max(4096).refine(noNul, 'must not contain a NUL character');

export const ProcessBody = z
  .strictObject({
    pid: z.int().positive().optional().meta({ description: 'A running process; never 1, the emulator itself, or its own process group' }),
    pidfile: pathText.optional().meta({ description: 'A file holding the pid; read again before each action' }),
    command: z
      .array(z.string().min(1).max(4096).refine(noNul, 'must not contain a NUL character'))
      .min(1)
      .max(256)
      .optional()
      .meta({ description: 'argv of a command Forewarn starts (no shell), owns, and starts again after a Reboot or Redeploy' }),
    cwd: pathText.optional().meta({ description: "The command's working directory; the emulator's by default" }),
    graceSeconds: z
      .number()
      .min(0)
      .max(MAX_GRACE_SECONDS)
      .optional()
      .meta({ description: `Seconds between SIGTERM and SIGKILL; ${DEFAULT_GRACE_SECONDS} by default` }),
  })
  .register(registry, { id: 'ProcessBody', description: 'Exactly one of pid, pidfile or command' });
export type ProcessBody = z.infer<typeof ProcessBody>;

// ---- responses (documentation and handler return types) ----------------------

export const ErrorResponse = z
  .object({
    error: z.string().meta({ description: 'What is wrong, naming the field or parameter when one is at fault' }),
    field: z
      .string()
      .optional()
      .meta({
        description:
          'Only for a request sent with `Prefer: error-field`: the request field or query parameter at fault, as a path ' +
          '(`notBefore`, `vms[1]`, `scenario.steps[2].at`); absent when no single one is',
        examples: ['faultDomain'],
      }),
  })
  .register(registry, { id: 'Error', description: 'Every control API error' });
const _errorIsTheContract: Same<z.infer<typeof ErrorResponse>, ControlErrorBody> = true;

export const ImdsErrorResponse = z
  .object({ error: z.string(), 'newest-versions': z.array(z.enum(API_VERSIONS)) })
  .register(registry, { id: 'ImdsError', description: "IMDS's own error body for a bad api-version" });

export const VmResponse = z
  .object({
    name: z.string(),
    vmId: z.string(),
    tenant: z.string(),
    tenantKind: z.enum(TENANT_KINDS),
    faultDomain: z.int(),
    updateDomain: z.int(),
    host: z.string(),
    address: z.string().optional(),
    priority: z.enum(PRIORITIES),
    evictionPolicy: z.enum(EVICTION_POLICIES).optional().meta({ description: 'Spot VMs only: what an eviction does to the VM' }),
    powerState: z
      .enum(POWER_STATES)
      .optional()
      .meta({ description: 'Absent while running; deallocated after a Spot eviction with policy Deallocate' }),
    terminateNotificationMinutes: z.int().optional(),
    osImageNotification: z.boolean(),
    gpu: z.boolean(),
    faultDomainCount: z.int(),
    updateDomainCount: z.int(),
    scaleSet: z.string().optional(),
    // Instance metadata settings, as declared (defaults are not listed).
    ...InstanceSettingsSchema,
    state: z.enum(VM_STATES).meta({
      description: 'What the VM is going through, from its Started event: frozen, rebooting, redeploying, deleting, evicting; else running',
    }),
    incarnation: z.int().meta({ description: 'The DocumentIncarnation the VM would see now' }),
    scheduledEvents: z
      .enum(ACTIVATION_STATUSES)
      .meta({ description: 'Whether the VM sees its events: always enabled unless the activation profile is realistic' }),
    lastRequestAt: isoTimeOrNull
      .optional()
      .meta({ description: 'The last Scheduled Events request (realistic activation only); on GET /v1/vms/{name}' }),
  })
  .register(registry, { id: 'Vm' });
export type VmResponse = z.infer<typeof VmResponse>;

export const FleetResponse = z
  .object({
    vms: z.array(VmResponse),
    tenants: z.array(
      z.object({
        name: z.string(),
        kind: z.enum(TENANT_KINDS),
        faultDomainCount: z.int(),
        updateDomainCount: z.int(),
        vms: z.array(z.string()),
      }),
    ),
    hosts: z.array(z.object({ name: z.string(), vms: z.array(z.string()), tenants: z.array(z.string()) })),
    deleted: z
      .array(
        z.object({
          name: z.string(),
          tenant: z.string(),
          host: z.string(),
          faultDomain: z.int(),
          updateDomain: z.int(),
          state: z.literal('deleted'),
          deletedAt: isoTime,
          operation: z.string().meta({ description: 'The delete operation that removed it' }),
        }),
      )
      .meta({ description: 'VMs a delete operation removed, until a VM of the same name is added again' }),
  })
  .register(registry, { id: 'Fleet' });
export type FleetResponse = z.infer<typeof FleetResponse>;

const OperationStatus = z.enum(OPERATION_STATUSES).meta({ description: 'Running while any of its events is live or still to come' });

export const RollingStepResponse = z
  .object({
    faultDomain: z.int(),
    vms: z.array(z.string()),
    status: z.enum(STEP_STATUSES),
    events: z.array(z.string()),
    at: isoTimeOrNull.meta({ description: 'When its event is (or was) created; null until planned' }),
  })
  .register(registry, { id: 'RollingStep', description: 'One fault domain of a rolling host update' });
export type RollingStepResponse = z.infer<typeof RollingStepResponse>;

const Steps = z
  .union([z.array(RollingStepResponse), z.null()])
  .meta({ description: 'A rolling host update (host-update on a tenant) by fault domain, in order; null otherwise' });

export const OperationCreated = z
  .object({
    operation: z.string(),
    events: z.array(z.string()),
    removedVms: z.array(z.string()).meta({ description: 'Deleted at once: no terminate notification' }),
    reimagedVms: z.array(z.string()).meta({ description: 'Reimaged at once: no OS image notification' }),
    status: OperationStatus,
    steps: Steps,
  })
  .register(registry, { id: 'OperationCreated' });
export type OperationCreated = z.infer<typeof OperationCreated>;

export const OperationResponse = z
  .object({
    id: z.string(),
    type: z.enum(OPERATION_TYPES),
    createdAt: isoTime,
    vms: z.array(z.string()).meta({ description: 'Every VM targeted, however it was addressed' }),
    host: z.union([z.string(), z.null()]).meta({ description: 'The host targeted, if any' }),
    tenant: z.union([z.string(), z.null()]).meta({ description: 'The tenant targeted, if any' }),
    status: OperationStatus,
    events: z.array(z.string()),
    removedVms: z.array(z.string()),
    reimagedVms: z.array(z.string()),
    steps: Steps,
    progress: z
      .union([z.object({ done: z.int(), total: z.int() }), z.null()])
      .meta({ description: 'Steps done or skipped, of all steps; null unless rolling' }),
    durationInSeconds: z.int(),
    description: z.union([z.string(), z.null()]).meta({ description: "The requested description; null for the type's own" }),
  })
  .register(registry, { id: 'Operation' });
export type OperationResponse = z.infer<typeof OperationResponse>;

/** A paged list's cursor (engine/paging.ts). */
const NextCursor = z
  .union([z.string(), z.null()])
  .meta({ description: 'Pass as `before` to get the next page (older items); null on the last page' });

export const OperationList = z
  .object({ operations: z.array(OperationResponse), next: NextCursor })
  .register(registry, { id: 'OperationList', description: 'Operations, newest first, a page at a time' });
export const OperationEnvelope = z.object({ operation: OperationResponse }).register(registry, { id: 'OperationEnvelope' });

export const EventResponse = z
  .object({
    id: z.string(),
    operation: z.string(),
    tenant: z.string(),
    type: z.enum(EVENT_TYPES),
    source: z.enum(EVENT_SOURCES),
    status: z.enum(EVENT_STATUSES),
    resources: z.array(z.string()),
    description: z.string(),
    durationInSeconds: z.int(),
    createdAt: isoTime,
    notBefore: isoTime.meta({ description: 'The scheduled NotBefore; kept after the event Started' }),
    startedAt: isoTimeOrNull,
    endsAt: isoTimeOrNull,
    startedBy: z.union([z.enum(START_CAUSES), z.null()]),
    approvals: z.array(z.object({ vm: z.string(), at: isoTime })),
    job: z
      .object({
        id: z.string(),
        tenants: z.array(z.object({ tenant: z.string(), event: z.string(), approved: z.boolean() })),
      })
      .meta({
        description: 'The job the event belongs to: a job on a shared host has one event per tenant and starts when every tenant approved',
      }),
  })
  .register(registry, { id: 'Event', description: 'A live event with its internal state' });
export type EventResponse = z.infer<typeof EventResponse>;

export const EventList = z.object({ events: z.array(EventResponse) }).register(registry, { id: 'EventList' });

/** How an ended event ended. */
export const ENDED_OUTCOMES = ['completed', 'cancelled'] as const;

export const EndedEventResponse = EventResponse.omit({ job: true })
  .extend({
    endedAt: isoTime,
    outcome: z.enum(ENDED_OUTCOMES),
  })
  .register(registry, { id: 'EndedEvent', description: 'An event that has ended, as it was when it ended' });
export type EndedEventResponse = z.infer<typeof EndedEventResponse>;
export const History = z
  .object({ events: z.array(EndedEventResponse), next: NextCursor })
  .register(registry, { id: 'History', description: 'Ended events, the latest to end first, a page at a time' });
export const EventEnvelope = z.object({ event: EventResponse }).register(registry, { id: 'EventEnvelope' });

const WireEvent = z.object({
  EventId: z.string(),
  EventStatus: z.enum(EVENT_STATUSES),
  EventType: z.enum(EVENT_TYPES),
  ResourceType: z.literal('VirtualMachine'),
  Resources: z.array(z.string()),
  NotBefore: z.string().meta({ description: 'RFC 1123, or "" once Started' }),
  Description: z.string().optional(),
  EventSource: z.enum(EVENT_SOURCES).optional(),
  DurationInSeconds: z.int().optional(),
});

export const DocumentResponse = z
  .object({ DocumentIncarnation: z.int(), Events: z.array(WireEvent) })
  .register(registry, { id: 'Document', description: 'The Scheduled Events document, as IMDS sends it' });

export const ClockResponse = z
  .object({
    now: isoTime,
    mode: z.enum(CLOCK_MODES),
    factor: z.number(),
    activation: z.enum(ACTIVATION_MODES).meta({ description: 'The Scheduled Events activation profile' }),
  })
  .register(registry, { id: 'Clock' });
export type ClockResponse = z.infer<typeof ClockResponse>;

export const FaultResponse = z
  .object({
    id: z.string(),
    vm: z.union([z.string(), z.null()]),
    status: z.union([z.literal(FAULT_STATUSES), z.null()]),
    latencyMs: z.int(),
    drop: z.boolean(),
    duplicate: z.boolean().meta({ description: 'An Event Grid duplicate fault' }),
    remaining: z.int().meta({ description: 'Requests (or notifications) it will still affect' }),
  })
  .register(registry, { id: 'Fault' });
export type FaultResponse = z.infer<typeof FaultResponse>;

export const FaultEnvelope = z.object({ fault: FaultResponse }).register(registry, { id: 'FaultEnvelope' });
export const FaultList = z.object({ faults: z.array(FaultResponse) }).register(registry, { id: 'FaultList' });
export const OkResponse = z.object({ ok: z.literal(true) }).register(registry, { id: 'Ok' });
export const ClearedResponse = z.object({ ok: z.literal(true), cleared: z.int() }).register(registry, { id: 'Cleared' });

export const ImpactEntryResponse = z
  .object({
    vm: z.string(),
    action: z.enum(IMPACT_ACTIONS).meta({
      description:
        'stop, continue, terminate, kill: SIGSTOP, SIGCONT, SIGTERM, SIGKILL sent; start: an owned command started; exit: the process ended; ' +
        'skip: nothing could be done (detail says why); bind, unbind',
    }),
    pid: z.union([z.int(), z.null()]),
    signal: z.union([z.enum(IMPACT_SIGNALS), z.null()]),
    ok: z.boolean(),
    vmState: z.enum(VM_STATES).meta({ description: 'The VM state that called for it' }),
    at: isoTime.meta({ description: 'Wall-clock time' }),
    simulatedAt: isoTime.meta({ description: "The emulator's clock" }),
    detail: z.string(),
  })
  .register(registry, {
    id: 'ImpactEntry',
    description: 'One thing real impact did to a bound process; also the data of an `impact` event on /v1/stream',
  });
export const ProcessResponse = z
  .object({
    vm: z.string(),
    kind: z.enum(PROCESS_KINDS),
    pid: z.union([z.int(), z.null()]).meta({ description: 'The process now, or last; null when an owned command is not running' }),
    pidfile: z.string().optional(),
    command: z.array(z.string()).optional(),
    cwd: z.string().optional(),
    graceSeconds: z.number(),
    owned: z.boolean().meta({ description: 'Forewarn started it: it signals its process group and starts it again after a reboot' }),
    status: z.enum(PROCESS_STATUSES),
    boundAt: isoTime,
    stderr: z.string().optional().meta({ description: "The end of an owned command's stderr" }),
    log: z.array(ImpactEntryResponse).meta({ description: 'Oldest first; the last 100' }),
  })
  .register(registry, { id: 'Process', description: 'What a VM is bound to, and what real impact has done to it' });
const _processMatchesController: [
  Same<z.infer<typeof ProcessResponse>, ProcessView>,
  Same<z.infer<typeof ImpactEntryResponse>, ImpactEntry>,
] = [true, true];

export const StreamHello = z.object({ now: isoTime }).register(registry, { id: 'StreamHello' });
export const STREAM_TOPICS = ['engine', 'clock', 'faults', 'scenarios'] as const;
export type StreamTopic = (typeof STREAM_TOPICS)[number];
/** What GET /v1/stream?include= may add: `changed` frames. */
export const STREAM_INCLUDES = ['changes'] as const;
export const StreamChanged = z
  .object({
    now: isoTime,
    topics: z.array(z.enum(STREAM_TOPICS)).meta({
      description: 'engine: fleet, events, operations or history; clock: the manual clock moved; faults; scenarios: a run began or ended',
    }),
  })
  .register(registry, { id: 'StreamChanged', description: 'Data of a `changed` event on /v1/stream?include=changes' });
export const StreamDocument = z
  .union([
    z.object({ vm: z.string(), incarnation: z.int(), document: DocumentResponse }),
    z.object({ vm: z.string(), removed: z.literal(true) }),
  ])
  .register(registry, { id: 'StreamDocument', description: 'Data of a `document` event on /v1/stream' });

// ---- Event Grid (docs/event-grid.md) -------------------------------------------------

const setting = (key: SubscriptionSetting, description: string) => {
  const { min, max, default: byDefault } = SUBSCRIPTION_LIMITS[key];
  return z
    .int()
    .min(min)
    .max(max)
    .meta({ description: `${description}; ${min}–${max}, ${byDefault} by default` });
};

const WEBHOOK_PROTOCOLS = new Set(['http:', 'https:']);
const webhookUrl = z
  .string()
  .max(4096)
  .refine((s) => URL.canParse(s) && WEBHOOK_PROTOCOLS.has(new URL(s).protocol), 'must be an absolute http:// or https:// URL')
  .meta({ description: 'The webhook; it must pass the validation handshake before the subscription exists' });

export const EventGridSubscriptionBody = z
  .strictObject({
    endpoint: webhookUrl,
    schema: z
      .enum(EVENT_GRID_SCHEMAS)
      .optional()
      .meta({ description: `The delivery schema; ${DEFAULT_SCHEMA} by default. CloudEvents validate with an OPTIONS request` }),
    maxEventsPerBatch: setting('maxEventsPerBatch', 'Most events in one delivery').optional(),
    preferredBatchSizeInKilobytes: setting('preferredBatchSizeInKilobytes', 'Target ceiling of a batch, in KB').optional(),
    maxDeliveryAttempts: setting('maxDeliveryAttempts', 'Tries before an event is dead-lettered').optional(),
    eventTimeToLiveInMinutes: setting('eventTimeToLiveInMinutes', 'Minutes (scaled by --timing) an event is tried for').optional(),
  })
  .register(registry, { id: 'EventGridSubscriptionBody', description: 'A webhook subscription to scheduled events' });
export type EventGridSubscriptionBody = z.infer<typeof EventGridSubscriptionBody>;

export const EventGridSubscription = z
  .object({
    id: z.string().meta({ description: 'Also sent as aeg-subscription-name' }),
    endpoint: z.string(),
    schema: z.enum(EVENT_GRID_SCHEMAS),
    maxEventsPerBatch: z.int(),
    preferredBatchSizeInKilobytes: z.int(),
    maxDeliveryAttempts: z.int(),
    eventTimeToLiveInMinutes: z.int(),
    createdAt: isoTime,
    counts: z.object({
      delivered: z.int().meta({ description: 'Events the webhook acknowledged (200–204)' }),
      pending: z.int().meta({ description: 'Events waiting for a try or being sent' }),
      retries: z.int().meta({ description: 'Tries after the first, made or scheduled' }),
      deadLettered: z.int(),
    }),
  })
  .register(registry, { id: 'EventGridSubscription' });
export const EventGridSubscriptionList = z
  .object({ subscriptions: z.array(EventGridSubscription) })
  .register(registry, { id: 'EventGridSubscriptionList' });
export const EventGridSubscriptionEnvelope = z
  .object({ subscription: EventGridSubscription })
  .register(registry, { id: 'EventGridSubscriptionEnvelope' });
export const EventGridDeadLetterList = z
  .object({
    deadLetters: z.array(z.record(z.string(), z.unknown())).meta({
      description:
        `Oldest first, the last ${DEAD_LETTER_LIMIT}: each event as delivered, with deadLetterReason, deliveryAttempts, lastDeliveryOutcome, ` +
        `lastHttpStatusCode (when answered), publishTime and lastDeliveryAttemptTime (lower case in CloudEvents)`,
    }),
  })
  .register(registry, { id: 'EventGridDeadLetterList' });
const _subscriptionMatchesService: Same<z.infer<typeof EventGridSubscription>, SubscriptionView> = true;

// ---- scenarios (docs/scenarios.md) -------------------------------------------------

export const ScenarioDocument = ScenarioDocumentSchema.register(registry, {
  id: 'Scenario',
  description: 'A scenario file as data; see docs/scenarios.md',
});
export const ScenarioBody = z
  .strictObject({
    name: z.string().optional().meta({ description: 'A built-in scenario, as `forewarn scenario list` names it' }),
    scenario: ScenarioDocument.optional(),
    timing: z
      .union([z.enum(TIMING_PROFILE_NAMES), z.number().positive()])
      .optional()
      .meta({ description: "Must match the emulator's own timing; the run uses the emulator's clock and timing" }),
  })
  .register(registry, { id: 'ScenarioBody', description: 'Exactly one of name or scenario' });
export const ScenarioReport = ScenarioReportSchema.register(registry, { id: 'ScenarioReport' });
export const SCENARIO_RUN_STATUSES = ['running', 'passed', 'failed', 'aborted'] as const;
export const ScenarioRun = z
  .object({
    run: z.string(),
    status: z.enum(SCENARIO_RUN_STATUSES),
    report: ScenarioReport,
  })
  .register(registry, { id: 'ScenarioRun', description: 'A scenario run and its report so far' });
export type ScenarioRun = z.infer<typeof ScenarioRun>;
export const ScenarioList = z
  .object({ scenarios: z.array(z.object({ name: z.string(), description: z.string() })) })
  .register(registry, { id: 'ScenarioList', description: 'The built-in scenarios' });

// ---- validation messages -------------------------------------------------------

const fieldPathOf = (path: readonly PropertyKey[]) => path.map((key) => (typeof key === 'number' ? key : String(key)));
const pathOf = (path: readonly PropertyKey[]) => formatFieldPath(fieldPathOf(path));

// zod's own prefixes ("Invalid input: …") add nothing once the field is named.
const PREFIX = /^(?:Invalid input|Invalid option|Too big|Too small|Invalid string|Invalid number|Invalid value): /;

function valueAt(input: unknown, path: readonly PropertyKey[]): { present: boolean } {
  let cur: unknown = input;
  for (const key of path) {
    if (typeof cur !== 'object' || cur === null || !Object.hasOwn(cur, key)) return { present: false };
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return { present: cur !== undefined };
}

/** The field of the first problem, as describeIssues names it; undefined for the body as a whole. */
export function issuesField(issues: readonly z.core.$ZodIssue[]): FieldPath | undefined {
  const first = issues[0];
  if (first === undefined) return undefined;
  const path = fieldPathOf(first.path);
  // An unknown field is named by its own key.
  if (first.code === 'unrecognized_keys' && first.keys[0] !== undefined) path.push(first.keys[0]);
  return path.length === 0 ? undefined : path;
}

/** One line per problem, each naming the field: `vms[0]: expected string, received number`. */
export function describeIssues(issues: readonly z.core.$ZodIssue[], input: unknown): string {
  const lines: string[] = [];
  for (const issue of issues) {
    const where = pathOf(issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) lines.push(`unknown field "${where === '' ? key : `${where}.${key}`}"`);
      continue;
    }
    const text = issue.message.replace(PREFIX, '').replace(/, received undefined$/, '');
    if (issue.code !== 'custom' && !valueAt(input, issue.path).present) {
      lines.push(where === '' ? 'a JSON object body is required' : `${where}: required (${text})`);
      continue;
    }
    lines.push(where === '' ? (issue.code === 'custom' ? text : `body: ${text}`) : `${where}: ${text}`);
  }
  return lines.join('; ');
}
