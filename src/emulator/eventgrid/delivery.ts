// One subscription's deliveries: the events waiting for its webhook, sent in batches, retried on Event
// Grid's schedule, and dead-lettered after the last try, at the end of their time to live, or on an
// answer that is never retried. Time is the emulator's clock, scaled by its timing factor.
import {
  AEG_DELIVERY_COUNT_HEADER,
  AEG_METADATA_VERSION_HEADER,
  AEG_DATA_VERSION_HEADER,
  AEG_NOTIFICATION,
  AEG_SUBSCRIPTION_NAME_HEADER,
  CLOUDEVENT_BATCH_CONTENT_TYPE,
  CLOUDEVENT_CONTENT_TYPE,
  EVENT_GRID_CONTENT_TYPE,
  EVENT_GRID_EVENT_TYPE_HEADER,
  METADATA_VERSION,
  PAYLOAD_DATA_VERSION,
} from '../../protocol/eventgrid.js';
import { formatIso } from '../../protocol/time.js';
import type { Clock } from '../../shared/clock.js';
import { MinHeap } from '../../shared/min-heap.js';
import type { Timing } from '../engine/timing.js';
import type { Envelope } from './payload.js';
import { isRetried, isSuccess, outcomeOf, retryDelaySeconds, type DeadLetterReason } from './retry.js';
import type { SubscriptionSettings } from './subscriptions.js';
import { callWebhook } from './webhook.js';

/** [choice] Requests to one webhook at once; more batches wait their turn (Event Grid's parallelism is its own). */
export const MAX_REQUESTS_IN_FLIGHT = 8;
/** [choice] Dead letters kept per subscription, the oldest dropped first: the engine's history limit. */
export const DEAD_LETTER_LIMIT = 1000;

interface Pending {
  envelope: Envelope;
  json: string;
  publishTime: number;
  /** Tries made so far. */
  attempts: number;
  dueAt: number;
  lastOutcome: string | undefined;
  lastStatus: number | undefined;
  lastAttemptAt: number | undefined;
}

/** [azure] A dead-lettered event: the event as delivered, with Event Grid's dead-letter properties. */
export type DeadLetter = Record<string, unknown>;

export interface DeliveryCounts {
  /** Events the webhook acknowledged. */
  delivered: number;
  /** Events waiting for a try or being sent. */
  pending: number;
  /** Tries after the first, made or scheduled. */
  retries: number;
  deadLettered: number;
}

export interface DeliveryDeps {
  clock: Clock;
  timing: Timing;
  /** Aborts every request at once when the emulator closes. */
  closed: AbortSignal;
  /** After each change that may move the next due time. */
  changed: () => void;
  /** Real time a webhook has to answer; Event Grid's 30 s when absent (tests shorten it). */
  responseTimeoutMs?: number;
}

/** A pending event waiting for its try, in the queue's heap by (dueAt, seq). */
interface Waiting {
  at: number;
  seq: number;
  p: Pending;
}

export class DeliveryQueue {
  readonly #pending = new Map<number, Pending>();
  /** What waits for a try, earliest first: a pump reads only what is due, not every pending event. */
  readonly #waiting = new MinHeap<Waiting>();
  readonly #deadLetters: DeadLetter[] = [];
  #seq = 0;
  #inFlight = 0;
  #delivered = 0;
  #retries = 0;
  #deadLettered = 0;
  #stopped = false;

  constructor(
    readonly name: string,
    readonly settings: SubscriptionSettings,
    private readonly deps: DeliveryDeps,
  ) {}

