// The agent's shared shapes: its configuration, its journal, and what an action reports.
import type { ScheduledEvent } from '../client/index.js';

export type ApprovalPolicy = 'never' | 'immediately' | 'after-actions';
export type LeaderMode = 'first' | 'self' | 'any';

export interface ExecAction {
  type: 'exec';
  name: string;
  /** An argv array, never a shell string; event data reaches it only via stdin JSON and FOREWARN_* variables. */
  argv: string[];
  timeoutSeconds: number;
  retries: number;
  cwd: string | null;
  env: Record<string, string>;
  /** Names of more variables to pass from the agent's environment, beyond the allowlist (exec-env.ts). */
  passEnv: string[];
}

export interface HttpAction {
  type: 'http';
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  /** Values may name an environment variable as `${env:NAME}`, so secrets stay out of the file. */
  headers: Record<string, string>;
  /** Sent as JSON; absent means the event itself. */
  body: unknown;
  timeoutSeconds: number;
  retries: number;
  backoffSeconds: number;
}

export interface LogAction {
  type: 'log';
  name: string;
  message: string;
  level: 'info' | 'warn' | 'error';
}

/** What a kubernetes action does for an event type: nothing, cordon only, or cordon and drain. */
export type KubernetesPolicy = 'none' | 'cordon' | 'drain';

export interface KubernetesAction {
  type: 'kubernetes';
  name: string;
  /** false: cordon only, whatever the policy says. */
  drain: boolean;
  /** The drain's deadline at the latest (NotBefore minus the margin may come sooner). */
  timeoutSeconds: number;
}

export type Action = ExecAction | HttpAction | LogAction | KubernetesAction;

/** The agent's `kubernetes` section (SPEC §4 "Kubernetes (agent)"). */
export interface KubernetesConfig {
  /** Null: env NODE_NAME. */
  nodeName: string | null;
  /** Per event type (any case); types not listed get `drain`. */
  policy: Record<string, KubernetesPolicy>;
  /** Preparation must be over this long before NotBefore. */
  marginSeconds: number;
  /** `key=value:Effect` with `{type}` for the event type, or null for no taint. */
  taint: string | null;
  /** Pods with emptyDir volumes: evicted (their data goes with them) or left on the node. */
  localStorage: 'evict' | 'skip';
  budget: {
    slots: number;
    namespace: string;
    name: string;
    leaseDurationSeconds: number;
    /** No slot this long before the deadline: prepare anyway, over budget (logged and counted). */
    minPrepareSeconds: number;
  } | null;
  /** Give the budget slot back once the node is Ready, waiting at most this long after the event. */
  readyTimeoutSeconds: number;
  /**
   * Who approves an event of an `after-actions` rule with a kubernetes action. `barrier` (the default,
   * also when absent): any node the event names, once every named node that runs the agent is prepared,
   * or at the deadline. `leader-only`: the VM `leader.mode` picks, once its own node is prepared.
   */
  approval?: KubernetesApproval;
}

export type KubernetesApproval = 'barrier' | 'leader-only';

export interface RuleMatch {
  eventType: string[] | null;
  eventSource: string[] | null;
  status: string[] | null;
  durationInSeconds: { min: number | null; max: number | null } | null;
  /** true: only events naming this VM in Resources; false: only events that do not; null: either. */
  affectsThisVm: boolean | null;
  /** A regular expression tested against Description. */
  description: string | null;
}

export interface Rule {
  name: string;
  match: RuleMatch;
  actions: Action[];
  approval: ApprovalPolicy;
  /** Hold the approval back this long after preparation, e.g. a load balancer's deregistration delay. */
  approvalMarginSeconds: number;
  onComplete: Action[];
  onCancel: Action[];
}

export interface AgentConfig {
  /** Absent: FOREWARN_ENDPOINT, else http://169.254.169.254 (the client's default). */
  endpoint: string | null;
  apiVersion: string;
  pollIntervalSeconds: number;
  /** This VM's resource name; absent: read from /metadata/instance/compute. */
  vmName: string | null;
  journal: string;
  /** What to do while the journal cannot be written (a full disk): see docs/agent.md. */
  journalUnwritable: {
    /** hold: wait for the journal; prepare-before-notbefore: prepare unjournaled (never approve) once NotBefore is this near. */
    policy: JournalUnwritablePolicy;
    prepareWithinSeconds: number;
  };
  /** HOST:PORT for /metrics, /healthz and /readyz; null turns the server off. */
  listen: string | null;
  leader: {
    mode: LeaderMode;
    /** A standby approves when the leader has not within `afterSeconds`; null: never. */
    standby: { afterSeconds: number; events: 'user' | 'all' } | null;
  };
  /** A read older than this makes /readyz fail. */
  readyWithinSeconds: number;
  shutdownGraceSeconds: number;
  /** Evaluated in order; the first rule that matches an event handles it. */
  rules: Rule[];
  /** Settings of kubernetes actions; defaults when the section is absent. */
  kubernetes: KubernetesConfig;
  /** The fleet budget and barrier outside Kubernetes (SPEC §4); null: each VM decides alone. */
  budget: FleetBudgetConfig | null;
}

/** The `budget` section: slots and the barrier on a store the fleet already runs (coordination/). */
export interface FleetBudgetConfig {
  /** `memory`: the controller's own, in its process (coordination/memory.ts); never an agent's. */
  backend: 'etcd' | 'azure-blob' | 'memory';
  /** etcd: the cluster's client URLs. */
  endpoints: string[];
  /** azure-blob: the container's URL (no SAS: credentials come from the environment or the VM's identity). */
  containerUrl: string | null;
  /** azure-blob: a user-assigned managed identity's client id; null: the system-assigned one. */
  clientId: string | null;
  slots: number;
  /** Agents of one group share its slots and its barrier. */
  group: string;
  /** How long a dead holder keeps its slot: longer than a reboot, so the slot is held through one. */
  leaseSeconds: number;
  /** No slot this long before the deadline: prepare anyway, over budget (logged and counted). */
  minPrepareSeconds: number;
  /** Preparation and the barrier end this long before NotBefore. */
  marginSeconds: number;
}

