// An event's approval: when it is due (the rule's margin, leader.ts's decision, a barrier), sent while
// the event stays Scheduled, journaled once taken. Apart from preparation, which `immediately` runs beside it.
import { decideApproval, shouldResend, usesBarrier, usesFleetBarrier, type ApprovalRole } from './leader.js';
import type { RunnerServices, Tracked } from './runner-context.js';
import type { JournalEntry, Rule } from './types.js';

/** A failed approval is tried again while the event stays Scheduled, backing off up to this. */
const APPROVAL_RETRY_MAX_MS = 30_000;

export class Approval {
  readonly #c: RunnerServices;

  constructor(services: RunnerServices) {
    this.#c = services;
  }

  /** Approves once the margin has passed, if this VM may (leader, self, any, or standby after its wait). */
  async approve(tracked: Tracked, rule: Rule, entry: JournalEntry, readyAt: number): Promise<void> {
    const c = this.#c;
    const { log } = tracked;
    const waits = AbortSignal.any([c.stopped, tracked.ended.signal]);
    if (tracked.unjournaled) return;
    if (entry.approval !== null) {
      const sentAt = Date.parse(entry.approval.sentAt);
      if (!shouldResend(tracked.event, sentAt, c.now())) {
        log.info(
          { sentAt: entry.approval.sentAt, as: entry.approval.as, status: tracked.event.status },
          'already approved (journal): not sending it again',
        );
        return;
      }
      log.warn({ sentAt: entry.approval.sentAt }, 'approved over a minute ago and still Scheduled: sending the approval once more');
    }
    const margin = rule.approvalMarginSeconds * 1000;
    if (margin > 0) {
      const at = readyAt + margin;
      log.info({ marginSeconds: rule.approvalMarginSeconds, at: new Date(at).toISOString() }, 'holding the approval back for the margin');
      if (!(await c.wait(at - c.now(), waits))) return;
    }
    const firstSeenAt = Date.parse(entry.firstSeenAt);
    const kubeBarrier = c.kubernetes !== null && usesBarrier(rule, c.config.kubernetes);
    for (;;) {
      const decision = decideApproval({
        leader: c.config.leader,
        event: tracked.event,
        vmName: c.vmName,
        firstSeenAt,
        now: c.now(),
        // A controller's own preparation covered every VM the event names: nothing to wait for.
        barrier: c.forEveryVm !== true && (kubeBarrier || (c.fleet !== null && usesFleetBarrier(rule, c.config.budget))),
      });
      if (decision.kind === 'skip') {
        log.info({ reason: decision.reason }, 'not approving');
        return;
      }
      if (decision.kind === 'barrier') {
        const outcome = kubeBarrier
          ? await c.kubernetes!.awaitBarrier({
              event: () => tracked.event,
              vmName: c.vmName,
              signal: waits,
              log,
              dryRun: c.dryRun,
            })
          : await c.fleet!.awaitBarrier({ event: () => tracked.event, signal: waits, log });
        if (outcome === 'aborted') return;
        // Sent as any node the event names would; #send skips an event that has Started meanwhile.
        await this.#send(tracked, 'any', waits);
        return;
      }
      if (decision.kind === 'approve') {
        await this.#send(tracked, decision.as, waits);
        return;
      }
      log.info({ at: new Date(decision.at).toISOString() }, 'standby: approving then if the event is still Scheduled');
      if (!(await c.wait(decision.at - c.now(), waits))) return;
    }
  }

  /** Sends the approval, retrying while the event is Scheduled; journals it once it is taken. */
  async #send(tracked: Tracked, as: ApprovalRole, waits: AbortSignal): Promise<void> {
    const c = this.#c;
    const { log } = tracked;
    if (c.dryRun) {
      log.info({ as }, 'dry run: would approve');
      return;
    }
    // An approval is sent only while the journal can record it: unrecorded, a restart would send it again.
    if ((await c.durable.durable(tracked, 'approval', { signal: waits })) !== 'written') return;
    if (tracked.unjournaled) return;
    for (let failures = 0; ;) {
      if (tracked.event.status !== 'Scheduled') {
        log.info({ status: tracked.event.status }, 'not approving: the event is no longer Scheduled');
        return;
      }
      try {
        await c.approvals.approve(tracked.event.id, waits);
        c.durable.write(() => c.journal().approved(tracked.event.id, as));
        c.metrics.approvalsSent.inc({ role: as });
        log.info({ as }, 'approved');
        if (c.kubernetes !== null && tracked.rule?.actions.some((a) => a.type === 'kubernetes')) {
          await c.kubernetes.approved(tracked.event, log);
        }
        await c.durable.durable(tracked, 'recording the approval');
        return;
      } catch (err) {
        if (waits.aborted) return;
        if (c.approvals.refused(err)) {
          log.error({ err: (err as Error).message }, 'IMDS refused the approval; not retrying');
          return;
        }
        failures += 1;
        const delay = Math.min(APPROVAL_RETRY_MAX_MS, 1000 * 2 ** (failures - 1));
        log.warn({ err: (err as Error).message, retryInMs: delay }, 'approval failed; retrying');
        if (!(await c.wait(delay, waits))) return;
      }
    }
  }
}