  /** [azure] "It tries to deliver each message at least once for each matching subscription immediately." */
  enqueue(envelope: Envelope, publishTime: number): void {
    if (this.#stopped) return;
    const seq = this.#seq++;
    const p: Pending = {
      envelope,
      json: JSON.stringify(envelope),
      publishTime,
      attempts: 0,
      dueAt: publishTime,
      lastOutcome: undefined,
      lastStatus: undefined,
      lastAttemptAt: undefined,
    };
    this.#pending.set(seq, p);
    this.#waiting.push({ at: p.dueAt, seq, p });
  }

  counts(): DeliveryCounts {
    return { delivered: this.#delivered, pending: this.#pending.size, retries: this.#retries, deadLettered: this.#deadLettered };
  }

  deadLetters(): DeadLetter[] {
    return this.#deadLetters.map((d) => structuredClone(d));
  }

  /** When the earliest event not being sent is due; undefined when none waits. */
  nextDue(): number | undefined {
    return this.#waiting.peek()?.at;
  }

  /** Drops everything: the subscription is deleted or the emulator closes. Answers still on their way are ignored. */
  stop(): void {
    this.#stopped = true;
    this.#pending.clear();
    this.#waiting.clear();
  }

  /**
   * Sends what is due now. [azure] "Event Grid doesn't guarantee order for event delivery": an event waiting
   * for its retry does not hold back newer ones, which go out at once and so may arrive first.
   */
  pump(): void {
    if (this.#stopped) return;
    const now = this.deps.clock.now();
    while (this.#inFlight < MAX_REQUESTS_IN_FLIGHT) {
      const batch = this.#batchDue(now);
      if (batch.length === 0) return;
      void this.#send(batch);
    }
  }

  /** The next due event, past any whose time to live ran out (dead-lettered on the way); undefined when none is due. */
  #takeDue(now: number, ttlMs: number): Waiting | undefined {
    for (let top = this.#waiting.peek(); top !== undefined && top.at <= now; top = this.#waiting.peek()) {
      this.#waiting.pop();
      // [azure] "The time-to-live expiration is checked ONLY at the next scheduled delivery attempt."
      if (now - top.p.publishTime >= ttlMs) this.#deadLetter(top.seq, top.p, 'TimeToLiveExceeded');
      else return top;
    }
    return undefined;
  }

  /**
   * [azure] "Max events per batch … This number will never be exceeded"; "Preferred batch size in kilobytes –
   * Target ceiling … a batch is larger than the preferred batch size if a single event is larger". Event Grid
   * "doesn't delay events to create a batch". [choice] A batch holds due events in order while they are on
   * the same try, so its aeg-delivery-count is theirs; empty when nothing is due.
   */
  #batchDue(now: number): [number, Pending][] {
    const ttlMs = this.deps.timing.ms(this.settings.eventTimeToLiveInMinutes * 60);
    const first = this.#takeDue(now, ttlMs);
    if (first === undefined) return [];
    const batch: [number, Pending][] = [[first.seq, first.p]];
    const maxBytes = this.settings.preferredBatchSizeInKilobytes * 1024;
    let bytes = first.p.json.length + 2;
    while (batch.length < this.settings.maxEventsPerBatch) {
      const next = this.#waiting.peek();
      if (next === undefined || next.at > now || next.p.attempts !== first.p.attempts || bytes + next.p.json.length + 1 > maxBytes) break;
      const taken = this.#takeDue(now, ttlMs);
      if (taken === undefined) break;
      bytes += taken.p.json.length + 1;
      batch.push([taken.seq, taken.p]);
    }
    return batch;
  }

  /**
   * [azure] Event Grid's schema is always an array; CloudEvents go one event in structured mode, several as a
   * batch. [choice] A subscription with batching on (maxEventsPerBatch above 1) always gets the batch form.
   */
  #request(batch: [number, Pending][]): { headers: Record<string, string>; body: string } {
    const jsons = batch.map(([, p]) => p.json);
    const cloud = this.settings.schema === 'CloudEventSchemaV1_0';
    const single = cloud && this.settings.maxEventsPerBatch === 1;
    const headers: Record<string, string> = {
      'content-type': cloud ? (single ? CLOUDEVENT_CONTENT_TYPE : CLOUDEVENT_BATCH_CONTENT_TYPE) : EVENT_GRID_CONTENT_TYPE,
      [EVENT_GRID_EVENT_TYPE_HEADER]: AEG_NOTIFICATION,
      [AEG_SUBSCRIPTION_NAME_HEADER]: this.name,
      [AEG_DELIVERY_COUNT_HEADER]: String(batch[0]![1].attempts),
    };
    if (!cloud) {
      headers[AEG_DATA_VERSION_HEADER] = PAYLOAD_DATA_VERSION;
      headers[AEG_METADATA_VERSION_HEADER] = METADATA_VERSION;
    }
    return { headers, body: single ? jsons[0]! : `[${jsons.join(',')}]` };
  }

  async #send(batch: [number, Pending][]): Promise<void> {
    const startedAt = this.deps.clock.now();
    this.#inFlight++;
    const answer = await callWebhook(
      this.settings.endpoint,
      { method: 'POST', ...this.#request(batch) },
      this.deps.closed,
      false,
      this.deps.responseTimeoutMs,
    );
    this.#inFlight--;
    if (this.#stopped) return;
    const now = this.deps.clock.now();
    const status = 'status' in answer ? answer.status : undefined;
    const outcome = outcomeOf(answer);
    for (const [seq, p] of batch) {
      p.attempts++;
      p.lastAttemptAt = startedAt;
      p.lastOutcome = outcome;
      p.lastStatus = status;
      // [azure] "All or none … It doesn't support partial success of a batch delivery."
      if (status !== undefined && isSuccess(status)) {
        this.#pending.delete(seq);
        this.#delivered++;
      } else if (status !== undefined && !isRetried(status)) this.#deadLetter(seq, p, 'UndeliverableDueToClientError');
      else if (p.attempts >= this.settings.maxDeliveryAttempts) this.#deadLetter(seq, p, 'MaxDeliveryAttemptsExceeded');
      else {
        // [choice] Retry delays are simulated time, scaled by --timing like every other duration of the emulator.
        p.dueAt = now + this.deps.timing.ms(retryDelaySeconds(p.attempts, status));
        this.#waiting.push({ at: p.dueAt, seq, p });
        this.#retries++;
      }
    }
    this.deps.changed();
  }

  /**
   * [azure] The dead-letter properties of Microsoft's samples: deadLetterReason, deliveryAttempts,
   * lastDeliveryOutcome, publishTime, lastDeliveryAttemptTime (lower case in CloudEvents, as its attributes
   * must be), and lastHttpStatusCode when there was an answer. [choice] Kept at once, in memory: the
   * emulator has no storage account, so no five-minute delay before a dead letter appears. An event never
   * tried (its TTL ran out while others were sent) has lastDeliveryOutcome Aborted.
   */
  #deadLetter(seq: number, p: Pending, reason: DeadLetterReason): void {
    this.#pending.delete(seq);
    this.#deadLettered++;
    const props: Record<string, unknown> = {
      deadLetterReason: reason,
      deliveryAttempts: p.attempts,
      lastDeliveryOutcome: p.lastOutcome ?? 'Aborted',
      ...(p.lastStatus !== undefined ? { lastHttpStatusCode: p.lastStatus } : {}),
      publishTime: formatIso(p.publishTime),
      ...(p.lastAttemptAt !== undefined ? { lastDeliveryAttemptTime: formatIso(p.lastAttemptAt) } : {}),
    };
    const cloud = this.settings.schema === 'CloudEventSchemaV1_0';
    const named = cloud ? Object.fromEntries(Object.entries(props).map(([k, v]) => [k.toLowerCase(), v])) : props;
    this.#deadLetters.push({ ...p.envelope, ...named });
    if (this.#deadLetters.length > DEAD_LETTER_LIMIT) this.#deadLetters.shift();
  }
}
