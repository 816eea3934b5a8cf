// IMDS throttles each VM to about 5 requests a second; past that it answers 429.
import { monotonicMs } from '../../shared/clock.js';

/** [imds] Azure's documented limit, per VM. */
export const DEFAULT_RATE_LIMIT = 5;

/** One VM's tokens; the hot path keeps a reference, so a request looks nothing up (see callers.ts). */
export interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A token bucket per VM holding up to one second of requests. It runs on real
 * time, not the simulated clock: it limits real requests, whatever the timing factor.
 */
export class RateLimiter {
  readonly #buckets = new Map<string, Bucket>();

  constructor(
    readonly perSecond: number = DEFAULT_RATE_LIMIT,
    private readonly now: () => number = monotonicMs,
  ) {
    if (!Number.isFinite(perSecond) || perSecond < 0) throw new RangeError(`rate limit must be 0 or more, got ${perSecond}`);
  }

  /** True if the request may proceed; 0 turns the limit off. */
  allow(key: string): boolean {
    return this.perSecond === 0 || this.take(this.bucket(key));
  }

  /** The key's bucket, full when new. It stays the key's for the life of the limiter. */
  bucket(key: string): Bucket {
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: this.perSecond, at: this.now() };
      this.#buckets.set(key, bucket);
    }
    return bucket;
  }

  /** True if the bucket's owner may make a request now, which is then counted. */
  take(bucket: Bucket): boolean {
    if (this.perSecond === 0) return true;
    const now = this.now();
    bucket.tokens = Math.min(this.perSecond, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** Every bucket full again; refilled in place, as callers hold them. */
  reset(): void {
    const now = this.now();
    for (const bucket of this.#buckets.values()) {
      bucket.tokens = this.perSecond;
      bucket.at = now;
    }
  }
}
