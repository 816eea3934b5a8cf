// The control API's contract, shared by the emulator, the control client, the CLI and the dashboard:
// the enums and limits a request may use, and the one error body. Declared once here, imported everywhere.

/** Maintenance operations that POST /v1/operations creates (SPEC §2's operations table). */
export const OPERATION_TYPES = [
  'restart',
  'redeploy',
  'freeze',
  'platform-reboot',
  'platform-redeploy',
  'degraded-hardware',
  'hardware-failure',
  'spot-eviction',
  'delete',
  'reimage',
  'host-update',
] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

/** [seed] Jobs that run on a host and so may be shared by several customers: only these may target a host. */
export const HOST_OPERATIONS: ReadonlySet<OperationType> = new Set<OperationType>([
  'host-update',
  'freeze',
  'platform-reboot',
  'platform-redeploy',
  'degraded-hardware',
  'hardware-failure',
]);

/** Whether `x` is a member of one of these lists. */
export function isOneOf<T extends string>(list: readonly T[], x: unknown): x is T {
  return typeof x === 'string' && (list as readonly string[]).includes(x);
}

export function isOperationType(x: unknown): x is OperationType {
  return isOneOf(OPERATION_TYPES, x);
}

/** [choice] A page (GET /v1/history, GET /v1/operations) is 100 items unless the caller asks for another size; never more than 1000. */
export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;

/** [choice] What a refused stream (GET /v1/stream, 503) is told to wait; the dashboard retries no less often. */
export const STREAM_RETRY_AFTER_SECONDS = 5;

/** How the emulator's time moves: with the wall clock, or only when told (POST /v1/clock/advance). */
export const CLOCK_MODES = ['system', 'manual'] as const;

/** Scheduled Events activation profiles (`--activation`): [seed] enabled by a VM's first request, or off (the default). */
export const ACTIVATION_MODES = ['realistic', 'off'] as const;

/** Whether a VM sees its events; always enabled unless activation is realistic. */
export const ACTIVATION_STATUSES = ['enabled', 'enabling', 'disabled'] as const;

/**
 * What started an event (`startedBy`): an approval, its NotBefore passing, a hardware failure
 * (Started at once), or the VM's scheduledEventsPolicy approving a user-initiated event at once.
 */
export const START_CAUSES = ['approval', 'notBefore', 'failure', 'policy'] as const;

/** Where each fault domain of a rolling host update stands (`steps[].status`). */
export const STEP_STATUSES = ['pending', 'scheduled', 'started', 'done', 'skipped', 'cancelled'] as const;

/**
 * Every control API error: its message, and where the request went wrong when one field did,
 * as a path the message also uses (`notBefore`, `vms[1]`, `scenario.steps[2].at`). `field` is
 * sent only to a request that asks for it with `Prefer: error-field`: the body has long been
 * exactly `{"error"}`, and clients may rely on that.
 */
export interface ControlErrorBody {
  error: string;
  field?: string;
}

/** The RFC 7240 preference that asks for `field` in error bodies: send `Prefer: error-field`. */
export const ERROR_FIELD_PREFERENCE = 'error-field';

/** The error body in an answer's parsed JSON, if it has one. */
export function controlErrorOf(data: unknown): ControlErrorBody | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const { error, field } = data as Record<string, unknown>;
  if (typeof error !== 'string') return undefined;
  return typeof field === 'string' ? { error, field } : { error };
}
