// The per-event runner: what is done about each event a monitor tells of, whatever the monitor. Each
// event's steps (prepare, approve, recover) queue one after another; different events run side by side.
import { eventKey, type ScheduledEvent } from '../client/index.js';
import { ActionPhases } from './action-phase.js';
import { Approval } from './approval.js';
import { takesFleetSlot } from './leader.js';
import { eventLogger, type Logger } from './logger.js';
import type { EventOutcome, EventSink, SeenKind } from './monitor.js';
import { matchRule } from './rules.js';
import { fleetStep, goUnjournaled, isOwnEvent, prepareHold, type RunnerServices, type Tracked } from './runner-context.js';
import type { JournalEntry, Phase, Rule } from './types.js';

export class EventRunner implements EventSink {
  readonly #c: RunnerServices;
  readonly #tracked = new Map<string, Tracked>();
  readonly #phases: ActionPhases;
  readonly #approval: Approval;

  constructor(services: RunnerServices) {
    this.#c = services;
    this.#phases = new ActionPhases(services);
    this.#approval = new Approval(services);
  }

  /** How many actions run now, for the shutdown's log. */
  get runningActions(): number {
    return this.#phases.running;
  }

  seen(event: ScheduledEvent, kind: SeenKind): void {
    const tracked = this.#tracked.get(eventKey(event.id));
    if (tracked === undefined) {
      this.#firstSight(event, kind);
      return;
    }
    tracked.event = event;
    // A failed write is retried by the journal loop; nothing waits on this refresh.
    this.#c.durable.write(() => this.#c.journal().ensure(event, tracked.rule?.name ?? null));
    if (kind === 'started') {
      this.#c.metrics.eventsSeen.inc({ type: event.type, status: 'Started' });
      tracked.log.info({ status: event.status }, 'the event has Started');
    } else {
      tracked.log.info({ status: event.status, notBefore: event.notBefore?.toISOString() ?? null }, 'the event changed');
    }
  }

  gone(event: ScheduledEvent, outcome: EventOutcome): void {
    const key = eventKey(event.id);
    const tracked = this.#track(event);
    tracked.event = event;
    tracked.ended.abort();
    tracked.log.info({ outcome, lastSeenStatus: event.status }, outcome === 'completed' ? 'the event is over' : 'the event was cancelled');
    if (this.#c.journal().get(event.id) === undefined) return;
    this.#enqueue(tracked, () => this.#recover(key, outcome));
  }

  unfinished(event: ScheduledEvent, outcome: EventOutcome): void {
    this.#enqueue(this.#track(event), () => this.#recover(eventKey(event.id), outcome));
  }

  #firstSight(event: ScheduledEvent, kind: SeenKind): void {
    const { config, durable, journal, metrics, vmName } = this.#c;
    const log = eventLogger(this.#c.log, event);
    const existing = journal().get(event.id);
    if (existing !== undefined && existing.outcome !== null) {
      // Its end was already handled; a service that shows it again must not restart the work.
      log.warn({ outcome: existing.outcome }, 'the journal has this event as ended; ignoring it');
      return;
    }
    metrics.eventsSeen.inc({ type: event.type, status: event.status });
    // The rule chosen first keeps the event across restarts, even once a status match no longer holds.
    const byName = existing?.rule != null ? (config.rules.find((r) => r.name === existing.rule) ?? null) : null;
    const rule = byName ?? matchRule(config.rules, event, vmName);
    durable.write(() => journal().ensure(event, rule?.name ?? existing?.rule ?? null));
    const entry = journal().get(event.id)!;
    const tracked = this.#track(event, log);
    tracked.rule = rule;
    const resumed = existing !== undefined;
    log.info(
      {
        kind,
        status: event.status,
        rule: rule?.name ?? null,
        resumed,
        notBefore: event.notBefore?.toISOString() ?? null,
        resources: event.resources,
      },
      rule === null ? 'new event; no rule matches it: nothing to do' : resumed ? 'event known from the journal; carrying on' : 'new event',
    );
    if (rule === null) return;
    this.#enqueue(tracked, () => this.#prepareAndApprove(tracked, rule, entry));
  }

  #track(event: ScheduledEvent, log?: Logger): Tracked {
    const key = eventKey(event.id);
    let tracked = this.#tracked.get(key);
    if (tracked === undefined) {
      tracked = {
        key,
        event,
        rule: null,
        ended: new AbortController(),
        queue: Promise.resolve(),
        log: log ?? eventLogger(this.#c.log, event),
        unjournaled: false,
      };
      this.#tracked.set(key, tracked);
    }
    return tracked;
  }

  /** Work for one event runs in order; different events run side by side. */
  #enqueue(tracked: Tracked, step: () => Promise<void>): void {
    const next = tracked.queue.then(step).catch((err: unknown) => {
      tracked.log.error({ err }, 'handling the event failed');
    });
    tracked.queue = next;
    this.#c.track(next);
  }

