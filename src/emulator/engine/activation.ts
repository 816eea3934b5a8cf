// [seed] Scheduled Events is enabled for a VM by its first request and disabled after 24 h without one.
import { TrackedMap, type ChangeLog } from './changes.js';
import type { Due, Schedule } from './schedule.js';
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

function statusOf(state: ActivationState | undefined, mode: ActivationOptions['mode']): ActivationStatus {
  if (mode === 'off') return 'enabled';
  if (state?.enabledAt != null) return 'enabled';
  return state?.enablingAt != null ? 'enabling' : 'disabled';
}

function firstCallDelayMs(options: ActivationOptions, timing: Timing): number {
  return options.mode === 'realistic' ? timing.ms(options.firstCallDelaySeconds ?? DEFAULT_FIRST_CALL_DELAY_SECONDS) : 0;
}

function idleMs(timing: Timing): number {
  return timing.ms(IDLE_DISABLE_SECONDS);
}

/** What the tracker needs of the kernel: its timing and schedule, and word of what it changed. */
export interface ActivationHost {
  readonly timing: Timing;
  readonly schedule: Schedule;
  hasVm(name: string): boolean;
  /** Enabling or disabling a VM may change what its document shows. */
  touchVm(name: string): void;
  /** Something changed that no document may show (a request's time). */
  markMutated(): void;
}

const NEVER: ActivationState = { enabledAt: null, enablingAt: null, lastRequestAt: null };

/** Each VM's activation: the one owner of its state, of its two schedule entries ('enable', 'idle') and of what a VM sees because of it. */
export class ActivationTracker {
  readonly options: ActivationOptions;
  /** Per VM, only once it has made a request; saved in the state file. */
  readonly states: TrackedMap<string, ActivationState>;
  readonly #host: ActivationHost;

  constructor(options: ActivationOptions, changes: ChangeLog, host: ActivationHost) {
    checkActivation(options);
    this.options = options;
    this.states = new TrackedMap(changes);
    this.#host = host;
  }

  get mode(): ActivationOptions['mode'] {
    return this.options.mode;
  }

  /** [seed] With the realistic profile a VM sees events only once its requests have enabled them. */
  enabled(name: string): boolean {
    return this.options.mode === 'off' || (this.states.get(name)?.enabledAt ?? null) !== null;
  }

  of(name: string): { status: ActivationStatus } & ActivationState {
    const state = this.states.get(name) ?? NEVER;
    return { status: statusOf(state, this.options.mode), ...state };
  }

  /** A Scheduled Events request at `now`; true when it began enabling the VM (the kernel then commits and ticks). */
  request(name: string, now: number): boolean {
    const { timing, schedule } = this.#host;
    let state = this.states.get(name);
    if (!state) this.states.set(name, (state = { ...NEVER }));
    const firstIdleCheck = state.lastRequestAt === null;
    state.lastRequestAt = now;
    this.states.changes.updated(name);
    if (state.enabledAt !== null) {
      if (firstIdleCheck) schedule.push(now + idleMs(timing), name, 'idle');
      return false;
    }
    if (state.enablingAt !== null) return false;
    state.enablingAt = now + firstCallDelayMs(this.options, timing);
    schedule.push(state.enablingAt, name, 'enable');
    return true;
  }

  /** How long a request at `now` is held: until the VM's enabling completes, if it is under way. */
  delayMs(name: string, now: number): number {
    return Math.max(0, (this.states.get(name)?.enablingAt ?? now) - now);
  }

  apply(due: Due): void {
    const state = this.states.get(due.ref);
    const host = this.#host;
    if (due.kind === 'enable') {
      if (!state || state.enablingAt !== due.at || !host.hasVm(due.ref)) return;
      state.enablingAt = null;
      state.enabledAt = due.at;
      this.states.changes.updated(due.ref);
      host.touchVm(due.ref);
      host.markMutated();
      host.schedule.push((state.lastRequestAt ?? due.at) + idleMs(host.timing), due.ref, 'idle');
      return;
    }
    if (!state || state.enabledAt === null || state.lastRequestAt === null) return;
    const idleAt = state.lastRequestAt + idleMs(host.timing);
    if (idleAt > due.at) {
      host.schedule.push(idleAt, due.ref, 'idle');
      return;
    }
    // [seed] 24 h without a request: disabled until the next request enables it again.
    host.touchVm(due.ref);
    state.enabledAt = null;
    this.states.changes.updated(due.ref);
    host.markMutated();
  }

  /** Whether apply() would act on this entry. */
  stillDue(due: Due): boolean {
    return due.kind === 'enable' ? this.states.get(due.ref)?.enablingAt === due.at : (this.states.get(due.ref)?.enabledAt ?? null) !== null;
  }

  /** Schedule entries that may still be due: two a VM. */
  get pending(): number {
    return 2 * this.states.size;
  }

  snapshot(): Record<string, ActivationState> {
    return Object.fromEntries([...this.states].map(([name, a]) => [name, { ...a }]));
  }

  /** Takes saved states back, with their schedule entries. */
  restore(saved: Record<string, ActivationState>): void {
    const { schedule, timing } = this.#host;
    for (const [name, a] of Object.entries(saved)) {
      this.states.set(name, { ...a });
      if (a.enablingAt !== null) schedule.push(a.enablingAt, name, 'enable');
      if (a.enabledAt !== null && a.lastRequestAt !== null) schedule.push(a.lastRequestAt + idleMs(timing), name, 'idle');
    }
  }

  clear(): void {
    this.states.clear();
  }
}
