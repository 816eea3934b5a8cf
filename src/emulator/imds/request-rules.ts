// Request rules that both IMDS paths apply (fastify's routes and the GET fast path): one owner each.
import type { Engine } from '../engine/engine.js';

/** [seed] `Metadata: true`; [choice] the value in any case. */
export function isMetadataTrue(value: string | string[] | undefined): boolean {
  return typeof value === 'string' && (value === 'true' || value.toLowerCase() === 'true');
}

/**
 * [seed] Every Scheduled Events request counts towards enabling the VM. Under the realistic
 * profile a disabled VM's first request is held until it is enabled: the answer is how long to
 * hold it (ms of engine time), 0 to answer now. A manual clock cannot be waited for in real
 * time, so there the request is answered at once. Throws the engine's error if the VM is gone.
 */
export function activationHoldMs(engine: Engine, vm: string): number {
  // With activation off nothing is recorded: no extra work on the hot path.
  if (engine.activationMode === 'off') return 0;
  const { delayMs } = engine.recordRequest(vm);
  return delayMs > 0 && engine.clock.mode === 'system' ? delayMs : 0;
}

/** Calls `done` once the engine's clock reaches `until`; timers may fire a little early, so it checks again. */
export function holdUntil(engine: Engine, until: number, done: () => void): void {
  const wait = until - engine.now();
  if (wait <= 0) return done();
  setTimeout(holdUntil, wait, engine, until, done).unref();
}
