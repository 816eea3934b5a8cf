// One phase of an event's actions (prepare, complete, cancel) run with the journal: each recorded
// before and after, so a restart neither repeats a finished one nor runs two copies of an interrupted one.
import { affects } from '../client/index.js';
import { KILL_GRACE_MS } from './actions.js';
import type { Logger } from './logger.js';
import { groupState, settleGroup } from './process-group.js';
import { goUnjournaled, kubernetesStep, prepareHold, type RunnerServices, type Tracked } from './runner-context.js';
import type { Action, ActionContext, ActionRecord, ActionResult, KubernetesAction, Phase } from './types.js';

/** What to do with one action given its journal record. Pure, so the rules are tested alone. */
export type ActionStep = 'run' | 'rerun' | 'skip-succeeded' | 'skip-failed';

/**
 * A finished action is never run again for the same event; one the journal shows `running` was cut
 * short by a crash or a stop and runs again (so each runs at least once, and receivers get the
 * EventId to deduplicate); one that failed stays failed for that event.
 */
export function actionStep(record: ActionRecord | undefined): ActionStep {
  if (record === undefined) return 'run';
  if (record.status === 'succeeded') return 'skip-succeeded';
  if (record.status === 'failed') return 'skip-failed';
  return 'rerun';
}

export class ActionPhases {
  readonly #c: RunnerServices;
  #running = 0;

  constructor(services: RunnerServices) {
    this.#c = services;
  }

  /** How many actions run now, for the shutdown's log. */
  get running(): number {
    return this.#running;
  }

