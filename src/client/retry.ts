// Backoff arithmetic and the default sleep; kept apart from HTTP so tests can check the numbers alone.
import type { RetryPolicy } from './types.js';

export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  goneForMs: 70_000,
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
});

/** [choice] The most a Retry-After is obeyed for, so a wild value cannot stall the caller. */
export const MAX_RETRY_AFTER_MS = 60_000;

/** Full jitter: uniform in [0, min(max, base · 2^(failures-1))), so many VMs do not retry in step. */
export function backoffMs(policy: RetryPolicy, failures: number, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, failures - 1));
  return Math.floor(random() * ceiling);
}

/** Retry-After as seconds or an HTTP date, in ms from `now`; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const t = header.trim();
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(t)) ms = Number(t) * 1000;
  else {
    const at = Date.parse(t);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(Math.max(0, Math.round(ms)), MAX_RETRY_AFTER_MS);
}

/** A sleep that rejects with the signal's reason when aborted, so no caller waits out a cancelled wait. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function resolvePolicy(partial: Partial<RetryPolicy> | undefined): RetryPolicy {
  const policy = { ...DEFAULT_RETRY };
  for (const [key, value] of Object.entries(partial ?? {}) as [keyof RetryPolicy, number | undefined][]) {
    if (value === undefined) continue;
    if (!(key in DEFAULT_RETRY)) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`retry.${key} must be a number of 0 or more, got ${String(value)}`);
    }
    policy[key] = value;
  }
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError(`retry.maxAttempts must be a whole number of 1 or more, got ${policy.maxAttempts}`);
  }
  return policy;
}
