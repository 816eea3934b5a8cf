// Event Grid's validation handshake at subscription, in both schemas, against a real webhook.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventGridEvents, start } from './harness.js';
import { passHandshakes } from '../../support/webhook.js';

describe('Event Grid: the validation handshake', () => {
  // SPEC §4: "After Event Grid's validation handshake, every status change … is delivered". Microsoft
  // ("Webhook event delivery"): "Event Grid sends a subscription validation event to your endpoint … The data
  // portion of this event includes a validationCode property … returns the validation code in the response synchronously."
  test('EventGridSchema: a SubscriptionValidationEvent is POSTed, and echoing its code creates the subscription (201)', async () => {
    const h = await start();
    const res = await h.call('POST', '/v1/eventgrid/subscriptions', { endpoint: h.hook.url });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.json.subscription.schema, 'EventGridSchema');
    assert.equal(h.hook.requests.length, 1);
    const [validation] = h.hook.requests;
    assert.equal(validation!.method, 'POST');
    assert.equal(validation!.headers['aeg-event-type'], 'SubscriptionValidation');
    const [event] = await eventGridEvents(validation!);
    assert.equal(event!.eventType, 'Microsoft.EventGrid.SubscriptionValidationEvent');
    assert.match((event!.data as { validationCode: string }).validationCode, /^[0-9A-F-]{36}$/);
    const listed = await h.call('GET', '/v1/eventgrid/subscriptions');
    assert.deepEqual(
      listed.json.subscriptions.map((s: { id: string }) => s.id),
      [res.json.subscription.id],
    );
  });

  // Microsoft ("Endpoint validation with CloudEvents schema"): "CloudEvents v1.0 implements its own abuse
  // protection semantics using the HTTP OPTIONS method", with WebHook-Request-Origin answered by WebHook-Allowed-Origin.
  test('CloudEventSchemaV1_0: an OPTIONS request naming eventgrid.azure.net, granted by WebHook-Allowed-Origin', async () => {
    const h = await start();
    const res = await h.call('POST', '/v1/eventgrid/subscriptions', { endpoint: h.hook.url, schema: 'CloudEventSchemaV1_0' });
    assert.equal(res.status, 201, res.text);
    assert.equal(h.hook.requests.length, 1);
    assert.equal(h.hook.requests[0]!.method, 'OPTIONS');
    assert.equal(h.hook.requests[0]!.headers['webhook-request-origin'], 'eventgrid.azure.net');
  });

  // The brief's rule for a failed handshake: "subscription creation answers only after the handshake (201 on
  // success, a clear 400 naming why it failed otherwise)".
  test('a webhook that fails the handshake is refused with 400 naming why, and no subscription is made', async () => {
    const h = await start((r) => (r.method === 'OPTIONS' ? { status: 200 } : { status: 200, body: '{"validationResponse":"nope"}' }));
    const wrongCode = await h.call('POST', '/v1/eventgrid/subscriptions', { endpoint: h.hook.url });
    assert.equal(wrongCode.status, 400);
    assert.match(wrongCode.json.error, /^endpoint: the validation handshake failed: .*validationResponse is "nope"/);
    const noOrigin = await h.call('POST', '/v1/eventgrid/subscriptions', { endpoint: h.hook.url, schema: 'CloudEventSchemaV1_0' });
    assert.equal(noOrigin.status, 400);
    assert.match(noOrigin.json.error, /WebHook-Allowed-Origin/);
    h.hook.respond = () => ({ status: 404 });
    const notFound = await h.call('POST', '/v1/eventgrid/subscriptions', { endpoint: h.hook.url });
    assert.match(notFound.json.error, /answered 404, not 200/);
    const unreachable = await h.call('POST', '/v1/eventgrid/subscriptions', { endpoint: 'http://127.0.0.1:1/x' });
    assert.equal(unreachable.status, 400);
    assert.match(unreachable.json.error, /did not answer \(SocketError/);
    assert.deepEqual((await h.call('GET', '/v1/eventgrid/subscriptions')).json.subscriptions, []);
    h.hook.respond = passHandshakes;
  });

  // The control API's rule (SPEC §4): "Bad body: 400", with the message naming the field.
  test('a bad body is a 400 naming the field, before any request to the webhook', async () => {
    const h = await start();
    const cases: [unknown, RegExp][] = [
      [{}, /^endpoint: required/],
      [{ endpoint: 'ftp://x/y' }, /^endpoint: must be an absolute http/],
      [{ endpoint: h.hook.url, schema: 'CustomInputSchema' }, /^schema: /],
      [{ endpoint: h.hook.url, maxEventsPerBatch: 5001 }, /^maxEventsPerBatch: /],
      [{ endpoint: h.hook.url, preferredBatchSizeInKilobytes: 0 }, /^preferredBatchSizeInKilobytes: /],
      [{ endpoint: h.hook.url, maxDeliveryAttempts: 31 }, /^maxDeliveryAttempts: /],
      [{ endpoint: h.hook.url, eventTimeToLiveInMinutes: 1441 }, /^eventTimeToLiveInMinutes: /],
      [{ endpoint: h.hook.url, other: 1 }, /unknown field "other"/],
    ];
    for (const [body, message] of cases) {
      const res = await h.call('POST', '/v1/eventgrid/subscriptions', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.json.error, message);
    }
    assert.equal(h.hook.requests.length, 0);
    const missing = await h.call('GET', '/v1/eventgrid/subscriptions/nope');
    assert.equal(missing.status, 404);
    assert.match(missing.json.error, /no Event Grid subscription "nope"/);
  });
});
