// Delivery to a real webhook on the manual clock: batches, Event Grid's retry schedule, dead letters,
// duplicates and (lack of) ordering.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventGridEvents, start, T0, type Harness } from './harness.js';
import { delay } from '../../support/wait.js';
import { passHandshakes, type Responder } from '../../support/webhook.js';

/** Passes handshakes, then answers the notifications with these statuses in turn (the last one from then on). */
function answers(...statuses: number[]): Responder {
  let n = 0;
  return (r) => {
    if (r.headers['aeg-event-type'] !== 'Notification') return passHandshakes(r);
    return { status: statuses[Math.min(n++, statuses.length - 1)]! };
  };
}

/** Nothing more arrives for a while. */
async function quiet(count: () => number, expected: number): Promise<void> {
  await delay(150);
  assert.equal(count(), expected);
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The first try and the two retries of Event Grid's schedule: at 0, 10 s and 40 s. */
async function threeTries(h: Harness): Promise<void> {
  await h.deliveries(1);
  await h.advance(10);
  await h.deliveries(2);
  await h.advance(30);
  await h.deliveries(3);
}

describe('Event Grid: delivery', () => {
  // Microsoft ("Event Grid message delivery and retry"): "Max events per batch … This number will never be
  // exceeded"; "Preferred batch size in kilobytes - Target ceiling for batch size"; by default "Event Grid
  // delivers one event at a time to the subscriber. The payload is however an array with a single event."
  test('batches: events published together share a delivery up to maxEventsPerBatch and the preferred size; one each by default', async () => {
    const h = await start();
    const batched = await h.subscribe({ maxEventsPerBatch: 5 });
    const single = await h.subscribe();
    const small = await h.subscribe({ maxEventsPerBatch: 5, preferredBatchSizeInKilobytes: 1 });
    // Two tenants, so two events, published in one go.
    await h.operation('freeze', ['solo', 'myvmss_1', 'myvmss_2']);
    const deliveries = await h.deliveries(5);
    await quiet(() => h.hook.deliveries().length, 5);
    const sizes = async (id: string) =>
      Promise.all(deliveries.filter((d) => d.headers['aeg-subscription-name'] === id).map(async (d) => (await eventGridEvents(d)).length));
    assert.deepEqual(await sizes(batched), [2]);
    assert.deepEqual(await sizes(single), [1, 1]);
    // Each event is more than half a kilobyte: two do not fit in one.
    assert.deepEqual(await sizes(small), [1, 1]);
  });

  // Microsoft: Event Grid "retries delivery on the following schedule …: 10 seconds, 30 seconds, 1 minute, …";
  // success is "200 OK … 204 No Content" only. The aeg-delivery-count header counts the tries before.
  test('retries on 500 with backoff (10 s, then 30 s) on the clock, then succeeds; counts say so', async () => {
    const h = await start(answers(500, 500, 200));
    const id = await h.subscribe();
    await h.operation('freeze', ['solo']);
    await h.deliveries(1);
    await h.advance(9);
    await quiet(() => h.hook.deliveries().length, 1);
    await h.advance(1);
    await h.deliveries(2);
    await h.advance(29);
    await quiet(() => h.hook.deliveries().length, 2);
    await h.advance(1);
    const tries = await h.deliveries(3);
    assert.deepEqual(
      tries.map((t) => t.headers['aeg-delivery-count']),
      ['0', '1', '2'],
    );
    const ids = await Promise.all(tries.map(async (t) => (await eventGridEvents(t))[0]!.id));
    assert.equal(new Set(ids).size, 1, 'every try carries the same event');
    const { counts } = (await h.call('GET', `/v1/eventgrid/subscriptions/${id}`)).json.subscription;
    assert.deepEqual(counts, { delivered: 1, pending: 0, retries: 2, deadLettered: 0 });
  });

  // Microsoft: "Event Grid sends an event to the dead-letter location when it has tried all of its retry attempts",
  // with "deadLetterReason": "MaxDeliveryAttemptsExceeded", "deliveryAttempts", "lastDeliveryOutcome",
  // "publishTime", "lastDeliveryAttemptTime".
  test('dead-lettered after the last try (maxDeliveryAttempts), with the dead-letter properties', async () => {
    const h = await start(answers(500));
    const id = await h.subscribe({ maxDeliveryAttempts: 3 });
    const eventId = await h.operation('freeze', ['solo']);
    await threeTries(h);
    // The next try would be 1 min later (and the event starts only at 15 min).
    await h.advance(120);
    await quiet(() => h.hook.deliveries().length, 3);
    const { deadLetters } = (await h.call('GET', `/v1/eventgrid/subscriptions/${id}/deadletters`)).json;
    assert.equal(deadLetters.length, 1);
    const [dead] = deadLetters;
    assert.equal(dead.data.resourceInfo.name, eventId);
    assert.deepEqual(
      [
        dead.deadLetterReason,
        dead.deliveryAttempts,
        dead.lastDeliveryOutcome,
        dead.lastHttpStatusCode,
        dead.publishTime,
        dead.lastDeliveryAttemptTime,
      ],
      ['MaxDeliveryAttemptsExceeded', 3, 'GenericError', 500, iso(T0), iso(T0 + 40_000)],
    );
    const { counts } = (await h.call('GET', `/v1/eventgrid/subscriptions/${id}`)).json.subscription;
    assert.deepEqual(counts, { delivered: 0, pending: 0, retries: 2, deadLettered: 1 });
  });

  // Microsoft: "If Event Grid receives a 400 (Bad Request) or 413 (Request Entity Too Large) response code, it
  // immediately schedules the event for dead-lettering."
  for (const [status, outcome] of [
    [400, 'BadRequest'],
    [413, 'PayloadTooLarge'],
  ] as const)
    test(`dead-lettered at once on ${status}, never retried`, async () => {
      const h = await start(answers(status));
      const id = await h.subscribe();
      await h.operation('freeze', ['solo']);
      await h.deliveries(1);
      // Past the first retry's 10 s (and any 5-minute floor), before the event starts at 15 min.
      await h.advance(600);
      await quiet(() => h.hook.deliveries().length, 1);
      const [dead] = (await h.call('GET', `/v1/eventgrid/subscriptions/${id}/deadletters`)).json.deadLetters;
      assert.deepEqual(
        [dead.deadLetterReason, dead.deliveryAttempts, dead.lastDeliveryOutcome, dead.lastHttpStatusCode],
        ['UndeliverableDueToClientError', 1, outcome, status],
      );
    });

  // Microsoft: "Event isn't delivered within the time-to-live period" dead-letters it; "The time-to-live
  // expiration is checked ONLY at the next scheduled delivery attempt."
  test('dead-lettered when its time to live has run out, at the next scheduled try', async () => {
    const h = await start(answers(500));
    const id = await h.subscribe({ eventTimeToLiveInMinutes: 1 });
    await h.operation('freeze', ['solo']);
    await threeTries(h);
    // The next try (1 min later, at 100 s) is past the 60 s TTL: dead-lettered instead of sent.
    await h.advance(60);
    await quiet(() => h.hook.deliveries().length, 3);
    const [dead] = (await h.call('GET', `/v1/eventgrid/subscriptions/${id}/deadletters`)).json.deadLetters;
    assert.deepEqual([dead.deadLetterReason, dead.deliveryAttempts], ['TimeToLiveExceeded', 3]);
  });

  // Microsoft ("Scheduled Events in Event Grid Concepts"): "In rare cases the same notification might be
  // broadcasted to the system topic multiple times. It has an identical payload in each case … Both events have
  // the same ID value."
  test('the duplicate fault delivers the next notification twice, with the same id and payload; IMDS does not use it up', async () => {
    const h = await start();
    await h.subscribe();
    const added = await h.call('POST', '/v1/faults', { duplicate: true, count: 1, vm: 'solo' });
    assert.equal(added.status, 201, added.text);
    assert.equal(added.json.fault.duplicate, true);
    const bad = await h.call('POST', '/v1/faults', { duplicate: true, status: 500 });
    assert.equal(bad.status, 400);
    // An IMDS request does not take the Event Grid fault.
    const imds = await fetch(`${h.imdsUrl}/vms/solo/metadata/scheduledevents?api-version=2020-07-01`, {
      headers: { Metadata: 'true' },
    });
    assert.equal(imds.status, 200);
    await h.operation('freeze', ['solo']);
    const [first, second] = await h.deliveries(2);
    assert.equal(first!.body, second!.body);
    assert.equal((await eventGridEvents(first!))[0]!.id, (await eventGridEvents(second!))[0]!.id);
    assert.deepEqual((await h.call('GET', '/v1/faults')).json.faults, []);
    await h.advance(15 * 60 + 1);
    await h.deliveries(3);
    await quiet(() => h.hook.deliveries().length, 3);
  });

  // Microsoft: "Event Grid doesn't guarantee order for event delivery, so subscribers may receive them out of order."
  test('ordering: a notification waiting for its retry arrives after a later one', async () => {
    const h = await start(answers(500, 200));
    await h.subscribe();
    const early = await h.operation('freeze', ['solo']);
    await h.deliveries(1);
    const late = await h.operation('freeze', ['myvmss_1', 'myvmss_2']);
    await h.deliveries(2);
    await h.advance(10);
    const deliveries = await h.deliveries(3);
    const order = await Promise.all(
      deliveries.map(async (d) => ((await eventGridEvents(d))[0]!.data as { resourceInfo: { name: string } }).resourceInfo.name),
    );
    // Tried first and failed; the later event went through; the retry came last.
    assert.deepEqual(order, [early, late, early]);
  });

  // Brief: "close() must not hang on a slow webhook".
  test('closing the emulator does not wait for a webhook that never answers', async () => {
    const h = await start((r) => (r.headers['aeg-event-type'] === 'Notification' ? new Promise(() => {}) : passHandshakes(r)));
    await h.subscribe();
    await h.operation('freeze', ['solo']);
    await h.deliveries(1);
    const began = Date.now();
    await h.emulator.close();
    assert.ok(Date.now() - began < 5000, `close took ${Date.now() - began} ms`);
  });
});
