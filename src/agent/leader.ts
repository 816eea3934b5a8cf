// Who approves an event: pure functions of the config, the event and this VM's name, so they test without I/O.
import { affects, isLeader, leaderOf, type ScheduledEvent } from '../client/index.js';
import type { AgentConfig, FleetBudgetConfig, KubernetesConfig, Rule } from './types.js';

export type ApprovalRole = 'leader' | 'standby' | 'any';

export type LeaderConfig = AgentConfig['leader'];

/**
 * This VM's own right to approve, standby aside. [seed] One approval covers every resource, so one
 * VM per event is enough. `first`: the first name in Resources (compared as `affects` compares:
 * case-insensitive, the 2017-03-01 `_` ignored); `self`: any VM the event names approves for itself;
 * `any`: every VM that sees it. Returns null when this VM should leave it to another.
 */
export function ownRole(mode: LeaderConfig['mode'], event: ScheduledEvent, vmName: string): 'leader' | 'any' | null {
  switch (mode) {
    case 'any':
      return 'any';
    case 'self':
      return affects(event, vmName) ? 'leader' : null;
    case 'first':
      return isLeader(event, vmName) ? 'leader' : null;
  }
}

/** [seed] "A secondary VM approves User events in case the primary stops responding"; `all` widens that. */
export function standbyCovers(standby: LeaderConfig['standby'], event: ScheduledEvent): boolean {
  if (standby === null) return false;
  return standby.events === 'all' || (event.source ?? '').toLowerCase() === 'user';
}

export type ApprovalDecision =
  /** Approve now, in this role. */
  | { kind: 'approve'; as: ApprovalRole }
  /** Approve (as `any`) once every node the event names that runs the agent is prepared, or at the deadline. */
  | { kind: 'barrier' }
  /** As standby, once `at` (epoch ms) has come, if the event is still Scheduled then. */
  | { kind: 'wait'; as: 'standby'; at: number }
  | { kind: 'skip'; reason: string };

export interface DecisionInput {
  leader: LeaderConfig;
  event: ScheduledEvent;
  vmName: string;
  /** When this agent first saw the event (epoch ms); the standby's timer runs from it. */
  firstSeenAt: number;
  now: number;
  /** The rule approves through a barrier (usesBarrier, usesFleetBarrier). */
  barrier?: boolean;
}

/**
 * Whether a rule's approval waits at the barrier: `after-actions` with a kubernetes action, unless
 * `kubernetes.approval: leader-only`. [choice] `immediately` and `never` are taken at their word.
 */
export function usesBarrier(rule: Rule, kubernetes: KubernetesConfig): boolean {
  return (
    rule.approval === 'after-actions' &&
    (kubernetes.approval ?? 'barrier') === 'barrier' &&
    rule.actions.some((a) => a.type === 'kubernetes')
  );
}

/**
 * Whether a rule's approval waits at the fleet barrier (SPEC §4 "Fleet budget outside Kubernetes"):
 * `after-actions` with a `budget` configured, unless a kubernetes action puts it at the Kubernetes one.
 */
export function usesFleetBarrier(rule: Rule, budget: FleetBudgetConfig | null): boolean {
  return budget !== null && rule.approval === 'after-actions' && !rule.actions.some((a) => a.type === 'kubernetes');
}

/** Whether a rule takes a fleet budget slot: it prepares this VM (exec, http) and no kubernetes action takes a Lease for it. */
export function takesFleetSlot(rule: Rule, budget: FleetBudgetConfig | null): boolean {
  return (
    budget !== null &&
    rule.actions.some((a) => a.type === 'exec' || a.type === 'http') &&
    !rule.actions.some((a) => a.type === 'kubernetes')
  );
}

/**
 * Whether and when this VM approves, once the rule's policy allows it. Only a Scheduled event can
 * be approved; a standby waits `afterSeconds` from its own first sight, and is asked again then.
 */
export function decideApproval(input: DecisionInput): ApprovalDecision {
  const { leader, event, vmName, firstSeenAt, now } = input;
  if (event.status !== 'Scheduled') return { kind: 'skip', reason: `the event is ${event.status}, no longer Scheduled` };
  // One approval starts the event on every node it names: any of them may send it, once all are
  // prepared, so none has to stay up for it. A node the event does not name has no say.
  if (input.barrier === true) {
    if (affects(event, vmName)) return { kind: 'barrier' };
    return { kind: 'skip', reason: 'the event does not name this VM: left to the VMs it names (barrier)' };
  }
  const own = ownRole(leader.mode, event, vmName);
  if (own !== null) return { kind: 'approve', as: own };
  const who = leader.mode === 'first' ? `the leader ${leaderOf(event) ?? '(none)'}` : 'the VMs it affects';
  if (leader.standby === null) return { kind: 'skip', reason: `not this VM's to approve: left to ${who} (no standby configured)` };
  if (!standbyCovers(leader.standby, event)) {
    return { kind: 'skip', reason: `not this VM's to approve: left to ${who}; the standby covers only User events` };
  }
  const at = firstSeenAt + leader.standby.afterSeconds * 1000;
  if (now >= at) return { kind: 'approve', as: 'standby' };
  return { kind: 'wait', as: 'standby', at };
}

/** [choice] How old an unanswered approval must be before a restarted agent sends it once more. */
export const RESEND_AFTER_MS = 60_000;

/**
 * Whether a restarted agent resends an approval its journal already has. Only when the event is
 * still Scheduled and the send is over a minute old: approving is idempotent, and a Scheduled
 * event that long after an accepted approval means it did not take (IMDS lost it, or a
 * shared-host job still waits on other tenants, where a second approval costs nothing).
 */
export function shouldResend(event: ScheduledEvent, sentAt: number, now: number): boolean {
  return event.status === 'Scheduled' && now - sentAt >= RESEND_AFTER_MS;
}
