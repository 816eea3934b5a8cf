// A status change of an event as Event Grid publishes it: Azure's ScheduledEventEmitted notification,
// rendered in the Event Grid schema or the CloudEvents 1.0 schema. Pure: time and ids come in.
import { scheduledEventArmId } from '../../protocol/arm.js';
import {
  METADATA_VERSION,
  PAYLOAD_DATA_VERSION,
  SCHEDULED_EVENT_EMITTED,
  SCHEDULED_EVENT_RESOURCE_TYPE,
  type CloudEventEnvelope,
  type EventGridEnvelope,
  type EventGridSchemaName,
  type PublishedStatus,
  type ScheduledEventEmittedData,
  type ScheduledEventProperties,
} from '../../protocol/eventgrid.js';
import { renderDocument } from '../../protocol/render.js';
import { formatIso } from '../../protocol/time.js';
import type { EngineEvent } from '../engine/model.js';
import type { PublishTarget } from './targets.js';

/** One notification, whichever schema carries it. */
export interface Notification {
  /** Event Grid's id: [azure] a new GUID per notification, the same on a duplicate. */
  id: string;
  topic: string;
  subject: string;
  eventTime: number;
  data: ScheduledEventEmittedData;
}

export type Envelope = EventGridEnvelope<ScheduledEventEmittedData> | CloudEventEnvelope<ScheduledEventEmittedData>;

/**
 * The IMDS fields of the event as the target's api-version shows them (the same rules as the
 * document: src/protocol/render.ts), with the wider status, in Microsoft's sample's order.
 * NotBefore: RFC 1123 while Scheduled, "" once Started; [choice] a Canceled event (never Started)
 * keeps the NotBefore it had. Undefined when that api-version does not know the event's type.
 */
function propertiesOf(event: EngineEvent, status: PublishedStatus, target: PublishTarget): ScheduledEventProperties | undefined {
  const view = { ...event, notBefore: event.status === 'Started' ? null : event.notBefore };
  const wire = renderDocument(0, [view], target.fields, () => target.roleInstances).Events[0];
  if (wire === undefined) return undefined;
  return {
    ...(wire.DurationInSeconds !== undefined ? { DurationInSeconds: wire.DurationInSeconds } : {}),
    ...(wire.Description !== undefined ? { Description: wire.Description } : {}),
    EventId: wire.EventId,
    ...(wire.EventSource !== undefined ? { EventSource: wire.EventSource } : {}),
    EventStatus: status,
    EventType: wire.EventType,
    NotBefore: wire.NotBefore,
    Resources: wire.Resources,
    ResourceType: wire.ResourceType,
  };
}

/**
 * The notification of one status change under one target, rendered at once: the engine's event is
 * only valid during its report. [azure] topic `/subscriptions/{id}`; subject and resourceInfo.id the
 * event's ARM id; resourceInfo.name the event id.
 */
export function notificationOf(
  event: EngineEvent,
  status: PublishedStatus,
  at: number,
  target: PublishTarget,
  id: string,
): Notification | undefined {
  const properties = propertiesOf(event, status, target);
  if (properties === undefined) return undefined;
  const subject = scheduledEventArmId({ ...target, eventId: event.id });
  return {
    id,
    topic: `/subscriptions/${target.subscriptionId}`,
    subject,
    eventTime: at,
    data: {
      resourceInfo: { id: subject, name: event.id, type: SCHEDULED_EVENT_RESOURCE_TYPE, location: target.location, properties },
      apiVersion: target.apiVersion,
    },
  };
}

/**
 * [azure] The envelope in the subscription's schema, keys in Microsoft's sample's order. In CloudEvents,
 * Event Grid maps topic to `source`, eventType to `type` and eventTime to `time`.
 */
export function envelopeOf(n: Notification, schema: EventGridSchemaName): Envelope {
  if (schema === 'CloudEventSchemaV1_0') {
    return {
      specversion: '1.0',
      id: n.id,
      source: n.topic,
      subject: n.subject,
      type: SCHEDULED_EVENT_EMITTED,
      time: formatIso(n.eventTime),
      data: n.data,
    };
  }
  return {
    id: n.id,
    topic: n.topic,
    subject: n.subject,
    data: n.data,
    eventType: SCHEDULED_EVENT_EMITTED,
    dataVersion: PAYLOAD_DATA_VERSION,
    metadataVersion: METADATA_VERSION,
    eventTime: formatIso(n.eventTime),
  };
}
