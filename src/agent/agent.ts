// The agent put together: start-up (journal, status server, this VM's name, the integrations), an
// IMDS monitor feeding the per-event runner, and shutdown. The rules live in the parts it wires.
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ScheduledEventsClient } from '../client/index.js';
import { sleep as abortableSleep } from '../client/retry.js';
import { wallClock } from '../shared/clock.js';
import { runAction as defaultRunAction } from './actions.js';
import type { FleetCoordinator } from './coordination/coordinator.js';
import type { FleetStore } from './coordination/store.js';
import { DurableJournal } from './durable-journal.js';
import { resolveVmIdentity } from './identity.js';
import { ImdsMonitor } from './imds-monitor.js';
import { imdsAccess, imdsApprovals, type ImdsAccess } from './imds-requests.js';
import { STARTUP_RETRY_MAX_MS, startFleet, startKubernetes, type IntegrationContext } from './integrations.js';
import { Journal } from './journal.js';
import type { KubeApi } from './kubernetes/api.js';
import type { KubernetesRuntime } from './kubernetes/runtime.js';
import type { Logger } from './logger.js';
import { AgentMetrics } from './metrics.js';
import type { EventMonitor } from './monitor.js';
import { EventRunner } from './runner.js';
import type { ApprovalSender, RunAction } from './runner-context.js';
import type { AgentServices } from './services.js';
import { sharedApprovalRisks } from './shared-approval.js';
import { startStatusServer, type StatusServer } from './server.js';
import type { AgentConfig } from './types.js';

export { actionStep, type ActionStep } from './action-phase.js';
export { outcomeWhileAway } from './imds-monitor.js';
export { eventFromEntry } from './journal.js';

/**
 * Where events come from and approvals go instead of this VM's IMDS: the controller's Event Grid
 * feed (eventgrid/). The agent then acts for every VM an event names (RunnerServices.forEveryVm).
 */
