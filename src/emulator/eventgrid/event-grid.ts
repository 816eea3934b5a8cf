// The emulator's Event Grid: webhook subscriptions to the scheduled-events system topic, fed by the
// engine's report of each event's status change, and the one timer that wakes deliveries due for a retry.
import { randomUUID } from 'node:crypto';
import { formatIso } from '../../protocol/time.js';
import type { Engine, EventTransition } from '../engine/engine.js';
import type { FaultRegistry } from '../imds/faults.js';
import { INSTANCE_DEFAULTS } from '../imds/instance-defaults.js';
import { DeliveryQueue, type DeadLetter, type DeliveryCounts } from './delivery.js';
import { handshake } from './handshake.js';
import { envelopeOf, notificationOf } from './payload.js';
import { settingsOf, type SubscriptionRequest, type SubscriptionSettings } from './subscriptions.js';
import { targetsOf, type PublishTarget } from './targets.js';

export interface SubscriptionView extends SubscriptionSettings {
  id: string;
  createdAt: string;
  counts: DeliveryCounts;
}

export type SubscribeResult = { ok: true; subscription: SubscriptionView } | { ok: false; reason: string };

/** Never sleep longer than this, so a suspended laptop or a clock jump is caught within a minute (as the engine's timer). */
const MAX_TIMER_MS = 60_000;
/** [choice] Live events whose publishing targets are remembered (a deleted VM's event still completes under them). */
const TARGET_CACHE_LIMIT = 10_000;

interface Entry {
  queue: DeliveryQueue;
  createdAt: number;
}

export class EventGrid {
  readonly #engine: Engine;
  readonly #faults: FaultRegistry;
  readonly #newId: () => string;
  readonly #subscriptions = new Map<string, Entry>();
  /** Each live event's targets, taken when first published: its VMs may be gone by the time it ends. */
  readonly #targets = new Map<string, PublishTarget[]>();
  readonly #closed = new AbortController();
  readonly #off: (() => void)[] = [];
  #timer: NodeJS.Timeout | undefined;
  #timerAt: number | undefined;