  /**
   * Scheduled (or first seen Started): run the rule's actions, then approve as its policy says.
   * `immediately` approves at once while the actions run; `after-actions` only once every action
   * succeeded; `never` leaves the event to start at NotBefore.
   */
  async #prepareAndApprove(tracked: Tracked, rule: Rule, entry: JournalEntry): Promise<void> {
    const c = this.#c;
    const { log } = tracked;
    // Nothing is done for an event the journal has not recorded: a restart would not know of it.
    const seen = await c.durable.durable(tracked, 'first sight', prepareHold(tracked, c.config.journalUnwritable));
    if (seen === 'stopped') return;
    if (seen === 'unjournaled') goUnjournaled(tracked, c.config.journalUnwritable, log);
    const hadPrepared = Object.keys(entry.actions).some((k) => k.startsWith('prepare:')) || entry.approval !== null;
    if (tracked.event.status === 'Started' && !hadPrepared) {
      log.warn(
        { rule: rule.name },
        'the event arrived already Started (e.g. a hardware failure): running the actions anyway; there is nothing to approve',
      );
    }
    const readyAt = c.now();
    const early = rule.approval === 'immediately' ? this.#approval.approve(tracked, rule, entry, readyAt) : null;
    const { fleet, kubernetes } = c;
    const namesThisVm = isOwnEvent(c, tracked.event);
    let ok = true;
    // A slot before the first preparation action, for this VM's own maintenance only.
    if (fleet !== null && namesThisVm && !tracked.unjournaled && takesFleetSlot(rule, c.config.budget)) {
      const slot = await fleet.acquire(fleetStep(c, tracked, 'prepare'));
      if (!slot.ok) {
        if (!tracked.ended.signal.aborted && !c.stopped.aborted) log.error({ error: slot.error }, 'no budget slot: not preparing');
        ok = false;
      }
    }
    if (ok) ok = await this.#phases.run(tracked, 'prepare', rule.actions);
    // Said in the store for the barrier of whichever VM approves, whatever this rule's approval.
    if (ok && !c.dryRun && fleet !== null && namesThisVm && !rule.actions.some((a) => a.type === 'kubernetes')) {
      await fleet.markPrepared(tracked.event, log);
    }
    // The node says it is prepared, for the barrier of whichever node approves (this one's included).
    if (ok && !c.dryRun && kubernetes !== null && rule.actions.some((a) => a.type === 'kubernetes')) {
      if (isOwnEvent(c, tracked.event)) await kubernetes.markPrepared(tracked.event, log);
    }
    if (tracked.unjournaled) {
      log.error(
        { rule: rule.name, prepared: ok },
        'prepared without a journal record: not approving (an approval the journal cannot record could be sent twice after a restart); the event starts at NotBefore',
      );
      if ((await c.durable.durable(tracked, 'recording the unjournaled preparation')) === 'written') {
        log.info('the journal now records the preparation that ran unjournaled');
      }
      await early;
      return;
    }
    if (rule.approval === 'after-actions') {
      if (ok) await this.#approval.approve(tracked, rule, entry, c.now());
      else if (!tracked.ended.signal.aborted && !c.stopped.aborted) {
        log.warn({ rule: rule.name }, 'preparation did not succeed: not approving; the event starts at NotBefore');
      }
    } else if (rule.approval === 'never') {
      log.info({ rule: rule.name }, 'approval is "never" for this rule: the event starts at NotBefore');
    }
    await early;
  }

  /** Completed or cancelled: record the outcome, run onComplete or onCancel, then mark it recovered. */
  async #recover(key: string, outcome: EventOutcome): Promise<void> {
    const c = this.#c;
    const tracked = this.#tracked.get(key);
    if (tracked === undefined) return;
    const entry = c.journal().get(tracked.event.id);
    if (entry === undefined || entry.recoveredAt !== null) {
      this.#tracked.delete(key);
      return;
    }
    if (entry.outcome === null) c.durable.write(() => c.journal().ended(entry.eventId, outcome));
    if ((await c.durable.durable(tracked, 'recording the end')) === 'stopped') return;
    const rule = entry.rule === null ? null : (c.config.rules.find((r) => r.name === entry.rule) ?? tracked.rule);
    if (rule === null && entry.rule !== null) {
      tracked.log.warn({ rule: entry.rule }, 'the rule that handled this event is no longer in the config: no recovery actions');
    }
    const phase: Phase = outcome === 'completed' ? 'complete' : 'cancel';
    const listed = rule === null ? [] : outcome === 'completed' ? rule.onComplete : rule.onCancel;
    // A kubernetes action undoes itself (uncordon, the budget slot back) without being listed again.
    const undo = listed.some((a) => a.type === 'kubernetes') ? [] : (rule?.actions.filter((a) => a.type === 'kubernetes') ?? []);
    const actions = [...listed, ...undo];
    if (actions.length > 0)
      tracked.log.info({ phase, actions: actions.length }, outcome === 'completed' ? 'recovering' : 'undoing the preparation');
    await this.#phases.run(tracked, phase, actions);
    // A stop mid-recovery leaves it unfinished in the journal; the next start completes it.
    if (!c.dryRun && !this.#phases.finished(entry.eventId, phase, actions.length)) return;
    // Recovery has ended: the prepared mark off and the slot back (SPEC §4: held through the impact until now).
    if (!c.dryRun && c.fleet !== null && (entry.budget !== undefined || isOwnEvent(c, tracked.event))) {
      const back = await c.fleet.recover(fleetStep(c, tracked, phase));
      if (!back.ok) return;
    }
    c.durable.write(() => c.journal().recovered(entry.eventId));
    if ((await c.durable.durable(tracked, 'recording the recovery')) === 'stopped') return;
    this.#tracked.delete(key);
    c.durable.write(() => c.journal().prune());
    tracked.log.info({ outcome }, 'done with this event');
  }
}
