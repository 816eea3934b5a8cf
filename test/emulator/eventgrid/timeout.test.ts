// A webhook that never answers. Microsoft ("Webhook event delivery"): Event Grid waits 30 seconds for a
// response after delivering a message; after that it reschedules the message for retry. The wait is the
// queue's `responseTimeoutMs`, shortened here so the test takes a moment, not 30 s.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { DeliveryQueue } from '../../../src/emulator/eventgrid/delivery.js';
import { settingsOf } from '../../../src/emulator/eventgrid/subscriptions.js';
import { Timing } from '../../../src/emulator/engine/timing.js';
import { SCHEDULED_EVENT_EMITTED } from '../../../src/protocol/eventgrid.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { waitFor } from '../../support/wait.js';
import { Webhook } from '../../support/webhook.js';

test('no answer within the wait: the try counts as TimedOut and is retried; after the last, dead-lettered', async () => {
  const hook = await Webhook.start(() => new Promise(() => {}));
  const closed = new AbortController();
  after(async () => {
    closed.abort();
    await hook.close();
  });
  const clock = new ManualClock(Date.parse('2025-09-19T18:00:00.000Z'));
  let changes = 0;
  const queue = new DeliveryQueue('sub', settingsOf({ endpoint: hook.url, maxDeliveryAttempts: 2 }), {
    clock,
    timing: new Timing(1),
    closed: closed.signal,
    changed: () => changes++,
    responseTimeoutMs: 200,
  });
  const envelope = {
    id: 'n1',
    topic: '/subscriptions/s',
    subject: '/subscriptions/s/x',
    data: {
      resourceInfo: {
        id: '/subscriptions/s/x',
        name: 'E1',
        type: 'microsoft.maintenance/scheduledEvents',
        location: 'eastus',
        properties: {
          EventId: 'E1',
          EventStatus: 'Scheduled' as const,
          EventType: 'Freeze' as const,
          NotBefore: '',
          Resources: ['vm0'],
          ResourceType: 'VirtualMachine' as const,
        },
      },
      apiVersion: '2024-07-01',
    },
    eventType: SCHEDULED_EVENT_EMITTED,
    dataVersion: '3.0',
    metadataVersion: '1',
    eventTime: new Date(clock.now()).toISOString(),
  };
  queue.enqueue(envelope, clock.now());
  queue.pump();
  await waitFor('the first try to time out', () => changes >= 1 || undefined);
  assert.deepEqual(queue.counts(), { delivered: 0, pending: 1, retries: 1, deadLettered: 0 });
  // The retry is due 10 s later on the emulator's clock.
  assert.equal(queue.nextDue(), clock.now() + 10_000);
  clock.advance(10_000);
  queue.pump();
  await waitFor('the second try to time out', () => changes >= 2 || undefined);
  assert.deepEqual(queue.counts(), { delivered: 0, pending: 0, retries: 1, deadLettered: 1 });
  const [dead] = queue.deadLetters();
  assert.equal(dead!.deadLetterReason, 'MaxDeliveryAttemptsExceeded');
  assert.equal(dead!.lastDeliveryOutcome, 'TimedOut');
  assert.equal(dead!.deliveryAttempts, 2);
  assert.equal(hook.requests.length, 2);
});
