// The controller's approvals: the Maintenance provider's acknowledge route on Azure Resource Manager,
// with a bearer token from @azure/identity (or a stand-in), retried where a retry can change the answer.
import type { TokenCredential } from '@azure/identity';
import { backoffMs, retryAfterMs, sleep as abortableSleep } from '../../client/retry.js';
import { ARM_ACKNOWLEDGE_API_VERSION, acknowledgePath, parseScheduledEventPath, type ArmErrorBody } from '../../protocol/arm.js';
import { wallClock } from '../../shared/clock.js';
import type { Logger } from '../logger.js';
import type { AgentMetrics } from '../metrics.js';
import type { ApprovalSender } from '../runner-context.js';

/** [azure] The scope of a token for Azure Resource Manager. */
export const ARM_SCOPE = 'https://management.azure.com/.default';
export const DEFAULT_ARM_ENDPOINT = 'https://management.azure.com';

/** [choice] Tries of one approval here; the runner's Approval retries further while the event stays Scheduled. */
const ATTEMPTS = 4;
/** [choice] Backoff between them: full jitter up to 1 s, 2 s, 4 s; a Retry-After (capped at 60 s) wins. */
const RETRY = { goneForMs: 0, maxAttempts: ATTEMPTS, baseDelayMs: 1_000, maxDelayMs: 8_000 };
/** [choice] Each request gives up after this. */
const REQUEST_TIMEOUT_MS = 30_000;

/** A failed acknowledge: the HTTP status (undefined: no answer), ARM's error code, and whether retries can change it. */
export class ArmApprovalError extends Error {
  override name = 'ArmApprovalError';
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly code: string | null,
    readonly refusal: boolean,
  ) {
    super(message);
  }
}

export interface ArmApprovalsOptions {
  /** Base URL of ARM (default https://management.azure.com), or the emulator's control URL. */
  endpoint: string;
  credential: TokenCredential;
  /** The event's ARM id (Event Grid's subject), from the monitor. */
  subjectOf: (eventId: string) => string | undefined;
  log: Logger;
  metrics: AgentMetrics;
  fetch?: typeof fetch;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
  random?: () => number;
}

export function armApprovals(options: ArmApprovalsOptions): ApprovalSender {
  const doFetch = options.fetch ?? fetch;
  const sleep = options.sleep ?? abortableSleep;
  const now = options.now ?? wallClock;
  const random = options.random ?? Math.random;
  const count = (status: number | undefined): void =>
    options.metrics.armErrors.inc({ status: status === undefined ? 'network' : String(status) });

  async function once(
    url: URL,
    signal: AbortSignal,
  ): Promise<{ done: true } | { done: false; error: ArmApprovalError; retryAfter?: number }> {
    const token = await options.credential.getToken(ARM_SCOPE, { abortSignal: signal });
    if (token === null) return { done: false, error: new ArmApprovalError('the credential gave no token for ARM', undefined, null, false) };
    let response: Response;
    try {
      response = await doFetch(url, {
        method: 'POST',
        // The token is sent and never logged.
        headers: { authorization: `Bearer ${token.token}`, accept: 'application/json' },
        signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
      });
    } catch (err) {
      if (signal.aborted) throw err;
      count(undefined);
      return { done: false, error: new ArmApprovalError(`ARM did not answer: ${(err as Error).message}`, undefined, null, false) };
    }
    const text = await response.text().catch(() => '');
    if (response.ok) return { done: true };
    count(response.status);
    const { code, message } = armErrorOf(text);
    const detail = `ARM answered ${response.status}${code !== null ? ` ${code}` : ''}${message !== null ? `: ${message}` : ''}`;
    // [choice] An event that has Started needs no approval: what approving is for has happened.
    if (response.status === 409 && /start/i.test(`${code ?? ''} ${message ?? ''}`)) {
      options.log.info({ status: 409, code }, 'ARM says the event has already Started: counting the approval as done');
      return { done: true };
    }
    const retryable = response.status === 408 || response.status === 429 || response.status >= 500;
    const retryAfter = retryAfterMs(response.headers.get('retry-after'), now());
    return {
      done: false,
      error: new ArmApprovalError(hint(detail, response.status), response.status, code, !retryable),
      ...(retryAfter !== undefined ? { retryAfter } : {}),
    };
  }

  return {
    async approve(eventId, signal) {
      const subject = options.subjectOf(eventId);
      const id = subject === undefined ? undefined : parseScheduledEventPath(subject, false);
      if (id === undefined) {
        throw new ArmApprovalError(
          `no ARM id is known for event ${eventId} (Event Grid's subject ${JSON.stringify(subject ?? null)}): cannot acknowledge it`,
          undefined,
          null,
          true,
        );
      }
      const url = new URL(acknowledgePath({ ...id, eventId: id.eventId ?? eventId }), options.endpoint);
      url.searchParams.set('api-version', ARM_ACKNOWLEDGE_API_VERSION);
      for (let attempt = 1; ; attempt++) {
        const result = await once(url, signal);
        if (result.done) return;
        if (result.error.refusal || attempt >= ATTEMPTS) throw result.error;
        const delay = result.retryAfter ?? backoffMs(RETRY, attempt, random);
        options.log.warn({ status: result.error.status ?? 'network', attempt, retryInMs: delay }, 'ARM acknowledge failed; retrying');
        await sleep(delay, signal);
      }
    },
    refused: (err) => err instanceof ArmApprovalError && err.refusal,
  };
}

function armErrorOf(text: string): { code: string | null; message: string | null } {
  try {
    const body = JSON.parse(text) as Partial<ArmErrorBody>;
    const code = typeof body.error?.code === 'string' ? body.error.code : null;
    const message = typeof body.error?.message === 'string' ? body.error.message : null;
    return { code, message };
  } catch {
    return { code: null, message: null };
  }
}

function hint(detail: string, status: number): string {
  if (status === 401) return `${detail} (the token was refused: a token for another tenant or audience?)`;
  if (status === 403) return `${detail} (the identity lacks a role that may acknowledge scheduled events on this resource)`;
  return detail;
}
