// Event Grid's retry rules for a webhook: which answers succeed, which are never retried, how long
// to wait before the next try, and how Event Grid names each outcome. The one owner of these tables.
//
// [azure] Microsoft Learn, "Event Grid message delivery and retry" (learn.microsoft.com/azure/event-grid/delivery-and-retry).

/** [azure] "Event Grid considers only the following HTTP response codes as successful deliveries": 200–204. */
export function isSuccess(status: number): boolean {
  return status >= 200 && status <= 204;
}

/**
 * [azure] The errors "for which retry doesn't happen" for a Webhook endpoint: 400, 413, 401 and 403. "If Event
 * Grid receives a 400 (Bad Request) or 413 (Request Entity Too Large) response code, it immediately schedules
 * the event for dead-lettering." (Older versions of the page retried 403; the current one does not.)
 */
const NOT_RETRIED = new Set([400, 401, 403, 413]);

export function isRetried(status: number): boolean {
  return !NOT_RETRIED.has(status);
}

/**
 * [azure] "Event Grid waits 30 seconds for a response after delivering a message", and retries on "10 seconds,
 * 30 seconds, 1 minute, 5 minutes, 10 minutes, 30 minutes, 1 hour, 3 hours, 6 hours, every 12 hours up to 24 hours".
 * [choice] Without the "small randomization" Event Grid adds, so a test on the manual clock knows when.
 */
export const RETRY_SCHEDULE_SECONDS: readonly number[] = Object.freeze([10, 30, 60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600]);

/**
 * [azure] The failure codes' own floors: "404 Not Found: Retry after 5 minutes or more", "408 Request Timeout:
 * Retry after 2 minutes or more", "503 Service Unavailable: Retry after 30 seconds or more", "All others: Retry
 * after 10 seconds or more". [choice] The page says the 404 rule is for Azure resources; the emulator applies it
 * to webhooks too, the older page's wording.
 */
const FLOOR_SECONDS: Readonly<Record<number, number>> = { 404: 300, 408: 120, 503: 30 };

/** Nominal seconds before the next try after `failures` failed tries, the last answered `status` (absent: no answer). */
export function retryDelaySeconds(failures: number, status: number | undefined): number {
  const step = RETRY_SCHEDULE_SECONDS[Math.min(failures, RETRY_SCHEDULE_SECONDS.length) - 1] ?? RETRY_SCHEDULE_SECONDS[0]!;
  return Math.max(step, status === undefined ? 0 : (FLOOR_SECONDS[status] ?? 0));
}

/** [azure] How long Event Grid waits for an answer (to a delivery and to the validation handshake); real time. */
export const RESPONSE_TIMEOUT_MS = 30_000;

/** What went wrong with one try when no HTTP status says it. */
export type TransportFailure = 'TimedOut' | 'SocketError' | 'ResolutionError' | 'Canceled';

/**
 * [azure] `lastDeliveryOutcome`, from the page's table (NotFound, Unauthorized, BadRequest, TimedOut, Busy,
 * PayloadTooLarge, Forbidden, SocketError, ResolutionError, …). [choice] 503 and 429 are Busy; any other status
 * is GenericError, the outcome Event Grid's delivery-failure logs show (MicrosoftDocs/azure-docs#60595).
 */
export function outcomeOf(result: { status: number } | { failure: TransportFailure }): string {
  if ('failure' in result) return result.failure;
  const byStatus: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    408: 'TimedOut',
    413: 'PayloadTooLarge',
    429: 'Busy',
    503: 'Busy',
  };
  return isSuccess(result.status) ? 'Delivered' : (byStatus[result.status] ?? 'GenericError');
}

/**
 * `deadLetterReason`: [azure] MaxDeliveryAttemptsExceeded as in Microsoft's sample dead letter; [choice]
 * TimeToLiveExceeded and UndeliverableDueToClientError (the page names neither; the second follows Event
 * Grid's UndeliverableDueToProbationCausedByClientError).
 */
export const DEAD_LETTER_REASONS = ['MaxDeliveryAttemptsExceeded', 'TimeToLiveExceeded', 'UndeliverableDueToClientError'] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];
