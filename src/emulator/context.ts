// What the HTTP surfaces share: one engine and the knobs around it.
import type { Clock } from './engine/clock.js';
import type { Engine } from './engine/engine.js';
import type { FaultRegistry } from './faults.js';
import type { RateLimiter } from './rate-limit.js';

export interface ImdsContext {
  engine: Engine;
  faults: FaultRegistry;
  rateLimiter: RateLimiter;
}

export interface ControlContext {
  engine: Engine;
  clock: Clock;
  faults: FaultRegistry;
  rateLimiter: RateLimiter;
  /** Bearer token every control request must carry; none means open (loopback by default). */
  token?: string | undefined;
}
