// The single owner of Scheduled Events' timing rules: notice and duration tables.
import type { EventType } from '../../protocol/types.js';

/** [seed] Minimum notice between creation and NotBefore, in seconds. */
export const MINIMUM_NOTICE_SECONDS: Readonly<Record<EventType, number>> = {
  Freeze: 15 * 60,
  Reboot: 15 * 60,
  Redeploy: 10 * 60,
  Preempt: 30,
  // Terminate's notice is the scale set's terminateNotificationProfile; this is its floor.
  Terminate: 5 * 60,
};

/** [seed] terminateNotificationProfile accepts 5 to 15 minutes. */
export const TERMINATE_NOTICE_MINUTES = { min: 5, max: 15 } as const;

/** [seed] A migration after a predicted hardware failure is announced days ahead; Azure aims for 7. */
export const DEGRADED_HARDWARE_NOTICE_SECONDS = 7 * 24 * 60 * 60;

/** [seed] OS image upgrades and reimages give 15 minutes of notice. */
export const OS_IMAGE_NOTICE_SECONDS = 15 * 60;

/**
 * [seed] How long an event stays Started in the document before it is removed: "from Started until
 * removal about 10 minutes", whatever its impact ("a 7 s Freeze stays Started in the document for
 * about 10 minutes"). An impact longer than this keeps the event until the impact is over.
 */
export const STARTED_SECONDS: Readonly<Record<EventType, number>> = {
  Freeze: 10 * 60,
  Reboot: 10 * 60,
  Redeploy: 10 * 60,
  Preempt: 10 * 60,
  Terminate: 10 * 60,
};

/**
 * How long the VM feels an event once it Starts, when its DurationInSeconds does not say (-1,
 * unknown): [seed] "impact about 7 s" for a Freeze; [choice] the rest from what a VM of a usual size
 * takes to reboot, be moved, or be shut down. DurationInSeconds 0 means no impact at all.
 */
export const IMPACT_SECONDS: Readonly<Record<EventType, number>> = {
  Freeze: 7,
  Reboot: 3 * 60,
  Redeploy: 5 * 60,
  Preempt: 60,
  Terminate: 60,
};

/**
 * [choice] However fast the timing factor, an event stays Started at least this long
 * (or its unscaled duration, if shorter), so a client polling once a second sees it.
 */
export const MIN_STARTED_SECONDS = 2;

/**
 * [seed] In routine maintenance the next fault domain's event "may be Scheduled soon
 * after" the previous one completes; [choice] one minute after.
 */
export const ROLLING_STEP_GAP_SECONDS = 60;

/** [seed] The first call to a disabled VM's endpoint may be delayed "up to two minutes". */
export const MAX_FIRST_CALL_DELAY_SECONDS = 120;

/** [seed] Scheduled Events is disabled again after 24 hours without a request. */
export const IDLE_DISABLE_SECONDS = 24 * 60 * 60;

/** Named timing profiles of `--timing`; `dev` divides every duration by 60. */
export const TIMING_PROFILES = { realistic: 1, dev: 60 } as const;

/** Scales nominal seconds into simulated milliseconds by the timing factor. */
export class Timing {
  constructor(readonly factor: number = 1) {
    if (!Number.isFinite(factor) || factor <= 0) throw new RangeError(`timing factor must be a positive number, got ${factor}`);
  }
  ms(seconds: number): number {
    return Math.round((seconds * 1000) / this.factor);
  }
  minimumNoticeMs(type: EventType): number {
    return this.ms(MINIMUM_NOTICE_SECONDS[type]);
  }
  /** How long the VM feels the event from its start: its own duration when not -1, else the table's. */
  impactMs(type: EventType, durationInSeconds: number): number {
    return this.ms(durationInSeconds >= 0 ? durationInSeconds : IMPACT_SECONDS[type]);
  }
  /** Time from Started to removal: the table's, or the impact if that is longer. */
  startedMs(type: EventType, durationInSeconds: number): number {
    const seconds = Math.max(STARTED_SECONDS[type], durationInSeconds);
    return Math.max(this.ms(seconds), Math.min(seconds, MIN_STARTED_SECONDS) * 1000, this.impactMs(type, durationInSeconds));
  }
}

/** Parses `--timing realistic|dev|FACTOR`. */
export function parseTimingFactor(text: string): number {
  if (text in TIMING_PROFILES) return TIMING_PROFILES[text as keyof typeof TIMING_PROFILES];
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n <= 0) {
    throw new RangeError(`--timing must be realistic, dev or a positive factor, got "${text}"`);
  }
  return n;
}
