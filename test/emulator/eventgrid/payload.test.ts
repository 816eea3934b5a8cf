// What a notification looks like, read by @azure/eventgrid as a consumer reads it: Microsoft's sample
// payload, field for field, in both schemas, for enabled resources only, at every status.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatRfc1123 } from '../../../src/protocol/time.js';
import { cloudEvents, eventGridEvents, start, SUB, T0 } from './harness.js';
import { delay } from '../../support/wait.js';

const ARM = `/subscriptions/${SUB}/resourceGroups/rg1/providers/Microsoft.Compute`;
const RFC1123 = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Raw = any;
/** The keys of `data.resourceInfo.properties`, in Microsoft's sample's order. */
const SAMPLE_PROPERTIES = [
  'DurationInSeconds',
  'Description',
  'EventId',
  'EventSource',
  'EventStatus',
  'EventType',
  'NotBefore',
  'Resources',
  'ResourceType',
];

describe('Event Grid: the ScheduledEventEmitted payload', () => {
  // Microsoft's sample ("Scheduled Events in Event Grid Concepts"): {"id", "topic": "/subscriptions/{subscription-id}",
  // "subject": "…/providers/microsoft.maintenance/scheduledevents/{event-id}", "data": {"resourceInfo": {"id", "name",
  // "type": "microsoft.maintenance/scheduledEvents", "location", "properties": {"DurationInSeconds", "Description",
  // "EventId", "EventSource", "EventStatus", "EventType", "NotBefore", "Resources", "ResourceType"}}, "apiVersion":
  // "2024-07-01"}, "eventType": "Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted",
  // "dataVersion": "3.0", "metadataVersion": "1", "eventTime"}.
  test('EventGridSchema: the sample payload, its keys in the sample order, for a VM outside scale sets', async () => {
    const h = await start();
    await h.subscribe();
    const eventId = await h.operation('freeze', ['solo']);
    const [delivery] = await h.deliveries(1);
    const [raw] = JSON.parse(delivery!.body) as Raw[];
    assert.deepEqual(Object.keys(raw), ['id', 'topic', 'subject', 'data', 'eventType', 'dataVersion', 'metadataVersion', 'eventTime']);
    assert.deepEqual(Object.keys(raw.data), ['resourceInfo', 'apiVersion']);
    assert.deepEqual(Object.keys(raw.data.resourceInfo), ['id', 'name', 'type', 'location', 'properties']);
    assert.deepEqual(Object.keys(raw.data.resourceInfo.properties), SAMPLE_PROPERTIES);
    const [event] = await eventGridEvents(delivery!);
    const subject = `${ARM}/virtualMachines/solo/providers/microsoft.maintenance/scheduledevents/${eventId}`;
    assert.match(event!.id, /^[0-9a-f-]{36}$/);
    assert.equal(event!.topic, `/subscriptions/${SUB}`);
    assert.equal(event!.subject, subject);
    assert.equal(event!.eventType, 'Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted');
    assert.equal(event!.dataVersion, '3.0');
    assert.equal(raw.metadataVersion, '1');
    assert.equal(event!.eventTime.getTime(), T0);
    assert.deepEqual(event!.data, {
      resourceInfo: {
        id: subject,
        name: eventId,
        type: 'microsoft.maintenance/scheduledEvents',
        location: 'westeurope',
        properties: {
          DurationInSeconds: 5,
          Description: raw.data.resourceInfo.properties.Description,
          EventId: eventId,
          EventSource: 'Platform',
          EventStatus: 'Scheduled',
          EventType: 'Freeze',
          NotBefore: raw.data.resourceInfo.properties.NotBefore,
          Resources: ['solo'],
          ResourceType: 'VirtualMachine',
        },
      },
      apiVersion: '2024-07-01',
    });
    assert.match(raw.data.resourceInfo.properties.NotBefore, RFC1123);
    assert.equal(delivery!.headers['aeg-delivery-count'], '0');
  });

  // Brief: "Subject … for a scale set VM: the scale set's id"; "its optional scheduledEventsApiVersion sets
  // data.apiVersion and which IMDS fields appear" (2019-08-01 has EventSource but not DurationInSeconds).
  test("a scale set's event is published under the scale set, with its policy's api-version and that version's fields", async () => {
    const h = await start();
    await h.subscribe();
    const eventId = await h.operation('freeze', ['myvmss_1', 'myvmss_2']);
    const [event] = await eventGridEvents((await h.deliveries(1))[0]!);
    assert.equal(event!.subject, `${ARM}/virtualMachineScaleSets/myvmss/providers/microsoft.maintenance/scheduledevents/${eventId}`);
    const data = event!.data as Raw;
    assert.equal(data.apiVersion, '2019-08-01');
    assert.equal(data.resourceInfo.location, 'eastus');
    assert.deepEqual(data.resourceInfo.properties.Resources, ['myvmss_1', 'myvmss_2']);
    assert.deepEqual(
      Object.keys(data.resourceInfo.properties),
      SAMPLE_PROPERTIES.filter((k) => k !== 'DurationInSeconds'),
    );
  });

  // SPEC §4: "every status change … of an event of an enabled resource is delivered" — and only theirs.
  test('only enabled resources are published: a VM without the policy sends nothing', async () => {
    const h = await start();
    await h.subscribe();
    await h.operation('freeze', ['quiet']);
    await h.advance(20 * 60);
    await h.operation('freeze', ['solo']);
    const deliveries = await h.deliveries(1);
    await delay(200);
    assert.equal(h.hook.deliveries().length, 1);
    const [event] = await eventGridEvents(deliveries[0]!);
    assert.deepEqual((event!.data as Raw).resourceInfo.properties.Resources, ['solo']);
  });

  // SPEC §4: "every status change (Scheduled, Started, Completed, Canceled)". Brief: "NotBefore: RFC 1123 while
  // Scheduled, "" once Started and after ([choice] a Canceled event keeps the NotBefore it had)".
  test('all four statuses: Scheduled, Started, Completed, and Canceled, each a new notification of the same event', async () => {
    const h = await start();
    await h.subscribe();
    const frozen = await h.operation('freeze', ['solo']);
    await h.deliveries(1);
    await h.advance(15 * 60 + 1);
    await h.deliveries(2);
    await h.advance(10 * 60 + 1);
    await h.deliveries(3);
    const restart = await h.operation('restart', ['solo']);
    await h.deliveries(4);
    assert.equal((await h.call('POST', `/v1/events/${restart}/cancel`)).status, 200);
    const all = await Promise.all((await h.deliveries(5)).map(eventGridEvents));
    const seen = all.flat().map((e) => {
      const p = (e.data as Raw).resourceInfo.properties;
      return [e.id, p.EventId, p.EventStatus, p.NotBefore] as [string, string, string, string];
    });
    assert.deepEqual(
      seen.map(([, id, status]) => [id, status]),
      [
        [frozen, 'Scheduled'],
        [frozen, 'Started'],
        [frozen, 'Completed'],
        [restart, 'Scheduled'],
        [restart, 'Canceled'],
      ],
    );
    assert.match(seen[0]![3], RFC1123);
    assert.equal(seen[1]![3], '');
    assert.equal(seen[2]![3], '');
    assert.equal(seen[4]![3], seen[3]![3]);
    assert.equal(new Set(seen.map(([id]) => id)).size, 5, 'a new Event Grid id per notification');
    assert.equal(seen[0]![3], formatRfc1123(Date.parse((await h.call('GET', '/v1/history')).json.events[1].notBefore)));
  });

  // Microsoft (CloudEvents schema): Event Grid maps topic to source, eventType to type, eventTime to time.
  test('CloudEventSchemaV1_0: one structured-mode CloudEvent with the same data', async () => {
    const h = await start();
    await h.subscribe({ schema: 'CloudEventSchemaV1_0' });
    const eventId = await h.operation('freeze', ['solo']);
    const [delivery] = await h.deliveries(1);
    assert.match(String(delivery!.headers['content-type']), /^application\/cloudevents\+json/);
    const [event] = await cloudEvents(delivery!);
    assert.equal((JSON.parse(delivery!.body) as Raw).specversion, '1.0');
    assert.equal(event!.type, 'Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted');
    assert.equal(event!.source, `/subscriptions/${SUB}`);
    assert.equal(event!.subject, `${ARM}/virtualMachines/solo/providers/microsoft.maintenance/scheduledevents/${eventId}`);
    assert.equal(event!.time?.getTime(), T0);
    assert.equal((event!.data as Raw).resourceInfo.properties.EventId, eventId);
    assert.equal((event!.data as Raw).apiVersion, '2024-07-01');
  });
});
