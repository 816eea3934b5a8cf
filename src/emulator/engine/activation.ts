// [seed] Scheduled Events is enabled for a VM by its first request and disabled after 24 h without one.
import { IDLE_DISABLE_SECONDS, MAX_FIRST_CALL_DELAY_SECONDS, type Timing } from './timing.js';

export type ActivationOptions =
  | { mode: 'off' }
  | {
      mode: 'realistic';
      /** How long the first request of a disabled VM waits before it is answered; 0 to 120 s. */
      firstCallDelaySeconds?: number;
    };

export interface ActivationState {
  /** When Scheduled Events was enabled for the VM, or null while it is not. */
  enabledAt: number | null;
  /** When a pending enabling completes (the delayed first call), or null. */
  enablingAt: number | null;
  lastRequestAt: number | null;
}

export type ActivationStatus = 'enabled' | 'enabling' | 'disabled';

/** [choice] The default delay of a first call: the seed's "up to two minutes", at its longest. */
export const DEFAULT_FIRST_CALL_DELAY_SECONDS = MAX_FIRST_CALL_DELAY_SECONDS;

export function checkActivation(options: ActivationOptions): void {
  if (options.mode === 'realistic' && options.firstCallDelaySeconds !== undefined) {
    const d = options.firstCallDelaySeconds;
    if (!Number.isFinite(d) || d < 0 || d > MAX_FIRST_CALL_DELAY_SECONDS) {
      throw new RangeError(`the first-call delay must be from 0 to ${MAX_FIRST_CALL_DELAY_SECONDS} s, got ${d}`);
    }
  }
}

export function statusOf(state: ActivationState | undefined, mode: ActivationOptions['mode']): ActivationStatus {
  if (mode === 'off') return 'enabled';
  if (state?.enabledAt != null) return 'enabled';
  return state?.enablingAt != null ? 'enabling' : 'disabled';
}

export function firstCallDelayMs(options: ActivationOptions, timing: Timing): number {
  return options.mode === 'realistic' ? timing.ms(options.firstCallDelaySeconds ?? DEFAULT_FIRST_CALL_DELAY_SECONDS) : 0;
}

export function idleMs(timing: Timing): number {
  return timing.ms(IDLE_DISABLE_SECONDS);
}
