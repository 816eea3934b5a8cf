// One approval starts an event for every VM in its Resources (SPEC §1). A rule that prepares this VM
// (exec, http) and then approves may so start maintenance on VMs still preparing, unless a barrier
// makes every named VM wait for the others: the kubernetes action's, or the fleet budget's (`budget:`,
// coordination/). Rules left without one are named at start, so the risk is a decision, not a surprise.
import { usesFleetBarrier } from './leader.js';
import type { FleetBudgetConfig, Rule } from './types.js';

/** A rule that may approve an event naming several VMs with nothing to wait on, and why that is unsafe. */
export interface SharedApprovalRisk {
  rule: string;
  message: string;
}

export function sharedApprovalRisks(rules: readonly Rule[], budget: FleetBudgetConfig | null = null): SharedApprovalRisk[] {
  return rules
    .filter(
      (r) =>
        r.approval !== 'never' &&
        r.actions.some((a) => a.type === 'exec' || a.type === 'http') &&
        !r.actions.some((a) => a.type === 'kubernetes') &&
        !usesFleetBarrier(r, budget),
    )
    .map((r) => ({
      rule: r.name,
      message:
        budget === null
          ? `rule '${r.name}' approves once this VM is prepared, but an event may name several VMs and one approval starts it for all of them, ` +
            'ready or not, and no shared store lets this agent wait for the others. Where that matters, configure a fleet budget ' +
            '(budget:, docs/coordination.md), whose barrier waits for every VM the event names, or give those events a rule with ' +
            'approval: never: every VM then prepares within the full notice and the event starts at NotBefore (docs/agent.md)'
          : `rule '${r.name}' approves immediately, before this VM is prepared: the fleet budget's barrier waits only for ` +
            'after-actions rules, so one approval may start an event on VMs of the group still preparing. Where that matters, ' +
            'use approval: after-actions (docs/coordination.md)',
    }));
}
