// What a kubernetes action does for one event: take a budget slot, cordon, drain; and afterwards
// uncordon (only Forewarn's cordon) and give the slot back once the node is Ready. Every change on
// the cluster is journaled, and the cordon is also on the node, so a restart finishes the work.
import type { ScheduledEvent } from '../../client/index.js';
import type { AgentMetrics } from '../metrics.js';
import type { ActionLogger, KubernetesAction, KubernetesConfig, KubernetesPolicy, KubernetesRecord } from '../types.js';
import type { KubeApi, NodeRef } from './api.js';
import { AGENT_SELECTOR, barrierView, markPrepared, register, unmarkPrepared, type NamedVm } from './barrier.js';
import { namesOnly, sameVm } from '../coordination/barrier.js';
import { Budget, type Slot } from './budget.js';
import { waitForSlot } from '../coordination/slot-wait.js';
import { describeRemaining, drainNode, optedInForFreeze, type DrainSelection } from './drain.js';
import { checkProviderId, cordon, parseTaint, uncordon } from './node.js';

/** What an action run gives the runtime: its event, and its record in the journal. */
export interface KubernetesStep {
  event: ScheduledEvent;
  signal: AbortSignal;
  log: ActionLogger;
  record(): KubernetesRecord | undefined;
  /** Writes the record; resolves false if the journal could not take it before the agent stopped. */
  save(record: KubernetesRecord): Promise<boolean>;
}

export interface StepResult {
  ok: boolean;
  error: string | null;
}

export interface RuntimeOptions {
  api: KubeApi;
  config: KubernetesConfig;
  nodeName: string;
  metrics: AgentMetrics;
  log: ActionLogger;
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** [choice] Policies when the config names none: a Freeze (seconds) is ridden out; anything longer is drained. */
export const DEFAULT_POLICY: Readonly<Record<string, KubernetesPolicy>> = {
  freeze: 'none',
  reboot: 'drain',
  redeploy: 'drain',
  preempt: 'drain',
  terminate: 'drain',
};

/** A failed API call in recovery is tried again after this, doubling up to the max. */
const RECOVER_RETRY_FIRST_MS = 1_000;
const RECOVER_RETRY_MAX_MS = 30_000;
/** How often Ready is checked before the slot goes back. */
const READY_POLL_MS = 2_000;
/** How often a prepared node looks again at the other nodes an event names. */
const BARRIER_POLL_MS = 1_000;

/** How a wait at the barrier ended: every named node prepared, the deadline, the event no longer Scheduled, or a stop. */
export type BarrierOutcome = 'complete' | 'deadline' | 'not-scheduled' | 'aborted';

export interface BarrierWait {
  /** The event as last seen: it may Start (another node approved) or move its NotBefore while this waits. */
  event: () => ScheduledEvent;
  vmName: string;
  signal: AbortSignal;
  log: ActionLogger;
  /** Look once and say what would be waited for; write nothing. */
  dryRun?: boolean;
}

const describeVms = (vms: NamedVm[]) => vms.map((v) => `${v.nodes.join('/')} (${v.vm})`);

export class KubernetesRuntime {
  readonly budget: Budget | null;
  readonly #o: RuntimeOptions;
  #ref: NodeRef | null = null;

  constructor(options: RuntimeOptions) {
    this.#o = options;
    const b = options.config.budget;
    this.budget =
      b === null
        ? null
        : new Budget(options.api, {
            namespace: b.namespace,
            name: b.name,
            slots: b.slots,
            leaseDurationSeconds: b.leaseDurationSeconds,
            holder: options.nodeName,
            now: options.now,
          });
  }

  get nodeName(): string {
    return this.#o.nodeName;
  }

  /** Refuses to start on a node that is not this VM (SPEC §4): a wrong NODE_NAME would drain another machine. */
  async checkNode(vm: { name: string; resourceId: string | null }): Promise<void> {
    const node = await this.#o.api.getNode(this.#o.nodeName);
    checkProviderId(node, vm);
    this.#ref = { name: node.name, uid: node.uid };
  }

