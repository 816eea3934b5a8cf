// The controller's webhook and Event Grid monitor: the subscription handshakes in both schemas, the
// shared secret, malformed deliveries, duplicates by id (also across a restart), and reordering.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { EventGridMonitor } from '../../../src/agent/eventgrid/monitor.js';
import { startReceiver, type Receiver } from '../../../src/agent/eventgrid/receiver.js';
import {
  EVENT_GRID_ORIGIN,
  SUBSCRIPTION_VALIDATION_EVENT,
  WEBHOOK_ALLOWED_ORIGIN,
  WEBHOOK_REQUEST_ORIGIN,
  type EventGridSchemaName,
} from '../../../src/protocol/eventgrid.js';
import { servicesAt } from '../support.js';
import { Recorder, cloudEvent, emitted, gridEvent, send } from './support.js';

const open: Receiver[] = [];
after(async () => {
  for (const r of open) await r.close();
});

/** A monitor running over a journal at `path`, and its webhook. */
async function harness(schema: EventGridSchemaName = 'EventGridSchema', opts: { path?: string; secret?: string } = {}) {
  const env = servicesAt(opts.path);
  const monitor = new EventGridMonitor({ ...env.services, durable: env.durable });
  const sink = new Recorder();
  const stop = new AbortController();
  const running = monitor.run(sink, stop.signal);
  const receiver = await startReceiver({
    listen: '127.0.0.1:0',
    path: '/eventgrid',
    schema,
    secret: opts.secret ?? null,
    secretParameter: 'code',
    accept: (n) => monitor.accept(n),
    log: env.services.log,
    metrics: env.services.metrics,
  });
  open.push(receiver);
  const close = async () => {
    stop.abort();
    await running;
    await receiver.close();
  };
  return { ...env, monitor, sink, receiver, url: receiver.url, close };
}

