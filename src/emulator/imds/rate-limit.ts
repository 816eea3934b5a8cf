// IMDS throttles each VM to about 5 requests a second; past that it answers 429.
import { monotonicMs } from '../../shared/clock.js';

/** [imds] Azure's documented limit, per VM. */
export const DEFAULT_RATE_LIMIT = 5;

/**
 * A token bucket per VM holding up to one second of requests. It runs on real
 * time, not the simulated clock: it limits real requests, whatever the timing factor.
 */
export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly perSecond: number = DEFAULT_RATE_LIMIT,
    private readonly now: () => number = monotonicMs,
  ) {
    if (!Number.isFinite(perSecond) || perSecond < 0) throw new RangeError(`rate limit must be 0 or more, got ${perSecond}`);
  }

  /** True if the request may proceed; 0 turns the limit off. */
  allow(key: string): boolean {
    if (this.perSecond === 0) return true;
    const now = this.now();
    const bucket = this.#buckets.get(key);
    if (!bucket) {
      this.#buckets.set(key, { tokens: this.perSecond - 1, at: now });
      return true;
    }
    bucket.tokens = Math.min(this.perSecond, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  reset(): void {
    this.#buckets.clear();
  }
}
