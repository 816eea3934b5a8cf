// What an operation kind is: its event, its notice, its impact and what it does to each VM.
// The engine's kernel runs every operation the same way and asks the operation's policy for the rest.
import type { EventSource, EventType } from '../../../protocol/types.js';
import type { Vm } from '../fleet.js';
import type { OperationType } from '../operations.js';
import type { AutoApproval } from '../scheduled-events-policy.js';
import type { Timing } from '../timing.js';

/** What a policy may do to a VM; the kernel carries it out and keeps its indexes and history right. */
export interface VmActions {
  /** [seed] Redeploy: the VM now runs on another host. */
  moveToNewHost(vm: Vm): void;
  /** The VM is gone from the fleet, as after a delete. */
  remove(vm: Vm): void;
  /** [seed] A Spot VM evicted with policy Deallocate: stopped, no further events until started again. */
  deallocate(vm: Vm): void;
}

/** Where an operation was aimed: at a tenant, at a host, or (both null) at VMs named one by one. */
export interface TargetScope {
  readonly tenant: string | null;
  readonly host: string | null;
}

export interface OperationPolicy {
  readonly type: OperationType;
  readonly eventType: EventType;
  readonly source: EventSource;
  /** Worded after the seed's examples. */
  readonly description: string;
  /** The DurationInSeconds its events carry by default; -1 is the seed's "unknown". */
  readonly durationInSeconds: number;
  /** Created already Started, with no notice and no NotBefore. */
  readonly startsAtOnce: boolean;
  /**
   * [seed] Routine maintenance: over a tenant it impacts one fault domain at a time, the next
   * Scheduled soon after the previous completes, and a tenant goes through one such rollout at a time.
   */
  readonly routine: boolean;
  /** What follows its first events: true when the rest of the target gets events one fault domain at a time. */
  rolls(target: TargetScope): boolean;
  /** Whether a running operation holds its tenants' fault domains, so routine maintenance elsewhere in them waits. */
  holdsTenant(target: TargetScope): boolean;
  /** The earliest NotBefore may be this long after creation. */
  minimumNoticeMs(members: readonly Vm[], timing: Timing): number;
  /** NotBefore when the request names none; the minimum notice unless the policy says otherwise. */
  defaultNoticeMs?(members: readonly Vm[], timing: Timing): number;
  /** Refuses a VM the operation cannot apply to; the message names the VM. */
  check?(vm: Vm, tenantKind: string): string | null;
  /**
   * A VM that gets no notice: acted on at once with no event ('remove' for a delete without
   * terminate notification, 'reimage' for a reimage without OS image notification); null gets an event.
   */
  withoutNotice?(vm: Vm): 'remove' | 'reimage' | null;
  /**
   * The scheduledEventsPolicy setting that approves this kind's events at creation (a user-initiated
   * Reboot or Redeploy), when every VM an event names has it on.
   */
  readonly autoApproval?: AutoApproval;
  /** Live events of these types on a VM refuse a new one with 409 (a second eviction of a VM being evicted). */
  readonly exclusiveWith: readonly EventType[];
  /** When the impact begins (the event Starts). */
  onImpactStart?(vm: Vm, act: VmActions): void;
  /** When the impact is over (or the event is completed before that). */
  onImpactEnd?(vm: Vm, act: VmActions): void;
}

/** The common case: notice from the event type's minimum, no checks, no effect on the VM. */
export function policy(
  fields: Pick<OperationPolicy, 'type' | 'eventType' | 'source' | 'description' | 'durationInSeconds'> & Partial<OperationPolicy>,
): OperationPolicy {
  const routine = fields.routine ?? false;
  return {
    startsAtOnce: false,
    routine,
    exclusiveWith: [],
    minimumNoticeMs: (_members, timing) => timing.minimumNoticeMs(fields.eventType),
    // [seed] Routine maintenance over a tenant rolls, one fault domain at a time. [choice] VMs named
    // one by one are what a tester asked for, all at once: only a tenant target rolls.
    rolls: (target) => routine && target.tenant !== null,
    // [choice] A rollout holds its tenant; a routine job on named VMs or a host is checked against
    // holds but takes none.
    holdsTenant: (target) => routine && target.tenant !== null,
    ...fields,
  };
}