describe('the Event Grid webhook', () => {
  test('answers the Event Grid schema validation event with its code', async () => {
    // [azure] "Event Grid sends a subscription validation event … the webhook echoes its code": {"validationResponse": code}.
    const h = await harness('EventGridSchema');
    const r = await send(
      h.url,
      [
        {
          id: 'v1',
          topic: '/subscriptions/s',
          subject: '',
          eventType: SUBSCRIPTION_VALIDATION_EVENT,
          eventTime: new Date().toISOString(),
          dataVersion: '1',
          metadataVersion: '1',
          data: { validationCode: '512d38b6-c7b8-40c8-89fe-f46f9e9622b6' },
        },
      ],
      { headers: { 'aeg-event-type': 'SubscriptionValidation' } },
    );
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.text), { validationResponse: '512d38b6-c7b8-40c8-89fe-f46f9e9622b6' });
    await h.close();
  });

  test('answers the CloudEvents OPTIONS handshake with WebHook-Allowed-Origin', async () => {
    // [azure] CloudEvents validation: "the sender names itself in WebHook-Request-Origin, the receiver answers WebHook-Allowed-Origin".
    const h = await harness('CloudEventSchemaV1_0');
    const r = await send(h.url, undefined, { method: 'OPTIONS', headers: { [WEBHOOK_REQUEST_ORIGIN]: EVENT_GRID_ORIGIN } });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get(WEBHOOK_ALLOWED_ORIGIN), EVENT_GRID_ORIGIN);
    // And one CloudEvent (not batched) is a delivery it takes.
    const d = await send(h.url, cloudEvent(emitted('CE-1', 'Scheduled')), { headers: { 'content-type': 'application/cloudevents+json' } });
    assert.equal(d.status, 200);
    assert.deepEqual(h.sink.calls, ['seen:scheduled:CE-1']);
    await h.close();
  });

  test('a malformed delivery gets 400 naming the field', async () => {
    // [azure] Event Grid does not retry a webhook's 400 (Bad request): it dead-letters or drops the delivery.
    const h = await harness();
    const bad = gridEvent(emitted('BAD-1', 'Scheduled'));
    (bad.data.resourceInfo.properties as unknown as Record<string, unknown>).EventStatus = 'Frozen';
    const r = await send(h.url, [bad]);
    assert.equal(r.status, 400);
    assert.match(r.text, /\[0\]\.data\.resourceInfo\.properties\.EventStatus/);
    assert.deepEqual(h.sink.calls, []);
    await h.close();
  });

  test('with a secret, a request without it gets 401 and is not taken', async () => {
    // [choice] The secret rides in the query string (?code=), the webhook URL Event Grid is given.
    const h = await harness('EventGridSchema', { secret: 's3cret' });
    const event = gridEvent(emitted('SEC-1', 'Scheduled'));
    assert.equal((await send(h.url, [event])).status, 401);
    assert.equal((await send(`${h.url}?code=wrong`, [event])).status, 401);
    assert.deepEqual(h.sink.calls, []);
    assert.equal((await send(`${h.url}?code=s3cret`, [event])).status, 200);
    assert.deepEqual(h.sink.calls, ['seen:scheduled:SEC-1']);
    await h.close();
  });

  test('drops a duplicate by its id, also after a restart', async () => {
    // [azure] "In rare cases the same notification might be broadcasted to the system topic multiple times … These
    // duplicate notifications can be identified by checking for the ID field on the Event Grid payload."
    const h = await harness();
    const event = gridEvent(emitted('DUP-1', 'Scheduled'), { id: 'same-id' });
    assert.equal((await send(h.url, [event])).status, 200);
    assert.equal((await send(h.url, [event])).status, 200);
    assert.deepEqual(h.sink.calls, ['seen:scheduled:DUP-1']);
    assert.equal(h.journal.deliveries()?.notifications[0]?.id, 'same-id', 'recorded in the journal before the 200');
    await h.close();

    const again = await harness('EventGridSchema', { path: h.path });
    // The restart carries on with the live event, then the duplicate is still dropped.
    assert.deepEqual(again.sink.calls, ['seen:scheduled:DUP-1']);
    assert.equal((await send(again.url, [event])).status, 200);
    assert.deepEqual(again.sink.calls, ['seen:scheduled:DUP-1']);
    await again.close();
  });

  test('puts reordered notifications in order: Started before Scheduled, Completed before Started', async () => {
    // [azure] "Event Grid doesn't guarantee order for event delivery, so subscribers might receive them out of order."
    const h = await harness();
    await send(h.url, [gridEvent(emitted('ORD-1', 'Started'))]);
    await send(h.url, [gridEvent(emitted('ORD-1', 'Scheduled'))]);
    assert.deepEqual(h.sink.calls, ['seen:started:ORD-1'], 'a Scheduled after Started is older news: ignored');

    await send(h.url, [gridEvent(emitted('ORD-2', 'Scheduled'))]);
    await send(h.url, [gridEvent(emitted('ORD-2', 'Completed'))]);
    await send(h.url, [gridEvent(emitted('ORD-2', 'Started'))]);
    assert.deepEqual(h.sink.calls.slice(1), ['seen:scheduled:ORD-2', 'gone:completed:ORD-2'], 'a Started after Completed is ignored');
    // The event handed to recovery is the one last seen in view, with its NotBefore.
    assert.notEqual(h.sink.events.at(-1)?.notBefore, null);

    // An end before any sight: nothing to prepare, and a late Scheduled is not prepared.
    await send(h.url, [gridEvent(emitted('ORD-3', 'Canceled'))]);
    await send(h.url, [gridEvent(emitted('ORD-3', 'Scheduled'))]);
    assert.deepEqual(h.sink.calls.slice(3), []);

    // Two Scheduled notices of one event (NotBefore moved) that arrive newest first: the older one is ignored.
    const newer = new Date(Date.now() + 1000).toISOString();
    await send(h.url, [gridEvent(emitted('ORD-4', 'Scheduled'), { time: newer })]);
    await send(h.url, [gridEvent(emitted('ORD-4', 'Scheduled'), { time: new Date(Date.now() - 60_000).toISOString() })]);
    assert.deepEqual(h.sink.calls.slice(3), ['seen:scheduled:ORD-4']);
    await h.close();
  });

  test('answers 503 while the journal cannot record a delivery, and 200 to the retry once it can', async () => {
    // [choice] 200 only once what a delivery carried is on disk: Event Grid retries a 503.
    const h = await harness();
    const original = h.journal.setDeliveries.bind(h.journal);
    let fail = true;
    h.journal.setDeliveries = (record) => {
      if (!fail) return original(record);
      // As flush() fails: the change kept in memory, pending set, an error thrown.
      try {
        original(record);
      } catch {
        // not expected
      }
      Object.defineProperty(h.journal, 'pending', { value: true, configurable: true });
      throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    };
    const event = gridEvent(emitted('FULL-1', 'Scheduled'));
    assert.equal((await send(h.url, [event])).status, 503);
    fail = false;
    delete (h.journal as unknown as Record<string, unknown>).pending;
    assert.equal((await send(h.url, [event])).status, 200, 'the retry is a duplicate, answered once the journal is on disk');
    assert.deepEqual(h.sink.calls, ['seen:scheduled:FULL-1'], 'told once');
    await h.close();
  });
});