export type Phase = 'prepare' | 'complete' | 'cancel';

export type JournalUnwritablePolicy = 'prepare-before-notbefore' | 'hold';

/** The process group an exec action's program runs in, journaled before the program starts (POSIX). */
export interface ProcessRecord {
  /** Always 2 or more: 0, 1 and negative numbers name no single group (kill(-1) reaches every process). */
  pgid: number;
  /** The leader's start time (Linux: field 22 of /proc/PID/stat), for the logs; null elsewhere. */
  startTime: string | null;
  /**
   * The value of the program's FOREWARN_ACTION_MARKER, which proves a live member of the group is
   * ours (process-group.ts). Absent in journals written before markers: such a group is never signalled.
   */
  marker?: string;
  startedAt: string;
}

export interface ActionRecord {
  status: 'running' | 'succeeded' | 'failed';
  startedAt: string;
  endedAt: string | null;
  attempts: number;
  error: string | null;
  /** The last attempt's process group, while it may still be alive. */
  process?: ProcessRecord;
  /** Ran while the journal could not be written; recorded once it could. */
  unjournaled?: boolean;
}

/** What the journal keeps per EventId, so a restart neither loses nor repeats work. */
/** What the agent keeps and tells of an event, apart from its id. */
export interface EventFields {
  type: string;
  status: string;
  source: string | null;
  resources: string[];
  notBefore: string | null;
  description: string;
  durationInSeconds: number;
}

export interface JournalEntry {
  eventId: string;
  firstSeenAt: string;
  rule: string | null;
  /** The event as last seen. */
  event: EventFields;
  /** Keyed `${phase}:${index}` (e.g. `prepare:0`). */
  actions: Record<string, ActionRecord>;
  approval: { sentAt: string; as: 'leader' | 'standby' | 'any' } | null;
  /** Set once the event has gone: how it ended, and when recovery finished. */
  outcome: 'completed' | 'cancelled' | null;
  recoveredAt: string | null;
  /** What a kubernetes action holds for this event, so recovery after a restart gives it back. */
  kubernetes?: KubernetesRecord;
  /** The fleet budget's slot for this event, so recovery after a restart gives it back. */
  budget?: BudgetRecord;
}

export interface BudgetRecord {
  /** Who the slot is taken for: this VM alone (`vm:NAME`) or every VM the event names (`event:ID`). */
  claim: string;
  /** The slot held, until given back. */
  slot: string | null;
  /** Prepared without a slot: none freed before the deadline, or the store could not be reached. */
  overBudget: boolean;
}

export interface KubernetesRecord {
  node: string;
  /** This event's id is in the node's cordon annotation: Forewarn cordoned it (or joined a cordon of its own). */
  cordoned: boolean;
  /** The budget Lease held, until given back. */
  slot: { namespace: string; name: string } | null;
  /** Prepared without a slot: none freed before the deadline. */
  overBudget: boolean;
  /** Forewarn's taint was placed (or joined) for this event; the node's forewarn.io/tainted-for annotation decides. Absent: no. */
  taintPlaced?: boolean;
}

/**
 * What the controller's Event Grid monitor keeps in the journal (`deliveries`): the notification ids it
 * took, to drop Event Grid's duplicates, and each event's latest status, to put reordered ones in order.
 */
export interface DeliveryRecord {
  /** Notification ids taken, with when (ISO), oldest first. */
  notifications: { id: string; at: string }[];
  events: SourcedEvent[];
}

/** One event as Event Grid last told of it. */
export interface SourcedEvent {
  eventId: string;
  /** The notification's subject: the event's ARM id, where its approval goes. */
  subject: string;
  /** Scheduled, Started, Completed or Canceled. */
  status: string;
  /** The notification's time (eventTime, or CloudEvents' time). */
  time: string;
  /** `data.resourceInfo.properties` as delivered: IMDS's fields. */
  properties: Record<string, unknown>;
  /** When its end was taken (ISO); null while it is live. */
  endedAt: string | null;
  /** When this status was taken, by the controller's clock (ISO); absent in journals written before it was kept. */
  takenAt?: string;
  /** Set when the controller closed the event itself, its end never having arrived (eventgrid/monitor.ts). */
  unheard?: true;
}

/** What an action logs through: pino's child loggers, or a test's stand-in. */
export interface ActionLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ActionContext {
  event: ScheduledEvent;
  vmName: string;
  phase: Phase;
  /** The EventId: the same key on every retry and after a restart, so receivers can deduplicate. */
  idempotencyKey: string;
  signal: AbortSignal;
  dryRun: boolean;
  /**
   * Called with an exec action's process group after it is spawned and before its program runs;
   * the program runs once this resolves, and never if it rejects. Absent: it runs at once.
   */
  recordProcess?: (group: Omit<ProcessRecord, 'startedAt'>) => Promise<void>;
  logger: ActionLogger;
  /** Runs kubernetes actions: prepares in the prepare phase, undoes in the others. Absent: they fail, saying why. */
  kubernetes?: (action: KubernetesAction, ctx: ActionContext) => Promise<{ ok: boolean; error: string | null }>;
}

export interface ActionResult {
  ok: boolean;
  attempts: number;
  error: string | null;
  durationMs: number;
}
