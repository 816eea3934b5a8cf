// What the HTTP surfaces share: one engine and the knobs around it.
import type { Clock } from '../shared/clock.js';
import type { Engine } from './engine/engine.js';
import type { FaultRegistry } from './imds/faults.js';
import type { TokenIssuer } from './imds/managed-identity.js';
import type { RateLimiter } from './imds/rate-limit.js';
import type { Durable } from './state/acknowledge.js';

export interface ImdsContext {
  engine: Engine;
  faults: FaultRegistry;
  rateLimiter: RateLimiter;
  /** With --state: approvals are answered once saved. */
  durable?: Durable | undefined;
  /** Signs managed identity tokens; the control server's ARM routes check them with the same key. */
  tokens?: TokenIssuer | undefined;
}

export interface ControlContext {
  engine: Engine;
  clock: Clock;
  faults: FaultRegistry;
  rateLimiter: RateLimiter;
  /** With --state: changes are answered once saved. */
  durable?: Durable | undefined;
  /** Bearer token every control request must carry; none means open (loopback by default). */
  token?: string | undefined;
  /**
   * Host names or addresses, besides loopback ones, that requests without a token may be sent to
   * (`--allow-host`). Read at each request, so the emulator can add the name it listens on.
   */
  allowHosts?: readonly string[] | undefined;
  /** The issuer of the VMs' managed identity tokens, whose ARM tokens the ARM routes take. */
  tokens?: TokenIssuer | undefined;
}
