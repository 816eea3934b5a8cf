// What the runner's parts share: one event's state, their inputs, and the integrations behind small
// interfaces, so none depends on the Agent, on a concrete integration, or on where events come from.
import { affects, type ScheduledEvent } from '../client/index.js';
import type { FleetBarrierOutcome, FleetBarrierWait, FleetStep } from './coordination/coordinator.js';
import type { DurableJournal } from './durable-journal.js';
import type { Journal } from './journal.js';
import type { BarrierOutcome, BarrierWait, KubernetesStep, StepResult } from './kubernetes/runtime.js';
import type { Logger } from './logger.js';
import type { AgentServices } from './services.js';
import type {
  Action,
  ActionContext,
  ActionLogger,
  ActionResult,
  AgentConfig,
  JournalEntry,
  KubernetesAction,
  Phase,
  Rule,
} from './types.js';

/** Runs one action (actions.ts: exec, http, log; a kubernetes action through ctx.kubernetes). */
export type RunAction = (action: Action, ctx: ActionContext) => Promise<ActionResult>;

/** What an event's steps ask of Kubernetes (KubernetesRuntime): the node prepared and recovered, and the barrier. */
export interface KubernetesSteps {
  prepare(action: KubernetesAction, step: KubernetesStep): Promise<StepResult>;
  recover(step: KubernetesStep): Promise<StepResult>;
  markPrepared(event: ScheduledEvent, log: ActionLogger): Promise<boolean>;
  awaitBarrier(wait: BarrierWait): Promise<BarrierOutcome>;
  approved(event: ScheduledEvent, log: ActionLogger): Promise<void>;
}

/** What an event's steps ask of the fleet budget (FleetCoordinator): a slot, the prepared mark and the barrier. */
export interface FleetSteps {
  acquire(step: FleetStep): Promise<StepResult>;
  markPrepared(event: ScheduledEvent, log: ActionLogger): Promise<boolean>;
  awaitBarrier(wait: FleetBarrierWait): Promise<FleetBarrierOutcome>;
  recover(step: FleetStep): Promise<StepResult>;
}

/** Where approvals go (imds-requests.ts). */
export interface ApprovalSender {
  /** Rejects when the approval was not taken. */
  approve(eventId: string, signal: AbortSignal): Promise<void>;
  /** Whether a failure is a refusal that no retry changes. */
  refused(err: unknown): boolean;
}

export interface RunnerServices extends AgentServices {
  config: AgentConfig;
  /** This VM; a controller's own name (actions see it as FOREWARN_VM_NAME). */
  vmName: string;
  /**
   * A controller: it acts for every VM an event names, from one place, so every event is its own to
   * prepare and approve (as `any`), with no barrier (its own preparation covered every VM) and one
   * budget slot per event. Absent: an agent, for this VM.
   */
  forEveryVm?: boolean;
  /** Log every decision, do nothing. */
  dryRun: boolean;
  durable: DurableJournal;
  /** Aborts running actions: at the end of the shutdown grace, or on a second signal. */
  actionsAborted: AbortSignal;
  runAction: RunAction;
  /** Null without a kubernetes action in the config. */
  kubernetes: KubernetesSteps | null;
  /** Null without a `budget`. */
  fleet: FleetSteps | null;
  approvals: ApprovalSender;
}

/** Whether the event is this runner's own maintenance: it names this VM, or a controller runs it (forEveryVm). */
export function isOwnEvent(c: Pick<RunnerServices, 'vmName' | 'forEveryVm'>, event: ScheduledEvent): boolean {
  return c.forEveryVm === true || affects(event, c.vmName);
}

/** One live event: the latest sight of it and the work queued for it, run one step at a time. */
export interface Tracked {
  key: string;
  event: ScheduledEvent;
  rule: Rule | null;
  /** Aborted when the event leaves the monitor's view: waits for approval end, preparation stops. */
  ended: AbortController;
  queue: Promise<void>;
  log: Logger;
  /** Prepared while the journal could not be written (policy prepare-before-notbefore): never approved by this run. */
  unjournaled: boolean;
}

/** [choice] The deadline after which preparation runs without a journal record: prepareWithinSeconds before NotBefore, or now once Started. */
export function prepareHold(
  tracked: Tracked,
  { policy, prepareWithinSeconds }: AgentConfig['journalUnwritable'],
): { unjournaledAt?: () => number; signal: AbortSignal } {
  if (policy === 'hold') return { signal: tracked.ended.signal };
  return {
    signal: tracked.ended.signal,
    unjournaledAt: () => {
      const e = tracked.event;
      const notBefore = e.notBefore?.getTime() ?? Number.NaN;
      if (e.status === 'Started' || Number.isNaN(notBefore)) return Number.NEGATIVE_INFINITY;
      return notBefore - prepareWithinSeconds * 1000;
    },
  };
}

/** The policy's deadline has come: from here the event is prepared without a journal record, and this run never approves it. */
export function goUnjournaled(tracked: Tracked, { policy, prepareWithinSeconds }: AgentConfig['journalUnwritable'], log: Logger): void {
  if (tracked.unjournaled) return;
  tracked.unjournaled = true;
  log.error(
    { policy, prepareWithinSeconds, notBefore: tracked.event.notBefore?.toISOString() ?? null, status: tracked.event.status },
    'the journal still cannot be written and NotBefore is near: preparing anyway, unjournaled, and not approving',
  );
}

/** What a kubernetes action's step gets: the event, when to stop, and the event's `kubernetes` record. */
export function kubernetesStep(c: RunnerServices, tracked: Tracked, phase: Phase, log: Logger): KubernetesStep {
  return journaledStep(c, tracked, phase, log, 'kubernetes record', {
    read: (entry) => entry?.kubernetes,
    write: (journal, id, record) => journal.kubernetes(id, record),
  });
}

/** What the fleet budget gets for one event: the event, when to stop, and the event's `budget` record. */
export function fleetStep(c: RunnerServices, tracked: Tracked, phase: Phase): FleetStep {
  return journaledStep(c, tracked, phase, tracked.log, 'budget record', {
    read: (entry) => entry?.budget,
    write: (journal, id, record) => journal.budget(id, record),
  });
}

function journaledStep<R>(
  c: RunnerServices,
  tracked: Tracked,
  phase: Phase,
  log: Logger,
  step: string,
  field: { read: (entry: JournalEntry | undefined) => R | undefined; write: (journal: Journal, eventId: string, record: R) => void },
) {
  const id = tracked.event.id;
  return {
    event: tracked.event,
    // Preparation stops when the event ends too; recovery only at shutdown.
    signal: phase === 'prepare' ? AbortSignal.any([c.actionsAborted, tracked.ended.signal]) : c.actionsAborted,
    log,
    record: () => field.read(c.journal().get(id)),
    save: async (record: R) => {
      c.durable.write(() => field.write(c.journal(), id, record));
      return (await c.durable.durable(tracked, step)) !== 'stopped';
    },
  };
}