  /**
   * Labels this node as one that runs the agent and names its VM in an annotation, so that the
   * agents of other nodes know whom an event's Resources name (the barrier). Throws when it cannot.
   */
  async register(vmName: string): Promise<void> {
    const outcome = await register(this.#o.api, this.#o.nodeName, vmName);
    if (outcome === 'registered') this.#o.log.info({ node: this.#o.nodeName, vmName }, 'labelled the node as one that runs the agent');
  }

  /** register() again with backoff until it works or `signal` aborts: until then other nodes do not wait for this one. */
  async registerRetrying(vmName: string, signal: AbortSignal): Promise<void> {
    let delay = RECOVER_RETRY_FIRST_MS;
    while (!signal.aborted) {
      try {
        await this.#o.sleep(delay, signal);
      } catch {
        return;
      }
      try {
        await this.register(vmName);
        return;
      } catch (err) {
        this.#o.log.warn(
          { err: (err as Error).message, retryInMs: delay },
          'cannot label the node as one that runs the agent yet; trying again',
        );
      }
      delay = Math.min(RECOVER_RETRY_MAX_MS, delay * 2);
    }
  }

  /** Marks the node prepared for the event; false (logged) when the API server did not take it: the barrier tries again. */
  async markPrepared(event: ScheduledEvent, log: ActionLogger): Promise<boolean> {
    try {
      if ((await markPrepared(this.#o.api, this.#o.nodeName, event.id)) === 'marked') {
        log.info({ node: this.#o.nodeName }, 'marked the node prepared for the event');
      }
      return true;
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'cannot mark the node prepared for the event yet');
      return false;
    }
  }

  /** The barrier's deadline: NotBefore minus the margin, as for preparation; none without a NotBefore. */
  barrierDeadline(event: ScheduledEvent): number {
    const notBefore = event.notBefore?.getTime() ?? Number.NaN;
    return Number.isNaN(notBefore) ? Number.POSITIVE_INFINITY : notBefore - this.#o.config.marginSeconds * 1000;
  }

  /**
   * Waits, this node being prepared, until every node the event names that runs the agent is
   * prepared too ('complete'), or the deadline comes ('deadline': approve anyway, said in the log
   * and in a Warning event). The state is on the nodes, read again every second, so a restart or
   * another agent's death changes nothing but the wait: a dead agent's node costs the event its
   * wait until the deadline. This node's own mark is written (again) first.
   */
  async awaitBarrier(wait: BarrierWait): Promise<BarrierOutcome> {
    const { vmName, signal, log } = wait;
    let marked = wait.dryRun === true;
    let waitingLogged: string | null = null;
    let listFailed = false;
    let notRunningLogged = false;
    for (;;) {
      if (signal.aborted) return 'aborted';
      const event = wait.event();
      if (event.status !== 'Scheduled') return 'not-scheduled';
      if (!marked) marked = await this.markPrepared(event, log);
      if (namesOnly(event, vmName)) return 'complete';
      let waiting: NamedVm[] | null = null;
      try {
        const view = barrierView(event, await this.#o.api.listNodes(AGENT_SELECTOR), vmName);
        if (listFailed) log.info({}, 'the nodes that run the agent can be listed again');
        listFailed = false;
        waiting = view.waiting;
        if (!notRunningLogged) {
          notRunningLogged = true;
          const running = view.named.map((n) => n.vm);
          const others = event.resources.filter((r) => !running.some((vm) => sameVm(r, vm)) && !sameVm(r, vmName));
          if (others.length > 0) {
            log.info({ notWaitedFor: others }, 'the event names VMs with no node that runs the agent: not waiting for them');
          }
        }
        if (waiting.length === 0) {
          log.info(
            { nodes: describeVms(view.named) },
            'every node the event names that runs the agent is prepared: approving for all of them',
          );
          return 'complete';
        }
      } catch (err) {
        if (!listFailed) log.warn({ err: (err as Error).message }, 'cannot list the nodes that run the agent; trying again');
        listFailed = true;
      }
      const deadline = this.barrierDeadline(event);
      const now = this.#o.now();
      const notPrepared = waiting === null ? null : describeVms(waiting);
      if (wait.dryRun === true) {
        log.info({ waitingFor: notPrepared }, 'dry run: would wait for the other nodes the event names before approving');
        return 'complete';
      }
      if (now >= deadline) {
        const who = notPrepared === null ? 'nodes it could not list' : notPrepared.join(', ');
        this.#o.metrics.kubernetesSteps.inc({ step: 'barrier-deadline' });
        log.error(
          { notPrepared, deadline: new Date(deadline).toISOString() },
          'the deadline came before every node the event names was prepared: approving anyway',
        );
        await this.#event(
          'Warning',
          'BarrierDeadline',
          `Forewarn approves ${event.type} ${event.id} at its deadline with nodes not prepared: ${who}`,
          log,
        );
        return 'deadline';
      }
      const key = notPrepared?.join(', ') ?? null;
      if (key !== null && key !== waitingLogged) {
        waitingLogged = key;
        log.info(
          { waitingFor: notPrepared, deadline: new Date(deadline).toISOString() },
          'this node is prepared: waiting for the other nodes the event names before approving',
        );
      }
      try {
        await this.#o.sleep(Math.min(BARRIER_POLL_MS, deadline - now), signal);
      } catch {
        return 'aborted';
      }
    }
  }

  policyFor(action: KubernetesAction, eventType: string): KubernetesPolicy {
    const configured = Object.entries(this.#o.config.policy).find(([type]) => type.toLowerCase() === eventType.toLowerCase())?.[1];
    const policy = configured ?? DEFAULT_POLICY[eventType.toLowerCase()] ?? 'drain';
    return policy === 'drain' && !action.drain ? 'cordon' : policy;
  }

  /** When preparation must be over: NotBefore minus the margin, or the action's timeout if sooner. */
  deadline(action: KubernetesAction, event: ScheduledEvent, startedAt: number): number {
    const timeout = startedAt + action.timeoutSeconds * 1000;
    const notBefore = event.notBefore?.getTime() ?? Number.NaN;
    if (event.status !== 'Scheduled' || Number.isNaN(notBefore)) return timeout;
    return Math.min(timeout, notBefore - this.#o.config.marginSeconds * 1000);
  }

  async prepare(action: KubernetesAction, step: KubernetesStep): Promise<StepResult> {
    const { event, log } = step;
    const policy = this.policyFor(action, event.type);
    // [choice] Before a Freeze, pods labelled for it (Forewarn's label or AKS's) are evicted even when the
    // policy is none or cordon, the node cordoned first so they do not come back; no budget slot for that.
    let select: DrainSelection = 'all';
    if (event.type.toLowerCase() === 'freeze' && policy !== 'drain' && action.drain) {
      let optedIn: string[];
      try {
        optedIn = (await this.#o.api.listPodsOnNode(this.#o.nodeName)).filter(optedInForFreeze).map((p) => `${p.namespace}/${p.name}`);
      } catch (err) {
        this.#o.metrics.kubernetesSteps.inc({ step: 'failed' });
        return { ok: false, error: `cannot look for pods labelled for eviction on a Freeze: ${(err as Error).message}` };
      }
      if (optedIn.length > 0) {
        select = 'freeze-opt-in';
        log.info(
          { pods: optedIn, policy },
          'pods on the node are labelled for eviction on a Freeze: cordoning the node and evicting only them',
        );
      }
    }
    if (policy === 'none' && select === 'all') {
      log.info({ policy, eventType: event.type }, `kubernetes policy for ${event.type} is none: leaving the node as it is`);
      return { ok: true, error: null };
    }
    const deadline = this.deadline(action, event, this.#o.now());
    let record: KubernetesRecord = step.record() ?? { node: this.#o.nodeName, cordoned: false, slot: null, overBudget: false };
    try {
      if (this.budget !== null && policy !== 'none' && record.slot === null && !record.overBudget) {
        const slot = await this.#waitForSlot(step, deadline);
        if (slot === 'aborted') return { ok: false, error: 'aborted while waiting for a budget slot' };
        record = slot === null ? { ...record, overBudget: true } : { ...record, slot };
        if (!(await step.save(record))) return { ok: false, error: 'the journal could not record the budget slot' };
        this.#updateSlotsGauge();
      }
      const taint = this.#o.config.taint === null ? null : parseTaint(this.#o.config.taint, event.type);
      const { outcome, tainted, taintTaken, aks } = await cordon(this.#o.api, this.#o.nodeName, event.id, taint);
      if (aks) {
        log.info(
          { node: this.#o.nodeName },
          'AKS node auto-drain is at work on this node too (its VMEventScheduled condition or taint): Forewarn never undoes its cordon or taint',
        );
      }
      if (taintTaken) {
        log.info(
          { taint: taint?.key },
          'the node already has a taint with this key that Forewarn did not place: leaving it, and it stays afterwards',
        );
      }
      if (outcome === 'operator') {
        log.warn(
          { node: this.#o.nodeName },
          'the node was already cordoned by someone else: draining it, and it will stay cordoned afterwards',
        );
      } else {
        record = { ...record, cordoned: true, ...(tainted ? { taintPlaced: true } : {}) };
        if (!(await step.save(record))) return { ok: false, error: 'the journal could not record the cordon' };
        if (outcome === 'cordoned') {
          this.#o.metrics.kubernetesSteps.inc({ step: 'cordoned' });
          await this.#event('Normal', 'Cordoned', `Forewarn cordoned the node for ${event.type} ${event.id}`, log);
        }
      }
      if (policy === 'cordon' && select === 'all') return { ok: true, error: null };
      return await this.#drain(step, deadline, select);
    } catch (err) {
      this.#o.metrics.kubernetesSteps.inc({ step: 'failed' });
      return { ok: false, error: (err as Error).message };
    }
  }

  async #drain(step: KubernetesStep, deadline: number, select: DrainSelection): Promise<StepResult> {
    const { event, log } = step;
    this.#o.metrics.kubernetesSteps.inc({ step: 'draining' });
    const what = select === 'all' ? 'draining the node' : 'evicting the pods labelled for eviction on a Freeze';
    await this.#event('Normal', 'Draining', `Forewarn is ${what} for ${event.type} ${event.id}`, log);
    log.info({ deadline: new Date(deadline).toISOString(), select }, what);
    const report = await drainNode(this.#o.api, {
      node: this.#o.nodeName,
      select,
      deadline,
      localStorage: this.#o.config.localStorage,
      now: this.#o.now,
      sleep: this.#o.sleep,
      signal: step.signal,
      onEviction: (pod, outcome, detail) => {
        this.#o.metrics.kubernetesEvictions.inc({ outcome });
        const fields = { pod: `${pod.namespace}/${pod.name}`, outcome, ...(detail !== null ? { detail } : {}) };
        if (outcome === 'blocked' || outcome === 'error') log.warn(fields, 'eviction refused; trying again with backoff');
        else log.info(fields, 'pod evicted');
      },
    });
    if (report.drained) {
      this.#o.metrics.kubernetesSteps.inc({ step: 'drained' });
      log.info({ evicted: report.evicted, skipped: report.skipped }, 'the node is drained');
      await this.#event('Normal', 'Drained', `Forewarn drained the node: ${report.evicted.length} pod(s) evicted`, log);
      return { ok: true, error: null };
    }
    const failure = report.failure ?? 'deadline';
    const remaining = describeRemaining(report);
    const error =
      failure === 'aborted'
        ? `drain aborted with pods left: ${remaining}`
        : `drain deadline passed with pods left on the node: ${remaining}`;
    this.#o.metrics.kubernetesDrainFailures.inc({ reason: failure });
    this.#o.metrics.kubernetesSteps.inc({ step: 'failed' });
    log.error({ remaining: report.remaining, evicted: report.evicted }, error);
    if (failure === 'deadline') await this.#event('Warning', 'DrainFailed', `Forewarn could not drain the node in time: ${remaining}`, log);
    return { ok: false, error };
  }

  /** Waits for a slot until there is only minPrepareSeconds left; null then: prepare over budget. */
  async #waitForSlot(step: KubernetesStep, deadline: number): Promise<Slot | null | 'aborted'> {
    const budget = this.budget!;
    const slot = await waitForSlot({
      tryAcquire: () => budget.tryAcquire(),
      describe: (s) => `${s.namespace}/${s.name}`,
      store: 'the budget Leases',
      slots: budget.options.slots,
      deadline,
      minPrepareSeconds: this.#o.config.budget!.minPrepareSeconds,
      signal: step.signal,
      log: step.log,
      now: this.#o.now,
      sleep: this.#o.sleep,
    });
    if (slot === null) {
      this.#o.metrics.kubernetesOverBudget.inc();
      await this.#event('Warning', 'OverBudget', `No maintenance slot freed in time for ${step.event.type} ${step.event.id}`, step.log);
    }
    return slot;
  }

  /** After the event: take the event off Forewarn's cordon, then give the slot back once the node is Ready. Retries until done or aborted. */
  async recover(step: KubernetesStep): Promise<StepResult> {
    const { event, log } = step;
    let record = step.record();
    const taintKey = this.#o.config.taint === null ? null : parseTaint(this.#o.config.taint, event.type).key;
    let delay = RECOVER_RETRY_FIRST_MS;
    for (;;) {
      try {
        // The event is over: this node's prepared mark for it goes first (the barrier reads it no more).
        if ((await unmarkPrepared(this.#o.api, this.#o.nodeName, event.id)) === 'unmarked') {
          log.info({}, 'took the prepared mark off the node');
        }
        // The annotation decides, not the journal: a crash between the patch and the journal write is covered.
        const { outcome, heldBy, taintRemoved } = await uncordon(this.#o.api, this.#o.nodeName, event.id, taintKey);
        if (taintRemoved) log.info({ taint: taintKey }, 'removed the taint Forewarn placed');
        if (outcome === 'uncordoned') {
          this.#o.metrics.kubernetesSteps.inc({ step: 'uncordoned' });
          await this.#event('Normal', 'Uncordoned', `Forewarn uncordoned the node after ${event.type} ${event.id}`, log);
          log.info({}, 'uncordoned the node');
        } else if (outcome === 'kept') {
          // SPEC §4: never an operator's cordon. Forewarn's part is off; someone else's keeps the node cordoned.
          log.warn({ heldBy }, 'took Forewarn’s cordon off, but the node stays cordoned: someone else cordoned it too');
          const by = heldBy.join(', ');
          await this.#event(
            'Normal',
            'CordonKept',
            `Forewarn is done after ${event.type} ${event.id}; the node stays cordoned by ${by}`,
            log,
          );
        } else if (outcome === 'others-remain') {
          log.info({}, 'the node stays cordoned for another event Forewarn is handling');
        } else if (record?.cordoned !== true) {
          log.info({}, 'Forewarn did not cordon this node for this event: leaving it as it is');
        }
        if (record !== undefined && (record.cordoned || record.taintPlaced === true)) {
          record = { ...record, cordoned: false, ...(record.taintPlaced === true ? { taintPlaced: false } : {}) };
          if (!(await step.save(record))) return { ok: false, error: 'the journal could not record the uncordon' };
        }
        if (record?.slot != null) {
          if (!(await this.#waitReady(step))) return { ok: false, error: 'aborted while waiting for the node to be Ready' };
          const slot = record.slot;
          if (!this.#slotStillNeeded(step, slot)) await this.budget?.release(slot);
          log.info({ slot: `${slot.namespace}/${slot.name}` }, 'gave the budget slot back');
          record = { ...record, slot: null };
          if (!(await step.save(record))) return { ok: false, error: 'the journal could not record the slot given back' };
          this.#updateSlotsGauge();
        }
        return { ok: true, error: null };
      } catch (err) {
        log.warn({ err: (err as Error).message, retryInMs: delay }, 'recovering the node failed; trying again');
        try {
          await this.#o.sleep(delay, step.signal);
        } catch {
          return { ok: false, error: `aborted: ${(err as Error).message}` };
        }
        delay = Math.min(RECOVER_RETRY_MAX_MS, delay * 2);
      }
    }
  }

  /** Another event of this node still holding the same slot keeps it. */
  #slotStillNeeded(step: KubernetesStep, slot: Slot): boolean {
    const self = step.event.id.toLowerCase();
    return this.heldSlots().some((h) => h.eventId.toLowerCase() !== self && sameSlot(h.slot, slot));
  }

  /** Set by the agent: the slots its journal's unrecovered events hold. */
  heldSlots: () => { eventId: string; slot: Slot }[] = () => [];

  async #waitReady(step: KubernetesStep): Promise<boolean> {
    const until = this.#o.now() + this.#o.config.readyTimeoutSeconds * 1000;
    for (;;) {
      const node = await this.#o.api.getNode(this.#o.nodeName);
      if (node.ready) return true;
      if (this.#o.now() >= until) {
        step.log.warn(
          { readyTimeoutSeconds: this.#o.config.readyTimeoutSeconds },
          'the node is still not Ready: giving the slot back anyway',
        );
        return true;
      }
      try {
        await this.#o.sleep(READY_POLL_MS, step.signal);
      } catch {
        return false;
      }
    }
  }

  /** The event was approved: said on the node. */
  async approved(event: ScheduledEvent, log: ActionLogger): Promise<void> {
    this.#o.metrics.kubernetesSteps.inc({ step: 'approved' });
    await this.#event('Normal', 'Approved', `Forewarn approved ${event.type} ${event.id}: it may start now`, log);
  }

  /** Keeps every held slot's lease fresh (also after a restart, through the journal), until `signal` aborts. */
  async renewSlots(signal: AbortSignal): Promise<void> {
    const budget = this.budget;
    if (budget === null) return;
    const every = (budget.options.leaseDurationSeconds * 1000) / 3;
    while (!signal.aborted) {
      for (const slot of this.#updateSlotsGauge()) {
        try {
          if (!(await budget.renew(slot)))
            this.#o.log.warn({ slot: `${slot.namespace}/${slot.name}` }, 'lost a budget slot (it expired and was taken)');
        } catch (err) {
          this.#o.log.warn({ err: (err as Error).message }, 'cannot renew a budget slot; trying again');
        }
      }
      try {
        await this.#o.sleep(every, signal);
      } catch {
        return;
      }
    }
  }

  /** The distinct slots held now, also shown in the gauge. */
  #updateSlotsGauge(): Slot[] {
    const slots: Slot[] = [];
    for (const { slot } of this.heldSlots()) if (!slots.some((s) => sameSlot(s, slot))) slots.push(slot);
    this.#o.metrics.kubernetesSlotsHeld.set(slots.length);
    return slots;
  }

  /** Events are for people; failing to write one never fails the step. */
  async #event(type: 'Normal' | 'Warning', reason: string, message: string, log: ActionLogger): Promise<void> {
    try {
      // The node's uid, read once (at the start-up check): an event names the node it is about.
      if (this.#ref === null) {
        const node = await this.#o.api.getNode(this.#o.nodeName);
        this.#ref = { name: node.name, uid: node.uid };
      }
      await this.#o.api.createEvent({ node: this.#ref, type, reason, message, at: this.#o.now() });
    } catch (err) {
      log.warn({ err: (err as Error).message, reason }, 'cannot record a Kubernetes event on the node');
    }
  }
}

function sameSlot(a: Slot, b: Slot): boolean {
  return a.namespace === b.namespace && a.name === b.name;
}
