// Starts the IMDS surface over a real socket around a fresh engine with a manual clock.
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ActivationOptions } from '../../src/emulator/engine/activation.js';
import { ManualClock } from '../../src/shared/clock.js';
import { Engine } from '../../src/emulator/engine/engine.js';
import type { VmSpec } from '../../src/emulator/engine/fleet.js';
import { FaultRegistry } from '../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../src/emulator/imds/rate-limit.js';
import type { ImdsContext } from '../../src/emulator/context.js';
import { buildImdsServer } from '../../src/emulator/imds/server.js';
import { ImdsTestClient } from './imds-client.js';

/** 2022-04-11T22:11:58Z: 15 minutes before the seed example's NotBefore. */
export const T0 = Date.UTC(2022, 3, 11, 22, 11, 58);

export interface ImdsHarness {
  engine: Engine;
  clock: ManualClock;
  faults: FaultRegistry;
  rateLimiter: RateLimiter;
  app: FastifyInstance;
  client: ImdsTestClient;
  port: number;
  close(): Promise<void>;
}

export interface HarnessOptions {
  fleet?: readonly VmSpec[];
  /** Requests per second per VM; 0 (the default here) turns the limit off. */
  rateLimit?: number;
  /** The rate limiter's time source; frozen by default so tests do not race refills. */
  rateNow?: () => number;
  /** Replace parts of the context, e.g. to provoke an unexpected error. */
  context?: Partial<ImdsContext>;
  /** The engine's activation profile; off by default. */
  activation?: ActivationOptions;
}

export async function startImds(options: HarnessOptions = {}): Promise<ImdsHarness> {
  const clock = new ManualClock(T0);
  const engine = new Engine({
    clock,
    fleet: options.fleet ?? [{ name: 'vm0' }],
    ...(options.activation ? { activation: options.activation } : {}),
  });
  const faults = new FaultRegistry();
  const rateLimiter = new RateLimiter(options.rateLimit ?? 0, options.rateNow ?? (() => 0));
  const app = buildImdsServer({ engine, faults, rateLimiter, ...options.context });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  return {
    engine,
    clock,
    faults,
    rateLimiter,
    app,
    client: new ImdsTestClient(`http://127.0.0.1:${port}`),
    port,
    close: () => app.close(),
  };
}

/** The scheduled-events path at a version, optionally for a named VM. */
export function eventsPath(version = '2020-07-01', vm?: string): string {
  return `${vm === undefined ? '' : `/vms/${vm}`}/metadata/scheduledevents?api-version=${version}`;
}

export function computePath(version = '2021-02-01', vm?: string): string {
  return `${vm === undefined ? '' : `/vms/${vm}`}/metadata/instance/compute?api-version=${version}`;
}
