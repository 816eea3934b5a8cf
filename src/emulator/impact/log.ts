// What real impact did to a bound process: one entry per signal, start or exit, kept per VM for the control API and the stream.
import type { VmState } from '../engine/vm-state.js';
import type { ImpactSignal } from './signals.js';

/**
 * bind/unbind: the binding began or ended; stop/continue/terminate/kill: SIGSTOP/SIGCONT/SIGTERM/SIGKILL sent;
 * start: an owned command started (again); exit: the process ended; skip: nothing could be done (`detail` says why).
 */
export const IMPACT_ACTIONS = ['bind', 'unbind', 'stop', 'continue', 'terminate', 'kill', 'start', 'exit', 'skip'] as const;
export type ImpactAction = (typeof IMPACT_ACTIONS)[number];

/**
 * running; stopped: SIGSTOP'ed while its VM is frozen; down: terminated while its VM reboots or redeploys;
 * ended: terminated for good, or not restartable; exited: it ended by itself.
 */
export const PROCESS_STATUSES = ['running', 'stopped', 'down', 'ended', 'exited'] as const;
export type ProcessStatus = (typeof PROCESS_STATUSES)[number];

export interface ImpactEntry {
  vm: string;
  action: ImpactAction;
  /** The process it concerned, when there was one. */
  pid: number | null;
  signal: ImpactSignal | null;
  ok: boolean;
  /** The VM's state that called for it ('deleted' once it left the fleet). */
  vmState: VmState;
  /** Wall-clock time, ISO 8601: when it really happened. */
  at: string;
  /** The emulator's clock then, which a manual clock keeps apart from the wall clock. */
  simulatedAt: string;
  detail: string;
}

/** [choice] Entries kept per VM: enough to see the last few impacts; older ones go first. */
export const IMPACT_LOG_LIMIT = 100;

export class ImpactLog {
  readonly #entries: ImpactEntry[] = [];

  add(entry: ImpactEntry): void {
    this.#entries.push(entry);
    if (this.#entries.length > IMPACT_LOG_LIMIT) this.#entries.splice(0, this.#entries.length - IMPACT_LOG_LIMIT);
  }

  /** Oldest first. */
  entries(): ImpactEntry[] {
    return this.#entries.map((e) => ({ ...e }));
  }

  last(): ImpactEntry | undefined {
    const e = this.#entries.at(-1);
    return e && { ...e };
  }
}