export interface EventFeed {
  /** The controller's name: its vmName in logs, in actions (FOREWARN_VM_NAME) and in a fleet store. */
  name: string;
  /** Built once start-up is over, from the agent's parts. */
  monitor(services: AgentServices & { durable: DurableJournal }): EventMonitor;
  approvals: ApprovalSender;
  /** /readyz's answer, the journal apart. */
  readiness(): { ready: boolean; reason: string };
}

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
  runAction?: RunAction;
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
  /** Events from elsewhere than IMDS (the controller); default: this VM's IMDS, polled. */
  feed?: EventFeed;
}

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
  readonly #runAction: RunAction;
  readonly #imds: ImdsAccess;
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
  readonly #feed: EventFeed | null;
  /** Set at start when the config has a `budget`. */
  #fleet: FleetCoordinator | null = null;
  /** Set once start-up is over: what is done about each event. */
  #runner: EventRunner | null = null;

  /** Stops polling and every wait. */
  readonly #stop = new AbortController();
  /** Aborts running actions: at the end of the shutdown grace, or on a second signal. */
  readonly #abortActions = new AbortController();
  readonly #work = new Set<Promise<void>>();
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
    this.#feed = options.feed ?? null;
    this.#imds = imdsAccess({
      client: options.client,
      config: this.config,
      metrics: this.metrics,
      now: this.#now,
      stopped: this.#stop.signal,
    });
    if (this.#feed === null) this.metrics.health = () => this.#imds.client.health;
    this.#services = {
      log: this.#log,
      metrics: this.metrics,
      now: this.#now,
      sleep: this.#sleep,
      wait: (ms, signal) => this.#wait(ms, signal),
      stopped: this.#stop.signal,
      track: (work) => this.#keep(work),
      journal: () => this.#journal!,
    };
    this.#durableJournal = new DurableJournal({ ...this.#services, path: this.config.journal });
    this.metrics.heldEvents = () => this.#durableJournal.heldEvents();
  }

  /** Why the agent is not ready apart from IMDS (the journal cannot be written), or null. */
  notReady(): string | null {
    return this.#journal === null ? null : this.#durableJournal.notReady();
  }

  get client(): ScheduledEventsClient {
    return this.#imds.client;
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
      const running = (): number => this.#runner?.runningActions ?? 0;
      this.#log.info({ runningActions: running(), graceSeconds: grace }, 'stopping: no more polling; waiting for running actions');
      graceTimer = setTimeout(() => {
        if (running() > 0)
          this.#log.warn(
            { runningActions: running() },
            'shutdown grace is over: aborting running actions; they will run again at the next start',
          );
        this.#abortActions.abort();
      }, grace * 1000);
    };
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    try {
      // A controller's own preparation covers every VM an event names: no VM is left preparing.
      if (this.#feed === null) {
        for (const risk of sharedApprovalRisks(this.config.rules, this.config.budget)) this.#log.warn({ rule: risk.rule }, risk.message);
      }
      this.#openJournal();
      await this.#startServer();
      if (!this.#stop.signal.aborted) await this.#resolveName();
      if (!this.#stop.signal.aborted) await this.#startKubernetes();
      if (!this.#stop.signal.aborted) await this.#startFleet();
      if (!this.#stop.signal.aborted) await this.#monitor().run(this.#startRunner(), this.#stop.signal);
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

  /** Where events come from: IMDS, polled, or the feed. */
  #monitor(): EventMonitor {
    if (this.#feed !== null) return this.#feed.monitor({ ...this.#services, durable: this.#durableJournal });
    return new ImdsMonitor({
      ...this.#services,
      client: this.#imds.client,
      countFailure: this.#imds.countFailure,
      pollIntervalSeconds: this.config.pollIntervalSeconds,
    });
  }

  /** What is done about each event, once this VM and its integrations are known. */
  #startRunner(): EventRunner {
    this.#runner = new EventRunner({
      ...this.#services,
      config: this.config,
      vmName: this.#vmName,
      dryRun: this.dryRun,
      durable: this.#durableJournal,
      actionsAborted: this.#abortActions.signal,
      runAction: this.#runAction,
      kubernetes: this.#kubernetes,
      fleet: this.#fleet,
      approvals: this.#feed?.approvals ?? imdsApprovals(this.#imds),
      forEveryVm: this.#feed !== null,
    });
    return this.#runner;
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

  async #startServer(): Promise<void> {
    if (this.config.listen === null) return;
    this.#server = await startStatusServer({
      listen: this.config.listen,
      metrics: this.metrics,
      health: () => this.#imds.client.health,
      ...(this.#feed !== null ? { ready: () => this.#feed!.readiness() } : {}),
      readyWithinSeconds: this.config.readyWithinSeconds,
      notReady: () => this.notReady(),
    });
    this.#log.info({ url: this.#server.url }, 'serving /metrics, /healthz and /readyz');
    this.#onListening?.(this.#server.url);
  }

  /** IMDS may be down at boot: keep asking rather than exit and crash-loop. */
  async #resolveName(): Promise<void> {
    if (this.#feed !== null) {
      this.#vmName = this.#feed.name;
      this.#log.info({ name: this.#vmName, dryRun: this.dryRun }, 'controller started');
      return;
    }
    const client = this.#imds.client;
    for (let failures = 0; ; failures++) {
      try {
        ({ name: this.#vmName, resourceId: this.#resourceId } = await resolveVmIdentity(this.config, client, {
          signal: this.#stop.signal,
        }));
        this.#log.info({ vmName: this.#vmName, endpoint: client.endpoint, dryRun: this.dryRun }, 'agent started');
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
    // The controller's config refuses kubernetes actions: its steps act on the node the agent runs on.
    if (this.#feed !== null) return;
    const started = await startKubernetes(this.#integrationContext(), {
      api: this.#kubeApi,
      client: this.#imds.client,
      resourceId: this.#resourceId,
    });
    if (started === null) return;
    this.#kubernetes = started.runtime;
    this.#resourceId = started.resourceId;
  }

  async #startFleet(): Promise<void> {
    this.#fleet = await startFleet(this.#integrationContext(), this.#fleetStore, this.#feed !== null ? 'per-event' : 'per-vm');
  }

  /** Background work the agent waits for when it stops. */
  #keep(work: Promise<void>): void {
    this.#work.add(work);
    void work.finally(() => this.#work.delete(work));
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
}