  constructor(options: { engine: Engine; faults: FaultRegistry; newId?: () => string }) {
    this.#engine = options.engine;
    this.#faults = options.faults;
    this.#newId = options.newId ?? randomUUID;
    this.#off.push(this.#engine.onEventTransition((t) => this.#publish(t)));
    // [azure] An existing subscription is not validated again: the state file's carry on as they were.
    for (const { id, createdAt, ...settings } of this.#engine.webhookSubscriptions()) this.#open(id, settings, createdAt);
    // On the manual clock, moving time is what makes retries due.
    const offAdvance = this.#engine.clock.onAdvance?.(() => this.#pump());
    if (offAdvance) this.#off.push(offAdvance);
  }

  /**
   * [azure] A subscription exists only once its webhook passed the validation handshake; a failed one is
   * refused with the reason. [choice] Any http(s) URL, plain http included (Event Grid wants https; the
   * emulator's webhooks are local).
   */
  async subscribe(request: SubscriptionRequest): Promise<SubscribeResult> {
    const settings = settingsOf(request);
    const id = this.#newId();
    const now = this.#engine.clock.now();
    // [choice] The validation event's topic is the default subscription's: one emulator subscription hears every subscription of the fleet.
    const topic = `/subscriptions/${INSTANCE_DEFAULTS.subscriptionId}`;
    const result = await handshake(settings.endpoint, settings.schema, { name: id, topic, now, closed: this.#closed.signal });
    if (!result.ok) return result;
    if (this.#closed.signal.aborted) return { ok: false, reason: 'the emulator is closing' };
    this.#open(id, settings, now);
    // Saved with the engine's state, so a 201 under --state means it outlives a restart.
    this.#engine.saveWebhookSubscription({ id, ...settings, createdAt: now });
    return { ok: true, subscription: this.#view(id)! };
  }

  #open(id: string, settings: SubscriptionSettings, createdAt: number): void {
    const queue = new DeliveryQueue(id, settings, {
      clock: this.#engine.clock,
      timing: this.#engine.timing,
      closed: this.#closed.signal,
      changed: () => this.#pump(),
    });
    this.#subscriptions.set(id, { queue, createdAt });
  }

  list(): SubscriptionView[] {
    return [...this.#subscriptions.keys()].map((id) => this.#view(id)!);
  }

  get(id: string): SubscriptionView | undefined {
    return this.#view(id);
  }

  /** Removes a subscription; what it had not delivered is dropped. */
  remove(id: string): SubscriptionView | undefined {
    const view = this.#view(id);
    this.#subscriptions.get(id)?.queue.stop();
    this.#subscriptions.delete(id);
    this.#engine.removeWebhookSubscription(id);
    return view;
  }

  deadLetters(id: string): DeadLetter[] | undefined {
    return this.#subscriptions.get(id)?.queue.deadLetters();
  }

  /** Aborts every request and handshake at once, so closing never waits for a slow webhook; leaves no timer. */
  close(): void {
    if (this.#closed.signal.aborted) return;
    this.#closed.abort();
    for (const off of this.#off.splice(0)) off();
    this.#clearTimer();
    for (const { queue } of this.#subscriptions.values()) queue.stop();
  }

  #view(id: string): SubscriptionView | undefined {
    const entry = this.#subscriptions.get(id);
    if (entry === undefined) return undefined;
    return { id, ...entry.queue.settings, createdAt: formatIso(entry.createdAt), counts: entry.queue.counts() };
  }

  /**
   * Renders the change now (the engine's event is valid only during the call) into one notification per
   * target, and queues it for every subscription. A duplicate fault queues it twice, with the same id.
   */
  #publish({ event, status, at }: EventTransition): void {
    const ended = status === 'Completed' || status === 'Canceled';
    let targets = this.#targets.get(event.id);
    if (this.#subscriptions.size === 0) {
      if (ended) this.#targets.delete(event.id);
      return;
    }
    targets ??= targetsOf(this.#engine.fleet, event.resources);
    if (ended) this.#targets.delete(event.id);
    else this.#remember(event.id, targets);
    for (const target of targets) {
      const notification = notificationOf(event, status, at, target, this.#newId());
      if (notification === undefined) continue;
      const copies = this.#faults.takeDuplicate(event.resources) ? 2 : 1;
      for (const { queue } of this.#subscriptions.values()) {
        const envelope = envelopeOf(notification, queue.settings.schema);
        for (let i = 0; i < copies; i++) queue.enqueue(envelope, at);
      }
    }
    // After the engine's call returns: a webhook answering at once must not re-enter it.
    setImmediate(() => this.#pump());
  }

  #remember(eventId: string, targets: PublishTarget[]): void {
    this.#targets.delete(eventId);
    this.#targets.set(eventId, targets);
    // Events a reset dropped never end: the oldest go first.
    if (this.#targets.size > TARGET_CACHE_LIMIT) this.#targets.delete(this.#targets.keys().next().value!);
  }

  #pump(): void {
    if (this.#closed.signal.aborted) return;
    for (const { queue } of this.#subscriptions.values()) queue.pump();
    this.#arm();
  }

  /** With the system clock, one timer sleeps until the next retry is due; the manual clock wakes them by moving. */
  #arm(): void {
    if (this.#engine.clock.mode !== 'system') return;
    let due: number | undefined;
    for (const { queue } of this.#subscriptions.values()) {
      const next = queue.nextDue();
      if (next !== undefined && (due === undefined || next < due)) due = next;
    }
    if (due === undefined) return this.#clearTimer();
    if (this.#timer && this.#timerAt === due) return;
    this.#clearTimer();
    this.#timerAt = due;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#timerAt = undefined;
        this.#pump();
      },
      Math.min(Math.max(0, due - this.#engine.clock.now()), MAX_TIMER_MS),
    );
    this.#timer.unref();
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = undefined;
  }
}
