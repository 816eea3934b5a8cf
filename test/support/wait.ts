// Waiting in tests: a pause, and polling until a condition holds, with what was awaited in the failure.
import { setTimeout as sleepFor } from 'node:timers/promises';

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A pause that rejects once `signal` aborts (at once if it has): the agent's injected sleep, in real time. */
export function abortableDelay(ms: number, signal?: AbortSignal): Promise<void> {
  return sleepFor(ms, undefined, signal ? { signal } : {});
}

/**
 * Polls `probe` every `everyMs` until it gives something other than undefined or false, and returns that.
 * On timeout the error names `what`; a function is called then, so it can show what was seen so far.
 */
export async function waitFor<T>(
  what: string | (() => string),
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
  everyMs = 20,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await delay(everyMs);
  }
}
