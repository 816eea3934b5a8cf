// What the agent's parts share of it: its log, metrics and clock, its stop, the background work it
// waits for when it stops, and the journal. Built once by the agent and handed to each part.
import type { Journal } from './journal.js';
import type { Logger } from './logger.js';
import type { AgentMetrics } from './metrics.js';

export interface AgentServices {
  log: Logger;
  metrics: AgentMetrics;
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Sleeps until `ms` has passed (true) or `signal` aborts (false). */
  wait: (ms: number, signal: AbortSignal) => Promise<boolean>;
  /** The agent's stop: loops and waits end with it. */
  stopped: AbortSignal;
  /** Background work the agent waits for when it stops. */
  track: (work: Promise<void>) => void;
  journal: () => Journal;
}
