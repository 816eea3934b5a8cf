// The agent's loop: poll IMDS, prepare for each event, approve when it is safe, recover when it is over.
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EventTracker,
  ImdsError,
  ImdsProtocolError,
  ScheduledEventsClient,
  affects,
  eventKey,
  type EventChange,
  type EventsDocument,
  type ScheduledEvent,
} from '../client/index.js';
import { sleep as abortableSleep } from '../client/retry.js';
import { wallClock } from '../shared/clock.js';
import { KILL_GRACE_MS, runAction as defaultRunAction } from './actions.js';
import { resolveVmIdentity } from './identity.js';
import { DurableJournal } from './durable-journal.js';
import type { AgentServices } from './services.js';
import { Journal } from './journal.js';
import { decideApproval, shouldResend, takesFleetSlot, usesBarrier, usesFleetBarrier, type ApprovalRole } from './leader.js';
import type { Logger } from './logger.js';
import { AgentMetrics } from './metrics.js';
import { groupState, settleGroup } from './process-group.js';
import { matchRule } from './rules.js';
import { sharedApprovalRisks } from './shared-approval.js';
import { startStatusServer, type StatusServer } from './server.js';
import type {
  Action,
  ActionContext,
  ActionRecord,
  ActionResult,
  AgentConfig,
  JournalEntry,
  KubernetesAction,
  Phase,
  Rule,
} from './types.js';
import type { KubeApi } from './kubernetes/api.js';
import type { KubernetesRuntime, KubernetesStep } from './kubernetes/runtime.js';
import type { FleetCoordinator, FleetStep } from './coordination/coordinator.js';
import type { FleetStore } from './coordination/store.js';
import { STARTUP_RETRY_MAX_MS, startFleet, startKubernetes, type IntegrationContext } from './integrations.js';

export interface AgentOptions {
  config: AgentConfig;
  logger: Logger;
  /** Log every decision, do nothing: no actions, no approvals, the journal file untouched. */
  dryRun?: boolean;
  /** Default: one built from the config, counting failed requests into the metrics. */
  client?: ScheduledEventsClient;
  /** Default: Journal.open(config.journal) (a throwaway copy under --dry-run). */
  journal?: Journal;
  metrics?: AgentMetrics;
  /** Epoch ms. */
  now?: () => number;
  runAction?: (action: Action, ctx: ActionContext) => Promise<ActionResult>;
  /** Must reject when the signal aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Called once the status server listens, with its base URL. */
  onListening?: (url: string) => void;
  /** The Kubernetes API for kubernetes actions; default: from KUBECONFIG or the pod's service account. */
  kubeApi?: KubeApi;
  /** Where NODE_NAME and KUBECONFIG are read; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** The fleet store for `budget`; default: the one its backend names. */
  fleetStore?: FleetStore;
}

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

/**
 * How an event that vanished unseen ended (while the agent was not running, or between two polls).
 * It Started if the journal saw it Started, this VM approved it, or its NotBefore has passed;
 * otherwise it was cancelled.
 */
export function outcomeWhileAway(entry: JournalEntry, now: number): 'completed' | 'cancelled' {
  if (entry.event.status === 'Started' || entry.approval !== null) return 'completed';
  const notBefore = entry.event.notBefore === null ? Number.NaN : Date.parse(entry.event.notBefore);
  return !Number.isNaN(notBefore) && notBefore <= now ? 'completed' : 'cancelled';
}

/** The event as the journal last saw it, rebuilt for actions run after a restart. */
export function eventFromEntry(entry: JournalEntry): ScheduledEvent {
  const e = entry.event;
  const parsed = e.notBefore === null ? null : new Date(e.notBefore);
  const notBefore = parsed !== null && !Number.isNaN(parsed.getTime()) ? parsed : null;
  return {
    id: entry.eventId,
    status: e.status,
    type: e.type,
    resourceType: 'VirtualMachine',
    resources: [...e.resources],
    notBefore,
    description: e.description,
    source: e.source,
    durationInSeconds: e.durationInSeconds,
    raw: {
      EventId: entry.eventId,
      EventStatus: e.status,
      EventType: e.type,
      ResourceType: 'VirtualMachine',
      Resources: [...e.resources],
      NotBefore: notBefore === null ? '' : notBefore.toUTCString(),
      Description: e.description,
      ...(e.source !== null ? { EventSource: e.source } : {}),
      DurationInSeconds: e.durationInSeconds,
    },
  };
}

/** One live event: the latest sight of it and the work queued for it, run one step at a time. */
interface Tracked {
  key: string;
  event: ScheduledEvent;
  rule: Rule | null;
  /** Aborted when the event leaves the document: waits for approval end, preparation stops. */
  ended: AbortController;
  queue: Promise<void>;
  log: Logger;
  /** Prepared while the journal could not be written (policy prepare-before-notbefore): never approved by this run. */
  unjournaled: boolean;
}

