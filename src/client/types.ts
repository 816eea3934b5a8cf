// The client's public types. Field names are camelCase; `raw` keeps what IMDS actually sent.

export interface RetryPolicy {
  /** 410 Gone is retried until this long after the first attempt ([imds] 70 s). */
  goneForMs: number;
  /** Attempts in all for 429, 5xx, network errors and timeouts. */
  maxAttempts: number;
  /** First backoff ceiling; it doubles per failed attempt. */
  baseDelayMs: number;
  /** Backoff never exceeds this. */
  maxDelayMs: number;
}

export interface ClientOptions {
  /**
   * Base URL; default `FOREWARN_ENDPOINT` if set, else `http://169.254.169.254`. A path is kept
   * and routes are appended to it, so the emulator's `/vms/NAME` prefix works.
   */
  endpoint?: string;
  /** Scheduled Events api-version; default `2020-07-01`. Not checked here: IMDS's 400 says what it knows. */
  apiVersion?: string;
  /** api-version for `/metadata/instance/compute`; default `2021-02-01`. */
  computeApiVersion?: string;
  /** Per attempt; default 5000. */
  timeoutMs?: number;
  /** Until Scheduled Events first answers: [seed] the first call may be held up to 2 min. Default 130000. */
  firstCallTimeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  fetch?: typeof fetch;
  /** Must reject (or resolve early) when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** In [0, 1); drives jitter. */
  random?: () => number;
  /** Epoch ms. */
  now?: () => number;
}

export interface ScheduledEvent {
  /** As sent; compare ids case-insensitively (see `sameEventId`). */
  id: string;
  status: 'Scheduled' | 'Started' | (string & {});
  type: 'Freeze' | 'Reboot' | 'Redeploy' | 'Preempt' | 'Terminate' | (string & {});
  resourceType: string;
  /** As sent, including the 2017-03-01 leading `_`. */
  resources: string[];
  /** null when NotBefore is `""` (Started), absent or unreadable. */
  notBefore: Date | null;
  description: string;
  source: 'Platform' | 'User' | null | (string & {});
  /** -1 when unknown or absent (api-versions before 2020-07-01). */
  durationInSeconds: number;
  raw: Record<string, unknown>;
}

export interface EventsDocument {
  incarnation: number;
  events: ScheduledEvent[];
  /** The response's ETag header, or null if the server sent none. */
  etag: string | null;
}

export interface ComputeInfo {
  name: string;
  vmId: string;
  /** '' outside scale sets. */
  vmScaleSetName: string;
  /**
   * osProfile.computerName, the VM's host name (api-version 2020-07-15 on; '' before or when absent). A
   * scale-set VM's differs from `name`: `myss_18` is `myss00000I` (Uniform; Kubernetes lower-cases it).
   */
  computerName: string;
  platformFaultDomain: number;
  platformUpdateDomain: number;
  priority: string;
  raw: Record<string, unknown>;
}

export type ChangeKind = 'scheduled' | 'started' | 'completed' | 'cancelled' | 'updated';

export interface EventChange {
  kind: ChangeKind;
  /** The event as now seen; for completed/cancelled, the last version seen before it went. */
  event: ScheduledEvent;
  /** The version seen before this change; null for a first sighting. For completed/cancelled it is `event`. */
  previous: ScheduledEvent | null;
  /** DocumentIncarnation of the document that showed the change. */
  incarnation: number;
}

export interface Health {
  lastSuccessAt: Date | null;
  msSinceSuccess: number | null;
  /** Reads that failed in a row, each after its own retries. */
  consecutiveFailures: number;
  /** The error of the current failure streak; null once a read succeeds. */
  lastError: Error | null;
}

export type WatchItem =
  | { type: 'changes'; incarnation: number; document: EventsDocument; changes: EventChange[] }
  | { type: 'error'; error: Error; health: Health };

export interface WatchOptions {
  /** Aborting ends the iterator cleanly, even mid-request or mid-sleep. */
  signal?: AbortSignal;
  /** Default 1000: [seed] poll about once a second. */
  intervalMs?: number;
  /** Fraction of the interval, ±; default 0.1. */
  jitter?: number;
  onError?: (error: Error, health: Health) => void;
  /** Default true: yield `error` items. */
  emitErrors?: boolean;
}
