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

export type Action = ExecAction | HttpAction | LogAction;

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
}

export type Phase = 'prepare' | 'complete' | 'cancel';

export type JournalUnwritablePolicy = 'prepare-before-notbefore' | 'hold';

/** The process group an exec action's program runs in, journaled before the program starts (POSIX). */
export interface ProcessRecord {
  pgid: number;
  /** The leader's start time (Linux: field 22 of /proc/PID/stat), so a reused pid is not taken for ours; null elsewhere. */
  startTime: string | null;
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
  logger: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void; error(obj: object, msg?: string): void };
}

export interface ActionResult {
  ok: boolean;
  attempts: number;
  error: string | null;
  durationMs: number;
}