/** Where an event waits for the journal, for /readyz and the logs. */
/** A failed approval is tried again while the event stays Scheduled, backing off up to this. */
const APPROVAL_RETRY_MAX_MS = 30_000;

/**
 * Errors a journal write gets over once space returns (EIO: the atomic writer's short write on a
 * full disk); others at start-up mean a wrong path or permissions, and stop the agent.
 */
function isSpaceError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOSPC' || code === 'EDQUOT' || code === 'EIO';
}

export class Agent {
  readonly config: AgentConfig;
  readonly metrics: AgentMetrics;
  readonly dryRun: boolean;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #runAction: (action: Action, ctx: ActionContext) => Promise<ActionResult>;
  readonly #client: ScheduledEventsClient;
  /** True when the client counts its own failed requests (our fetch wrapper); else reads count them. */
  readonly #countsRequests: boolean;
  #journal: Journal | null;
  #dryRunDir: string | null = null;
  #server: StatusServer | null = null;
  #vmName = '';
  /** IMDS compute's resourceId, once read. */
  #resourceId: string | null = null;
  readonly #onListening: ((url: string) => void) | undefined;
  readonly #kubeApi: KubeApi | undefined;
  readonly #env: NodeJS.ProcessEnv;
  /** Set at start when a rule has a kubernetes action. */
  #kubernetes: KubernetesRuntime | null = null;
  readonly #fleetStore: FleetStore | undefined;
  /** Set at start when the config has a `budget`. */
  #fleet: FleetCoordinator | null = null;

  /** Stops polling and every wait. */
  readonly #stop = new AbortController();
  /** Aborts running actions: at the end of the shutdown grace, or on a second signal. */
  readonly #abortActions = new AbortController();
  readonly #tracked = new Map<string, Tracked>();
  readonly #work = new Set<Promise<void>>();
  #running = 0;
  /** What the agent's parts share of it; built once. */
  readonly #services: AgentServices;
  readonly #durableJournal: DurableJournal;

