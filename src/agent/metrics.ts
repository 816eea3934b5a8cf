// The agent's Prometheus metrics, in a registry of its own so an embedding process keeps its own.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Health } from '../client/index.js';
import type { Phase } from './types.js';

export const METRIC_PREFIX = 'forewarn_agent_';

export class AgentMetrics {
  readonly registry = new Registry();
  readonly eventsSeen: Counter<'type' | 'status'>;
  readonly actionsRun: Counter<'phase' | 'action'>;
  readonly actionsFailed: Counter<'phase' | 'action'>;
  readonly actionDuration: Histogram<'phase' | 'action'>;
  readonly approvalsSent: Counter<'role'>;
  readonly imdsErrors: Counter<'status'>;
  readonly incarnation: Gauge;
  readonly journalWriteFailures: Counter;
  readonly kubernetesSteps: Counter<'step'>;
  readonly kubernetesEvictions: Counter<'outcome'>;
  readonly kubernetesDrainFailures: Counter<'reason'>;
  readonly kubernetesOverBudget: Counter;
  readonly kubernetesSlotsHeld: Gauge;
  readonly budgetOverBudget: Counter<'backend'>;
  readonly budgetSlotsHeld: Gauge<'backend'>;
  readonly budgetSlotsLost: Counter<'backend'>;
  readonly budgetStoreErrors: Counter<'backend' | 'operation'>;
  readonly barrierOutcomes: Counter<'backend' | 'outcome'>;
  /** The controller's: Event Grid notifications, by what became of them. */
  readonly notifications: Counter<'outcome'>;
  /** The controller's: ARM acknowledge requests that failed, retries included. */
  readonly armErrors: Counter<'status'>;
  /** The controller's: events it closed itself, their Completed or Canceled never having arrived. */
  readonly unheardEnds: Counter<'status'>;
  /** Set by the agent once it has a client, so the gauge is computed at scrape time. */
  health: (() => Health) | null = null;
  /** Set by the agent: how many events wait for the journal. */
  heldEvents: (() => number) | null = null;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    const p = METRIC_PREFIX;
    this.eventsSeen = new Counter({
      name: `${p}events_seen_total`,
      help: 'Scheduled events seen, counted once per event and status (Scheduled, Started)',
      labelNames: ['type', 'status'],
      registers,
    });
    this.actionsRun = new Counter({
      name: `${p}actions_run_total`,
      help: 'Actions run, by phase and action name',
      labelNames: ['phase', 'action'],
      registers,
    });
    this.actionsFailed = new Counter({
      name: `${p}actions_failed_total`,
      help: 'Actions that failed after their retries, by phase and action name',
      labelNames: ['phase', 'action'],
      registers,
    });
    this.actionDuration = new Histogram({
      name: `${p}action_duration_seconds`,
      help: 'How long actions took, retries included',
      labelNames: ['phase', 'action'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900],
      registers,
    });
    this.approvalsSent = new Counter({
      name: `${p}approvals_sent_total`,
      help: 'Approvals IMDS accepted, by the role this VM approved in (leader, standby, any)',
      labelNames: ['role'],
      registers,
    });
    this.imdsErrors = new Counter({
      name: `${p}imds_errors_total`,
      help: 'Failed IMDS requests, retries included, by HTTP status ("network" when there was no answer)',
      labelNames: ['status'],
      registers,
    });
    this.incarnation = new Gauge({ name: `${p}document_incarnation`, help: 'DocumentIncarnation of the last document read', registers });
    this.journalWriteFailures = new Counter({
      name: `${p}journal_write_failures_total`,
      help: 'Journal writes that failed (a full disk, an I/O error), retries included',
      registers,
    });
    this.kubernetesSteps = new Counter({
      name: `${p}kubernetes_steps_total`,
      help: 'Steps of kubernetes actions on this node: cordoned, draining, drained, approved, uncordoned, failed',
      labelNames: ['step'],
      registers,
    });
    this.kubernetesEvictions = new Counter({
      name: `${p}kubernetes_evictions_total`,
      help: 'Eviction requests, by outcome: evicted, gone (404), blocked (a PodDisruptionBudget, 429), error',
      labelNames: ['outcome'],
      registers,
    });
    this.kubernetesDrainFailures = new Counter({
      name: `${p}kubernetes_drain_failures_total`,
      help: 'Drains that ended with pods left on the node, by reason: deadline, aborted',
      labelNames: ['reason'],
      registers,
    });
    this.kubernetesOverBudget = new Counter({
      name: `${p}kubernetes_over_budget_total`,
      help: 'Events prepared without a budget slot, because none freed before their deadline',
      registers,
    });
    this.kubernetesSlotsHeld = new Gauge({
      name: `${p}kubernetes_budget_slots_held`,
      help: 'Budget slots (Leases) this node holds',
      registers,
    });
    this.budgetOverBudget = new Counter({
      name: `${p}budget_over_budget_total`,
      help: 'Events prepared without a fleet budget slot: none freed, or the store could not be reached, before their deadline',
      labelNames: ['backend'],
      registers,
    });
    this.budgetSlotsHeld = new Gauge({
      name: `${p}budget_slots_held`,
      help: 'Fleet budget slots this VM holds a share of',
      labelNames: ['backend'],
      registers,
    });
    this.budgetSlotsLost = new Counter({
      name: `${p}budget_slots_lost_total`,
      help: 'Fleet budget slots found lost while held (expired in the store: this VM could not renew them in time)',
      labelNames: ['backend'],
      registers,
    });
    this.budgetStoreErrors = new Counter({
      name: `${p}budget_store_errors_total`,
      help: 'Failed requests to the fleet store, by operation',
      labelNames: ['backend', 'operation'],
      registers,
    });
    this.barrierOutcomes = new Counter({
      name: `${p}barrier_outcomes_total`,
      help: 'How waits at the fleet barrier ended: complete (every named VM prepared), deadline, not-scheduled',
      labelNames: ['backend', 'outcome'],
      registers,
    });
    this.notifications = new Counter({
      name: `${p}eventgrid_notifications_total`,
      help: 'Controller: Event Grid notifications by outcome: taken, duplicate (same id), stale (older than a status taken), ignored (not a scheduled event), malformed (a delivery refused with 400)',
      labelNames: ['outcome'],
      registers,
    });
    this.armErrors = new Counter({
      name: `${p}arm_errors_total`,
      help: 'Controller: failed ARM acknowledge requests, retries included, by HTTP status ("network" when there was no answer)',
      labelNames: ['status'],
      registers,
    });
    this.unheardEnds = new Counter({
      name: `${p}eventgrid_unheard_ends_total`,
      help: 'Controller: events closed (and recovered from) without their Completed or Canceled, once Event Grid could no longer deliver it, by the last status taken',
      labelNames: ['status'],
      registers,
    });
    const held = (): number => this.heldEvents?.() ?? 0;
    new Gauge({
      name: `${p}journal_held_events`,
      help: 'Events whose next step waits for the journal to be written',
      registers,
      collect() {
        this.set(held());
      },
    });
    const health = (): Health | null => this.health?.() ?? null;
    new Gauge({
      name: `${p}seconds_since_last_good_poll`,
      help: 'Seconds since IMDS last answered a read (NaN before the first)',
      registers,
      collect() {
        const ms = health()?.msSinceSuccess ?? null;
        this.set(ms === null ? Number.NaN : ms / 1000);
      },
    });
    // Standard names (process_cpu_seconds_total, process_resident_memory_bytes, …), as dashboards expect.
    // The event-loop lag sampler wakes the process every `precision` ms; the default 10 ms would
    // cost an idle agent more than its polling does.
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 });
  }

  action(phase: Phase, action: string, ok: boolean, durationMs: number): void {
    const labels = { phase, action };
    this.actionsRun.inc(labels);
    if (!ok) this.actionsFailed.inc(labels);
    this.actionDuration.observe(labels, durationMs / 1000);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