  /**
   * Runs one phase's actions in order, each recorded before and after. Preparation stops at the
   * first failure (later steps may rely on it) and when the event ends; recovery runs every action.
   * Returns whether every action has succeeded.
   */
  async run(tracked: Tracked, phase: Phase, actions: readonly Action[]): Promise<boolean> {
    const c = this.#c;
    let ok = true;
    for (const [i, action] of actions.entries()) {
      const key = `${phase}:${i}`;
      const log = tracked.log.child({ phase, action: action.name, key });
      if (c.stopped.aborted) return false;
      if (phase === 'prepare' && tracked.ended.signal.aborted) {
        log.info('the event has ended: skipping the rest of the preparation');
        return false;
      }
      const step = actionStep(c.journal().get(tracked.event.id)?.actions[key]);
      if (step === 'skip-succeeded') {
        log.debug('already succeeded for this event: not running it again');
        continue;
      }
      if (step === 'skip-failed') {
        log.info('already failed for this event: not running it again');
        ok = false;
        if (phase === 'prepare') return false;
        continue;
      }
      if (step === 'rerun') {
        log.warn('this action was interrupted (the agent stopped while it ran): running it again');
        if (!(await this.#awaitEarlierCopy(tracked, action, key, log))) return false;
      }
      const hold = phase === 'prepare' ? prepareHold(tracked, c.config.journalUnwritable) : {};
      const unjournaled = (): boolean => phase === 'prepare' && tracked.unjournaled;
      /** Set when the program was never let run because its process group could not be recorded. */
      let gateRefused = false;
      /** Waits for the journal at this step; false when the agent or the event stopped. */
      const record = async (what: string): Promise<boolean> => {
        if (unjournaled()) return true;
        const r = await c.durable.durable(tracked, `${key} ${what}`, hold);
        if (r === 'unjournaled') goUnjournaled(tracked, c.config.journalUnwritable, log);
        return r !== 'stopped';
      };
      const ctx: ActionContext = {
        event: tracked.event,
        vmName: c.vmName,
        phase,
        idempotencyKey: tracked.event.id,
        signal: c.actionsAborted,
        dryRun: c.dryRun,
        logger: log,
        ...(c.kubernetes !== null ? { kubernetes: this.#kubernetesAction(tracked, phase, log) } : {}),
        // The program runs only once its process group is on disk (or the policy runs it unjournaled).
        recordProcess: async (group) => {
          c.durable.write(() => c.journal().actionProcess(tracked.event.id, key, group));
          if (!(await record('process group'))) {
            gateRefused = true;
            throw new Error('the journal could not record its process group before the agent or the event stopped');
          }
        },
      };
      if (c.dryRun) {
        // runAction logs what it would run, and runs nothing.
        await c.runAction(action, ctx);
        continue;
      }
      c.durable.write(() => c.journal().actionStarted(tracked.event.id, key));
      if (!(await record('start'))) return false;
      if (unjournaled()) log.error({ actionType: action.type }, 'action started unjournaled: the journal cannot record it');
      else log.info({ actionType: action.type }, 'action started');
      this.#running += 1;
      let result: ActionResult;
      try {
        result = await c.runAction(action, ctx);
      } finally {
        this.#running -= 1;
      }
      if (c.actionsAborted.aborted || gateRefused) {
        // Left `running` in the journal on purpose: it runs again at the next start.
        log.warn(
          gateRefused
            ? 'action not run: its process group could not be recorded; it will run again at the next start'
            : 'action aborted by shutdown; it will run again at the next start',
        );
        return false;
      }
      c.durable.write(() => c.journal().actionFinished(tracked.event.id, key, result, { unjournaled: unjournaled() }));
      c.metrics.action(phase, action.name, result.ok, result.durationMs);
      if (!(await record('end'))) return false;
      if (result.ok) {
        log.info({ durationMs: Math.round(result.durationMs), attempts: result.attempts }, 'action succeeded');
      } else {
        log.error({ durationMs: Math.round(result.durationMs), attempts: result.attempts, error: result.error }, 'action failed');
        ok = false;
        if (phase === 'prepare') return false;
      }
    }
    return ok;
  }

  /** Whether every action of a recovery phase has run to an end (succeeded or failed). */
  finished(eventId: string, phase: Phase, count: number): boolean {
    const records = this.#c.journal().get(eventId)?.actions ?? {};
    for (let i = 0; i < count; i++) {
      const status = records[`${phase}:${i}`]?.status;
      if (status !== 'succeeded' && status !== 'failed') return false;
    }
    return true;
  }

  #kubernetesAction(
    tracked: Tracked,
    phase: Phase,
    log: Logger,
  ): (action: KubernetesAction) => Promise<{ ok: boolean; error: string | null }> {
    const c = this.#c;
    const kubernetes = c.kubernetes!;
    return async (action) => {
      // [seed] Every VM of a tenant sees its events, "whichever VM it affects": readers check Resources.
      // Another VM's maintenance is no reason to cordon or drain this node. Recovery still runs: it
      // undoes only what the node's annotations say this agent did.
      if (phase === 'prepare' && !affects(tracked.event, c.vmName)) {
        log.info({ resources: tracked.event.resources }, 'the event does not name this VM: leaving the node as it is');
        return { ok: true, error: null };
      }
      const step = kubernetesStep(c, tracked, phase, log);
      return phase === 'prepare' ? kubernetes.prepare(action, step) : kubernetes.recover(step);
    };
  }

  /**
   * An exec action recorded `running` whose process group is still alive (the last agent was
   * killed while it ran): wait for it up to its timeout from its start, then stop the group, so
   * two copies of one action never run at once. A group that cannot be proven to be the one that
   * agent started (process-group.ts) is never signalled: it is waited for until it ends, the agent
   * stops or, in preparation, the event ends. False when the wait ends before the group does.
   */
  async #awaitEarlierCopy(tracked: Tracked, action: Action, key: string, log: Logger): Promise<boolean> {
    const c = this.#c;
    const group = c.journal().get(tracked.event.id)?.actions[key]?.process;
    if (action.type !== 'exec' || group === undefined) return true;
    const state = groupState(group);
    if (state === 'gone') return true;
    const deadline = Date.parse(group.startedAt) + action.timeoutSeconds * 1000;
    // Whether it has a marker, not the marker: what proves a group ours stays in the 0600 journal.
    const fields = { pgid: group.pgid, startedAt: group.startedAt, journaledMarker: group.marker !== undefined };
    if (state === 'ours') {
      log.warn(
        { ...fields, waitUntil: new Date(deadline).toISOString() },
        'the interrupted action is still running (it outlived the last agent): waiting for it to end before running it again',
      );
    } else {
      log.warn(
        fields,
        "a process group with the interrupted action's number is alive, but it cannot be proven to be the one the last agent started: waiting for it to end before running the action again; it is never signalled",
      );
    }
    const ended = await settleGroup(group, {
      deadline,
      graceMs: KILL_GRACE_MS,
      now: c.now,
      sleep: c.sleep,
      signal: c.stopped,
      // An event that has ended needs no more preparation: no reason to wait on a stranger for it.
      ...(key.startsWith('prepare:') ? { unprovenUntil: tracked.ended.signal } : {}),
      onStop: (how) => log.warn({ pgid: group.pgid, signal: how }, 'the earlier copy ran past its timeout: stopping its process group'),
      onUnproven: () =>
        log.warn(
          fields,
          "the process group is past the action's timeout but cannot be proven to be the earlier copy: not signalling it; still waiting for it to end",
        ),
    });
    if (ended === 'aborted') {
      if (!c.stopped.aborted) log.info(fields, 'the event has ended: no longer waiting for that process group');
      return false;
    }
    log.info({ pgid: group.pgid }, state === 'ours' ? 'the earlier copy has ended' : 'that process group has ended');
    return true;
  }
}