  constructor(options: AgentOptions) {
    this.config = options.config;
    this.#log = options.logger;
    this.dryRun = options.dryRun ?? false;
    this.metrics = options.metrics ?? new AgentMetrics();
    this.#now = options.now ?? wallClock;
    this.#sleep = options.sleep ?? abortableSleep;
    this.#runAction = options.runAction ?? defaultRunAction;
    this.#journal = options.journal ?? null;
    this.#onListening = options.onListening;
    this.#kubeApi = options.kubeApi;
    this.#env = options.env ?? process.env;
    this.#fleetStore = options.fleetStore;
    if (options.client) {
      this.#client = options.client;
      this.#countsRequests = false;
    } else {
      this.#client = new ScheduledEventsClient({
        ...(this.config.endpoint !== null ? { endpoint: this.config.endpoint } : {}),
        apiVersion: this.config.apiVersion,
        fetch: this.#countingFetch,
        now: this.#now,
      });
      this.#countsRequests = true;
    }
    this.metrics.health = () => this.#client.health;
    this.#services = {
      log: this.#log,
      metrics: this.metrics,
      now: this.#now,
      sleep: this.#sleep,
      wait: (ms, signal) => this.#wait(ms, signal),
      stopped: this.#stop.signal,
      track: (work) => this.#keep(work),
      journal: () => this.#j,
    };
    this.#durableJournal = new DurableJournal({ ...this.#services, path: this.config.journal });
    this.metrics.heldEvents = () => this.#durableJournal.heldEvents();
  }

  /** Why the agent is not ready apart from IMDS (the journal cannot be written), or null. */
  notReady(): string | null {
    return this.#journal === null ? null : this.#durableJournal.notReady();
  }

  get client(): ScheduledEventsClient {
    return this.#client;
  }

  get vmName(): string {
    return this.#vmName;
  }

  /** Asks the agent to stop: polling ends at once, running actions get shutdownGraceSeconds. */
  stop(): void {
    this.#stop.abort();
  }

  /** Aborts running actions now (a second SIGTERM); the journal keeps them `running`, so they run again next time. */
  abortActions(): void {
    this.#abortActions.abort();
  }

  /**
   * Runs until `signal` aborts (or stop()); then waits for running actions up to the grace,
   * flushes the journal and closes the status server. Start-up problems (an unopenable journal,
   * a port in use) reject; IMDS failures never do: they are logged, counted and retried.
   */
  async run(signal?: AbortSignal): Promise<void> {
    const onAbort = (): void => this.stop();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) this.stop();
    let graceTimer: NodeJS.Timeout | undefined;
    const onStop = (): void => {
      const grace = this.config.shutdownGraceSeconds;
      this.#log.info({ runningActions: this.#running, graceSeconds: grace }, 'stopping: no more polling; waiting for running actions');
      graceTimer = setTimeout(() => {
        if (this.#running > 0)
          this.#log.warn(
            { runningActions: this.#running },
            'shutdown grace is over: aborting running actions; they will run again at the next start',
          );
        this.#abortActions.abort();
      }, grace * 1000);
    };
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    try {
      for (const risk of sharedApprovalRisks(this.config.rules, this.config.budget)) this.#log.warn({ rule: risk.rule }, risk.message);
      this.#openJournal();
      await this.#startServer();
      if (!this.#stop.signal.aborted) await this.#resolveName();
      if (!this.#stop.signal.aborted) await this.#startKubernetes();
      if (!this.#stop.signal.aborted) await this.#startFleet();
      if (!this.#stop.signal.aborted) await this.#poll();
      // Everything queued ends once its running action does; waits end with the stop signal.
      while (this.#work.size > 0) await Promise.allSettled([...this.#work]);
    } finally {
      this.#stop.abort();
      clearTimeout(graceTimer);
      signal?.removeEventListener('abort', onAbort);
      try {
        this.#journal?.flush();
      } catch (err) {
        this.#log.error({ err }, 'could not write the journal at shutdown');
      }
      await this.#server?.close();
      await this.#fleet?.close().catch((err: unknown) => this.#log.warn({ err: (err as Error).message }, 'closing the fleet store failed'));
      if (this.#dryRunDir !== null) rmSync(this.#dryRunDir, { recursive: true, force: true });
      this.#log.info('stopped');
    }
  }

  #openJournal(): void {
    if (this.#journal !== null) return;
    let path = this.config.journal;
    if (this.dryRun) {
      // A throwaway copy: decisions follow the real journal, and the real file is never written.
      this.#dryRunDir = mkdtempSync(join(tmpdir(), 'forewarn-dry-run-'));
      const copy = join(this.#dryRunDir, 'journal.json');
      if (existsSync(path)) copyFileSync(path, copy);
      path = copy;
    }
    const journal = Journal.open(path, { logger: this.#log, now: this.#now });
    this.#journal = journal;
    // Writing once now finds an unwritable path at start-up rather than mid-event. A full disk is
    // not a wrong path: start, not ready, and hold events until the journal can be written.
    try {
      journal.flush();
      journal.prune();
    } catch (err) {
      if (!isSpaceError(err)) throw err;
      this.#log.error(
        { err: (err as Error).message, journal: this.config.journal },
        'the journal cannot be written at start-up; events will be held until it can',
      );
      this.#durableJournal.failed(err as Error);
    }
    this.#log.info({ journal: this.config.journal, entries: journal.entries().length, dryRun: this.dryRun }, 'journal open');
  }

  get #j(): Journal {
    return this.#journal!;
  }

  async #startServer(): Promise<void> {
    if (this.config.listen === null) return;
    this.#server = await startStatusServer({
      listen: this.config.listen,
      metrics: this.metrics,
      health: () => this.#client.health,
      readyWithinSeconds: this.config.readyWithinSeconds,
      notReady: () => this.notReady(),
    });
    this.#log.info({ url: this.#server.url }, 'serving /metrics, /healthz and /readyz');
    this.#onListening?.(this.#server.url);
  }

  /** IMDS may be down at boot: keep asking rather than exit and crash-loop. */
  async #resolveName(): Promise<void> {
    for (let failures = 0; ; failures++) {
      try {
        ({ name: this.#vmName, resourceId: this.#resourceId } = await resolveVmIdentity(this.config, this.#client, {
          signal: this.#stop.signal,
        }));
        this.#log.info({ vmName: this.#vmName, endpoint: this.#client.endpoint, dryRun: this.dryRun }, 'agent started');
        return;
      } catch (err) {
        if (this.#stop.signal.aborted) return;
        const delay = Math.min(STARTUP_RETRY_MAX_MS, 1000 * 2 ** failures);
        this.#log.error({ err: (err as Error).message, retryInMs: delay }, 'cannot learn this VM name yet; retrying');
        if (!(await this.#wait(delay, this.#stop.signal))) return;
      }
    }
  }

  /** What the integrations need of the agent. */
  #integrationContext(): IntegrationContext {
    return { ...this.#services, config: this.config, env: this.#env, vmName: this.#vmName, dryRun: this.dryRun };
  }

  async #startKubernetes(): Promise<void> {
    const started = await startKubernetes(this.#integrationContext(), {
      api: this.#kubeApi,
      client: this.#client,
      resourceId: this.#resourceId,
    });
    if (started === null) return;
    this.#kubernetes = started.runtime;
    this.#resourceId = started.resourceId;
  }

  async #startFleet(): Promise<void> {
    this.#fleet = await startFleet(this.#integrationContext(), this.#fleetStore);
  }

  /** Background work the agent waits for when it stops. */
  #keep(work: Promise<void>): void {
    this.#work.add(work);
    void work.finally(() => this.#work.delete(work));
  }

  /** What the fleet budget gets for one event: its journal record and when to stop. */
  #fleetStep(tracked: Tracked, phase: Phase): FleetStep {
    const id = tracked.event.id;
    return {
      event: tracked.event,
      signal: phase === 'prepare' ? AbortSignal.any([this.#abortActions.signal, tracked.ended.signal]) : this.#abortActions.signal,
      log: tracked.log,
      record: () => this.#j.get(id)?.budget,
      save: async (record) => {
        this.#durableJournal.write(() => this.#j.budget(id, record));
        return (await this.#durableJournal.durable(tracked, 'budget record')) !== 'stopped';
      },
    };
  }

  /** What a kubernetes action of this event gets from the agent: its journal record and when to stop. */
  #kubernetesStep(tracked: Tracked, phase: Phase, log: Logger): KubernetesStep {
    const id = tracked.event.id;
    return {
      event: tracked.event,
      // Preparation stops when the event ends too; recovery only at shutdown.
      signal: phase === 'prepare' ? AbortSignal.any([this.#abortActions.signal, tracked.ended.signal]) : this.#abortActions.signal,
      log,
      record: () => this.#j.get(id)?.kubernetes,
      save: async (record) => {
        this.#durableJournal.write(() => this.#j.kubernetes(id, record));
        return (await this.#durableJournal.durable(tracked, 'kubernetes record')) !== 'stopped';
      },
    };
  }

  /**
   * Reads the document every pollIntervalSeconds and diffs it with the SDK's EventTracker (what
   * watch() does), but sees every read: the first document, even an empty one, is what tells a
   * restarted agent which of its journal's events ended while it was away.
   */
  async #poll(): Promise<void> {
    const tracker = new EventTracker();
    const intervalMs = this.config.pollIntervalSeconds * 1000;
    let failures = 0;
    let first = true;
    while (!this.#stop.signal.aborted) {
      try {
        const doc = await this.#client.getDocument({ signal: this.#stop.signal });
        if (failures > 0) this.#log.info({ failedReads: failures }, 'IMDS answers again');
        failures = 0;
        this.metrics.incarnation.set(doc.incarnation);
        if (first) {
          first = false;
          this.#reconcile(doc);
        }
        const changes = tracker.apply(doc);
        if (changes.length > 0) this.#log.debug({ incarnation: doc.incarnation, changes: changes.length }, 'document changed');
        for (const change of changes) this.#onChange(change);
      } catch (err) {
        if (this.#stop.signal.aborted) break;
        failures += 1;
        if (!this.#countsRequests || err instanceof ImdsProtocolError) this.metrics.imdsErrors.inc({ status: errorStatus(err) });
        const health = this.#client.health;
        this.#log.warn(
          { err: (err as Error).message, consecutiveFailures: failures, msSinceSuccess: health.msSinceSuccess },
          'reading IMDS failed; carrying on',
        );
      }
      // As watch() does: after failures the interval doubles, up to the client's longest backoff.
      const base =
        failures === 0 ? intervalMs : Math.min(Math.max(intervalMs, this.#client.retry.maxDelayMs), intervalMs * 2 ** (failures - 1));
      // ±10% so a fleet of VMs does not poll in step.
      const delay = base * (1 + 0.1 * (2 * Math.random() - 1));
      if (!(await this.#wait(delay, this.#stop.signal))) break;
    }
  }

  /**
   * The first read after start: an entry with no outcome whose event is gone ended while the agent
   * was away (the VM rebooted, say), so recover from it now; an entry whose recovery was cut short
   * finishes it. Entries still in the document carry on when their change comes in.
   */
  #reconcile(doc: EventsDocument): void {
    const present = new Set(doc.events.map((e) => eventKey(e.id)));
    for (const entry of this.#j.entries()) {
      if (entry.recoveredAt !== null) continue;
      const event = eventFromEntry(entry);
      const log = this.#eventLog(event);
      if (entry.outcome !== null) {
        log.info({ outcome: entry.outcome }, 'finishing recovery cut short by the last stop');
        this.#enqueue(this.#track(event, log), () => this.#recover(eventKey(entry.eventId), entry.outcome!));
      } else if (!present.has(eventKey(entry.eventId))) {
        const outcome = outcomeWhileAway(entry, this.#now());
        log.info(
          { outcome, lastSeenStatus: entry.event.status, approved: entry.approval !== null },
          `the event ended while the agent was not running: ${outcome}; recovering`,
        );
        this.#enqueue(this.#track(event, log), () => this.#recover(eventKey(entry.eventId), outcome));
      }
    }
  }

  #onChange(change: EventChange): void {
    const { event, kind } = change;
    const key = eventKey(event.id);
    if (kind === 'completed' || kind === 'cancelled') {
      this.#onGone(event, kind);
      return;
    }
    const tracked = this.#tracked.get(key);
    if (tracked === undefined) {
      this.#firstSight(event, kind);
      return;
    }
    tracked.event = event;
    // A failed write is retried by the journal loop; nothing waits on this refresh.
    this.#durableJournal.write(() => this.#j.ensure(event, tracked.rule?.name ?? null));
    if (kind === 'started') {
      this.metrics.eventsSeen.inc({ type: event.type, status: 'Started' });
      tracked.log.info({ status: event.status }, 'the event has Started');
    } else {
      tracked.log.info({ status: event.status, notBefore: event.notBefore?.toISOString() ?? null }, 'the event changed');
    }
  }

  #firstSight(event: ScheduledEvent, kind: 'scheduled' | 'started' | 'updated'): void {
    const log = this.#eventLog(event);
    const existing = this.#j.get(event.id);
    if (existing !== undefined && existing.outcome !== null) {
      // Its end was already handled; a service that shows it again must not restart the work.
      log.warn({ outcome: existing.outcome }, 'the journal has this event as ended; ignoring it');
      return;
    }
    this.metrics.eventsSeen.inc({ type: event.type, status: event.status });
    // The rule chosen first keeps the event across restarts, even once a status match no longer holds.
    const byName = existing?.rule != null ? (this.config.rules.find((r) => r.name === existing.rule) ?? null) : null;
    const rule = byName ?? matchRule(this.config.rules, event, this.#vmName);
    this.#durableJournal.write(() => this.#j.ensure(event, rule?.name ?? existing?.rule ?? null));
    const entry = this.#j.get(event.id)!;
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

  #onGone(event: ScheduledEvent, seen: 'completed' | 'cancelled'): void {
    const key = eventKey(event.id);
    const tracked = this.#tracked.get(key) ?? this.#track(event, this.#eventLog(event));
    tracked.event = event;
    tracked.ended.abort();
    const entry = this.#j.get(event.id);
    // Gone while last seen Scheduled reads as cancelled, but an event approved (or past NotBefore)
    // can start and finish between two polls: the journal knows better.
    const outcome = seen === 'cancelled' && entry !== undefined ? outcomeWhileAway(entry, this.#now()) : seen;
    tracked.log.info({ outcome, lastSeenStatus: event.status }, outcome === 'completed' ? 'the event is over' : 'the event was cancelled');
    if (entry === undefined) return;
    this.#enqueue(tracked, () => this.#recover(key, outcome));
  }

  #track(event: ScheduledEvent, log: Logger): Tracked {
    const key = eventKey(event.id);
    let tracked = this.#tracked.get(key);
    if (tracked === undefined) {
      tracked = { key, event, rule: null, ended: new AbortController(), queue: Promise.resolve(), log, unjournaled: false };
      this.#tracked.set(key, tracked);
    }
    return tracked;
  }

  #eventLog(event: ScheduledEvent): Logger {
    return this.#log.child({ eventId: event.id, eventType: event.type, source: event.source });
  }

  /** Work for one event runs in order; different events run side by side. */
  #enqueue(tracked: Tracked, step: () => Promise<void>): void {
    const next = tracked.queue.then(step).catch((err: unknown) => {
      tracked.log.error({ err }, 'handling the event failed');
    });
    tracked.queue = next;
    this.#keep(next);
  }

  /**
   * Scheduled (or first seen Started): run the rule's actions, then approve as its policy says.
   * `immediately` approves at once while the actions run; `after-actions` only once every action
   * succeeded; `never` leaves the event to start at NotBefore.
   */
  async #prepareAndApprove(tracked: Tracked, rule: Rule, entry: JournalEntry): Promise<void> {
    const { log } = tracked;
    // Nothing is done for an event the journal has not recorded: a restart would not know of it.
    const seen = await this.#durableJournal.durable(tracked, 'first sight', this.#prepareHold(tracked));
    if (seen === 'stopped') return;
    if (seen === 'unjournaled') this.#goUnjournaled(tracked, log);
    const hadPrepared = Object.keys(entry.actions).some((k) => k.startsWith('prepare:')) || entry.approval !== null;
    if (tracked.event.status === 'Started' && !hadPrepared) {
      log.warn(
        { rule: rule.name },
        'the event arrived already Started (e.g. a hardware failure): running the actions anyway; there is nothing to approve',
      );
    }
    const readyAt = this.#now();
    const early = rule.approval === 'immediately' ? this.#approve(tracked, rule, entry, readyAt) : null;
    const fleet = this.#fleet;
    const namesThisVm = affects(tracked.event, this.#vmName);
    let ok = true;
    // A slot before the first preparation action, for this VM's own maintenance only.
    if (fleet !== null && namesThisVm && !tracked.unjournaled && takesFleetSlot(rule, this.config.budget)) {
      const slot = await fleet.acquire(this.#fleetStep(tracked, 'prepare'));
      if (!slot.ok) {
        if (!tracked.ended.signal.aborted && !this.#stop.signal.aborted) log.error({ error: slot.error }, 'no budget slot: not preparing');
        ok = false;
      }
    }
    if (ok) ok = await this.#runPhase(tracked, 'prepare', rule.actions);
    // Said in the store for the barrier of whichever VM approves, whatever this rule's approval.
    if (ok && !this.dryRun && fleet !== null && namesThisVm && !rule.actions.some((a) => a.type === 'kubernetes')) {
      await fleet.markPrepared(tracked.event, log);
    }
    // The node says it is prepared, for the barrier of whichever node approves (this one's included).
    if (ok && !this.dryRun && this.#kubernetes !== null && rule.actions.some((a) => a.type === 'kubernetes')) {
      if (affects(tracked.event, this.#vmName)) await this.#kubernetes.markPrepared(tracked.event, log);
    }
    if (tracked.unjournaled) {
      log.error(
        { rule: rule.name, prepared: ok },
        'prepared without a journal record: not approving (an approval the journal cannot record could be sent twice after a restart); the event starts at NotBefore',
      );
      if ((await this.#durableJournal.durable(tracked, 'recording the unjournaled preparation')) === 'written') {
        log.info('the journal now records the preparation that ran unjournaled');
      }
      await early;
      return;
    }
    if (rule.approval === 'after-actions') {
      if (ok) await this.#approve(tracked, rule, entry, this.#now());
      else if (!tracked.ended.signal.aborted && !this.#stop.signal.aborted) {
        log.warn({ rule: rule.name }, 'preparation did not succeed: not approving; the event starts at NotBefore');
      }
    } else if (rule.approval === 'never') {
      log.info({ rule: rule.name }, 'approval is "never" for this rule: the event starts at NotBefore');
    }
    await early;
  }

  /**
   * Runs one phase's actions in order, each recorded before and after. Preparation stops at the
   * first failure (later steps may rely on it) and when the event ends; recovery runs every action.
   * Returns whether every action has succeeded.
   */
  async #runPhase(tracked: Tracked, phase: Phase, actions: readonly Action[]): Promise<boolean> {
    let ok = true;
    for (const [i, action] of actions.entries()) {
      const key = `${phase}:${i}`;
      const log = tracked.log.child({ phase, action: action.name, key });
      if (this.#stop.signal.aborted) return false;
      if (phase === 'prepare' && tracked.ended.signal.aborted) {
        log.info('the event has ended: skipping the rest of the preparation');
        return false;
      }
      const step = actionStep(this.#j.get(tracked.event.id)?.actions[key]);
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
      const prepareHold = phase === 'prepare' ? this.#prepareHold(tracked) : {};
      const unjournaled = (): boolean => phase === 'prepare' && tracked.unjournaled;
      /** Set when the program was never let run because its process group could not be recorded. */
      let gateRefused = false;
      /** Waits for the journal at this step; false when the agent or the event stopped. */
      const record = async (what: string): Promise<boolean> => {
        if (unjournaled()) return true;
        const r = await this.#durableJournal.durable(tracked, `${key} ${what}`, prepareHold);
        if (r === 'unjournaled') this.#goUnjournaled(tracked, log);
        return r !== 'stopped';
      };
      const ctx: ActionContext = {
        event: tracked.event,
        vmName: this.#vmName,
        phase,
        idempotencyKey: tracked.event.id,
        signal: this.#abortActions.signal,
        dryRun: this.dryRun,
        logger: log,
        ...(this.#kubernetes !== null ? { kubernetes: this.#kubernetesAction(tracked, phase, log) } : {}),
        // The program runs only once its process group is on disk (or the policy runs it unjournaled).
        recordProcess: async (group) => {
          this.#durableJournal.write(() => this.#j.actionProcess(tracked.event.id, key, group));
          if (!(await record('process group'))) {
            gateRefused = true;
            throw new Error('the journal could not record its process group before the agent or the event stopped');
          }
        },
      };
      if (this.dryRun) {
        // runAction logs what it would run, and runs nothing.
        await this.#runAction(action, ctx);
        continue;
      }
      this.#durableJournal.write(() => this.#j.actionStarted(tracked.event.id, key));
      if (!(await record('start'))) return false;
      if (unjournaled()) log.error({ actionType: action.type }, 'action started unjournaled: the journal cannot record it');
      else log.info({ actionType: action.type }, 'action started');
      this.#running += 1;
      let result: ActionResult;
      try {
        result = await this.#runAction(action, ctx);
      } finally {
        this.#running -= 1;
      }
      if (this.#abortActions.signal.aborted || gateRefused) {
        // Left `running` in the journal on purpose: it runs again at the next start.
        log.warn(
          gateRefused
            ? 'action not run: its process group could not be recorded; it will run again at the next start'
            : 'action aborted by shutdown; it will run again at the next start',
        );
        return false;
      }
      this.#durableJournal.write(() => this.#j.actionFinished(tracked.event.id, key, result, { unjournaled: unjournaled() }));
      this.metrics.action(phase, action.name, result.ok, result.durationMs);
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

  #kubernetesAction(
    tracked: Tracked,
    phase: Phase,
    log: Logger,
  ): (action: KubernetesAction) => Promise<{ ok: boolean; error: string | null }> {
    const runtime = this.#kubernetes!;
    return async (action) => {
      // [seed] Every VM of a tenant sees its events, "whichever VM it affects": readers check Resources.
      // Another VM's maintenance is no reason to cordon or drain this node. Recovery still runs: it
      // undoes only what the node's annotations say this agent did.
      if (phase === 'prepare' && !affects(tracked.event, this.#vmName)) {
        log.info({ resources: tracked.event.resources }, 'the event does not name this VM: leaving the node as it is');
        return { ok: true, error: null };
      }
      const step = this.#kubernetesStep(tracked, phase, log);
      return phase === 'prepare' ? runtime.prepare(action, step) : runtime.recover(step);
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
    const group = this.#j.get(tracked.event.id)?.actions[key]?.process;
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
      now: this.#now,
      sleep: this.#sleep,
      signal: this.#stop.signal,
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
      if (!this.#stop.signal.aborted) log.info(fields, 'the event has ended: no longer waiting for that process group');
      return false;
    }
    log.info({ pgid: group.pgid }, state === 'ours' ? 'the earlier copy has ended' : 'that process group has ended');
    return true;
  }

  /** Approves once the margin has passed, if this VM may (leader, self, any, or standby after its wait). */
  async #approve(tracked: Tracked, rule: Rule, entry: JournalEntry, readyAt: number): Promise<void> {
    const { log } = tracked;
    const waits = AbortSignal.any([this.#stop.signal, tracked.ended.signal]);
    if (tracked.unjournaled) return;
    if (entry.approval !== null) {
      const sentAt = Date.parse(entry.approval.sentAt);
      if (!shouldResend(tracked.event, sentAt, this.#now())) {
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
      if (!(await this.#wait(at - this.#now(), waits))) return;
    }
    const firstSeenAt = Date.parse(entry.firstSeenAt);
    const kubeBarrier = this.#kubernetes !== null && usesBarrier(rule, this.config.kubernetes);
    for (;;) {
      const decision = decideApproval({
        leader: this.config.leader,
        event: tracked.event,
        vmName: this.#vmName,
        firstSeenAt,
        now: this.#now(),
        barrier: kubeBarrier || (this.#fleet !== null && usesFleetBarrier(rule, this.config.budget)),
      });
      if (decision.kind === 'skip') {
        log.info({ reason: decision.reason }, 'not approving');
        return;
      }
      if (decision.kind === 'barrier') {
        const outcome = kubeBarrier
          ? await this.#kubernetes!.awaitBarrier({
              event: () => tracked.event,
              vmName: this.#vmName,
              signal: waits,
              log,
              dryRun: this.dryRun,
            })
          : await this.#fleet!.awaitBarrier({ event: () => tracked.event, signal: waits, log });
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
      if (!(await this.#wait(decision.at - this.#now(), waits))) return;
    }
  }

  /** POSTs the approval, retrying while the event is Scheduled; journals it once IMDS accepts it. */
  async #send(tracked: Tracked, as: ApprovalRole, waits: AbortSignal): Promise<void> {
    const { log } = tracked;
    if (this.dryRun) {
      log.info({ as }, 'dry run: would approve');
      return;
    }
    // An approval is sent only while the journal can record it: unrecorded, a restart would send it again.
    if ((await this.#durableJournal.durable(tracked, 'approval', { signal: waits })) !== 'written') return;
    if (tracked.unjournaled) return;
    for (let failures = 0; ;) {
      if (tracked.event.status !== 'Scheduled') {
        log.info({ status: tracked.event.status }, 'not approving: the event is no longer Scheduled');
        return;
      }
      try {
        await this.#client.approve(tracked.event.id, { signal: waits });
        this.#durableJournal.write(() => this.#j.approved(tracked.event.id, as));
        this.metrics.approvalsSent.inc({ role: as });
        log.info({ as }, 'approved');
        if (this.#kubernetes !== null && tracked.rule?.actions.some((a) => a.type === 'kubernetes')) {
          await this.#kubernetes.approved(tracked.event, log);
        }
        await this.#durableJournal.durable(tracked, 'recording the approval');
        return;
      } catch (err) {
        if (waits.aborted) return;
        if (!this.#countsRequests) this.metrics.imdsErrors.inc({ status: errorStatus(err) });
        if (err instanceof ImdsError && err.status === 400) {
          log.error({ err: err.message }, 'IMDS refused the approval; not retrying');
          return;
        }
        failures += 1;
        const delay = Math.min(APPROVAL_RETRY_MAX_MS, 1000 * 2 ** (failures - 1));
        log.warn({ err: (err as Error).message, retryInMs: delay }, 'approval failed; retrying');
        if (!(await this.#wait(delay, waits))) return;
      }
    }
  }

  /** Completed or cancelled: record the outcome, run onComplete or onCancel, then mark it recovered. */
  async #recover(key: string, outcome: 'completed' | 'cancelled'): Promise<void> {
    const tracked = this.#tracked.get(key);
    if (tracked === undefined) return;
    const entry = this.#j.get(tracked.event.id);
    if (entry === undefined || entry.recoveredAt !== null) {
      this.#tracked.delete(key);
      return;
    }
    if (entry.outcome === null) this.#durableJournal.write(() => this.#j.ended(entry.eventId, outcome));
    if ((await this.#durableJournal.durable(tracked, 'recording the end')) === 'stopped') return;
    const rule = entry.rule === null ? null : (this.config.rules.find((r) => r.name === entry.rule) ?? tracked.rule);
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
    await this.#runPhase(tracked, phase, actions);
    // A stop mid-recovery leaves it unfinished in the journal; the next start completes it.
    if (!this.dryRun && !this.#phaseFinished(entry.eventId, phase, actions.length)) return;
    // Recovery has ended: the prepared mark off and the slot back (SPEC §4: held through the impact until now).
    if (!this.dryRun && this.#fleet !== null && (entry.budget !== undefined || affects(tracked.event, this.#vmName))) {
      const back = await this.#fleet.recover(this.#fleetStep(tracked, phase));
      if (!back.ok) return;
    }
    this.#durableJournal.write(() => this.#j.recovered(entry.eventId));
    if ((await this.#durableJournal.durable(tracked, 'recording the recovery')) === 'stopped') return;
    this.#tracked.delete(key);
    this.#durableJournal.write(() => this.#j.prune());
    tracked.log.info({ outcome }, 'done with this event');
  }

  /** [choice] The deadline after which preparation runs without a journal record: prepareWithinSeconds before NotBefore, or now once Started. */
  #prepareHold(tracked: Tracked): { unjournaledAt?: () => number; signal: AbortSignal } {
    const { policy, prepareWithinSeconds } = this.config.journalUnwritable;
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

  #goUnjournaled(tracked: Tracked, log: Logger): void {
    if (tracked.unjournaled) return;
    tracked.unjournaled = true;
    log.error(
      {
        policy: this.config.journalUnwritable.policy,
        prepareWithinSeconds: this.config.journalUnwritable.prepareWithinSeconds,
        notBefore: tracked.event.notBefore?.toISOString() ?? null,
        status: tracked.event.status,
      },
      'the journal still cannot be written and NotBefore is near: preparing anyway, unjournaled, and not approving',
    );
  }

  /** Whether every action of a recovery phase has run to an end (succeeded or failed). */
  #phaseFinished(eventId: string, phase: Phase, count: number): boolean {
    const records = this.#j.get(eventId)?.actions ?? {};
    for (let i = 0; i < count; i++) {
      const status = records[`${phase}:${i}`]?.status;
      if (status !== 'succeeded' && status !== 'failed') return false;
    }
    return true;
  }

  /** Sleeps until `ms` has passed (true) or `signal` aborts (false). */
  async #wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    try {
      await this.#sleep(Math.max(0, ms), signal);
      return true;
    } catch {
      return false;
    }
  }

  /** Every IMDS request that fails, retries included, counted by status. */
  readonly #countingFetch: typeof fetch = async (input, init) => {
    try {
      const response = await fetch(input, init);
      if (response.status >= 400) this.metrics.imdsErrors.inc({ status: String(response.status) });
      return response;
    } catch (err) {
      if (!this.#stop.signal.aborted) this.metrics.imdsErrors.inc({ status: 'network' });
      throw err;
    }
  };
}

function errorStatus(err: unknown): string {
  if (err instanceof ImdsError) return String(err.status);
  if (err instanceof ImdsProtocolError) return 'invalid';
  return 'network';
}
