// Scheduled events as Event Grid delivers them: the system topic's event type, its payload in the Event Grid
// and CloudEvents 1.0 schemas, and the subscription validation handshake. The emulator builds these; the
// controller reads them, so both follow this one description.
import type { EventSource, EventType } from './types.js';

/** [azure] The system topic type a subscription is made on. */
export const MAINTENANCE_TOPIC_TYPE = 'Microsoft.ResourceNotifications.MaintenanceResources';
/** [azure] The one event type scheduled events are published as. */
export const SCHEDULED_EVENT_EMITTED = 'Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted';
/** [azure] What Event Grid sends a new webhook first; the webhook echoes its code to prove it wants the events. */
export const SUBSCRIPTION_VALIDATION_EVENT = 'Microsoft.EventGrid.SubscriptionValidationEvent';
/** [azure] Sent when a subscription is deleted (Event Grid schema only). */
export const SUBSCRIPTION_DELETED_EVENT = 'Microsoft.EventGrid.SubscriptionDeletedEvent';

/** [azure] The delivery schemas a subscription may ask for. */
export const EVENT_GRID_SCHEMAS = ['EventGridSchema', 'CloudEventSchemaV1_0'] as const;
export type EventGridSchemaName = (typeof EVENT_GRID_SCHEMAS)[number];

/** [azure] IMDS's statuses and the two only Event Grid and Resource Graph show. */
export const PUBLISHED_STATUSES = ['Scheduled', 'Started', 'Completed', 'Canceled'] as const;
export type PublishedStatus = (typeof PUBLISHED_STATUSES)[number];

/** [azure] Microsoft's sample payload's `data.apiVersion` and `dataVersion`; a policy's scheduledEventsApiVersion overrides the first. */
export const DEFAULT_PAYLOAD_API_VERSION = '2024-07-01';
export const PAYLOAD_DATA_VERSION = '3.0';
/** [azure] Event Grid's own envelope version. */
export const METADATA_VERSION = '1';
/** [azure] `data.resourceInfo.type`, cased as Microsoft's sample. */
export const SCHEDULED_EVENT_RESOURCE_TYPE = 'microsoft.maintenance/scheduledEvents';

/** The IMDS fields of `data.resourceInfo.properties`, in Microsoft's sample's order, with the wider status. */
export interface ScheduledEventProperties {
  DurationInSeconds?: number;
  Description?: string;
  EventId: string;
  EventSource?: EventSource;
  EventStatus: PublishedStatus;
  EventType: EventType;
  /** RFC 1123, or `""` once Started and after. */
  NotBefore: string;
  Resources: string[];
  ResourceType: 'VirtualMachine';
}

export interface ScheduledEventEmittedData {
  resourceInfo: {
    id: string;
    name: string;
    type: string;
    location: string;
    properties: ScheduledEventProperties;
  };
  apiVersion: string;
}

/** An event in the Event Grid schema. */
export interface EventGridEnvelope<T = unknown> {
  id: string;
  topic: string;
  subject: string;
  data: T;
  eventType: string;
  dataVersion: string;
  metadataVersion: string;
  eventTime: string;
}

/** An event in the CloudEvents 1.0 schema, as Event Grid maps its own fields. */
export interface CloudEventEnvelope<T = unknown> {
  specversion: '1.0';
  id: string;
  source: string;
  subject: string;
  type: string;
  time: string;
  datacontenttype?: string;
  data: T;
}

/** [azure] The validation event's `data`. `validationUrl` is for manual validation, which the emulator does not model. */
export interface SubscriptionValidationData {
  validationCode: string;
  validationUrl?: string;
}

/** [azure] The webhook's answer to the handshake. */
export interface SubscriptionValidationResponse {
  validationResponse: string;
}

/**
 * [azure] CloudEvents subscriptions validate with the Webhook spec's abuse-protection OPTIONS request: the
 * sender names itself in `WebHook-Request-Origin`, the receiver answers `WebHook-Allowed-Origin`.
 */
export const WEBHOOK_REQUEST_ORIGIN = 'webhook-request-origin';
export const WEBHOOK_ALLOWED_ORIGIN = 'webhook-allowed-origin';
/** [azure] The origin Event Grid names itself with. */
export const EVENT_GRID_ORIGIN = 'eventgrid.azure.net';

/** [azure] Header Event Grid sends on each delivery: which kind of message it is. */
export const EVENT_GRID_EVENT_TYPE_HEADER = 'aeg-event-type';
export const AEG_NOTIFICATION = 'Notification';
export const AEG_SUBSCRIPTION_VALIDATION = 'SubscriptionValidation';
/** [azure] Headers that say which delivery attempt this is, counted from 0. */
export const AEG_DELIVERY_COUNT_HEADER = 'aeg-delivery-count';
export const AEG_SUBSCRIPTION_NAME_HEADER = 'aeg-subscription-name';
/** [azure] The envelope versions, sent as headers too (Event Grid schema). */
export const AEG_DATA_VERSION_HEADER = 'aeg-data-version';
export const AEG_METADATA_VERSION_HEADER = 'aeg-metadata-version';
/** [azure] The validation event's own `dataVersion`, as Microsoft's samples show it. */
export const VALIDATION_DATA_VERSION = '2';

/**
 * [azure] Content types of a delivery: the Event Grid schema is a JSON array; CloudEvents go one event
 * in structured mode, or several in batched mode (CloudEvents' JSON format).
 */
export const EVENT_GRID_CONTENT_TYPE = 'application/json; charset=utf-8';
export const CLOUDEVENT_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';
export const CLOUDEVENT_BATCH_CONTENT_TYPE = 'application/cloudevents-batch+json; charset=utf-8';

/** What a receiver learned from one scheduled-event notification, whichever schema carried it. */
export interface ScheduledEventNotification {
  /** Event Grid's id of the notification: the same on a duplicate. */
  id: string;
  /** The event's ARM id. */
  subject: string;
  time: string;
  data: ScheduledEventEmittedData;
}

/** One parsed item of a delivery body. */
export type DeliveryItem =
  | { kind: 'validation'; data: SubscriptionValidationData }
  | { kind: 'scheduled-event'; notification: ScheduledEventNotification }
  | { kind: 'other'; type: string; id: string };

/** A delivery body that is not what Event Grid sends; `path` names where, as `[0].data.resourceInfo`. */
export class DeliveryFormatError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path === '' ? 'body' : path}: ${message}`);
    this.name = 'DeliveryFormatError';
  }
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

function str(o: Obj, key: string, at: string): string {
  const v = o[key];
  if (typeof v !== 'string' || v === '') throw new DeliveryFormatError(`${at}.${key}`, 'expected a non-empty string');
  return v;
}

function obj(o: Obj, key: string, at: string): Obj {
  const v = o[key];
  if (!isObj(v)) throw new DeliveryFormatError(`${at}.${key}`, 'expected an object');
  return v;
}

function properties(p: Obj, at: string): ScheduledEventProperties {
  const status = p.EventStatus;
  if (typeof status !== 'string' || !(PUBLISHED_STATUSES as readonly string[]).includes(status)) {
    throw new DeliveryFormatError(`${at}.EventStatus`, `expected one of ${PUBLISHED_STATUSES.join(', ')}`);
  }
  const resources = p.Resources;
  if (!Array.isArray(resources) || resources.some((r) => typeof r !== 'string')) {
    throw new DeliveryFormatError(`${at}.Resources`, 'expected an array of VM names');
  }
  if (typeof p.NotBefore !== 'string') throw new DeliveryFormatError(`${at}.NotBefore`, 'expected a string');
  // The rest of the fields are carried as sent: their meaning is IMDS's, which the reader already checks.
  return { ...(p as unknown as ScheduledEventProperties), EventId: str(p, 'EventId', at), EventType: str(p, 'EventType', at) as EventType };
}

/**
 * Reads a webhook delivery as Event Grid sends it: a JSON array (Event Grid schema, or CloudEvents in
 * batch mode) or one CloudEvent. Throws DeliveryFormatError naming the field that is wrong.
 */
export function parseDelivery(body: unknown, schema: EventGridSchemaName): DeliveryItem[] {
  const items = Array.isArray(body) ? body : schema === 'CloudEventSchemaV1_0' && isObj(body) ? [body] : undefined;
  if (items === undefined) throw new DeliveryFormatError('', 'expected a JSON array of events');
  return items.map((raw, i) => {
    const at = `[${i}]`;
    if (!isObj(raw)) throw new DeliveryFormatError(at, 'expected an event object');
    const type = schema === 'EventGridSchema' ? str(raw, 'eventType', at) : str(raw, 'type', at);
    const id = str(raw, 'id', at);
    if (type === SUBSCRIPTION_VALIDATION_EVENT) {
      const data = obj(raw, 'data', at);
      return { kind: 'validation', data: { validationCode: str(data, 'validationCode', `${at}.data`) } };
    }
    if (type !== SCHEDULED_EVENT_EMITTED) return { kind: 'other', type, id };
    const data = obj(raw, 'data', at);
    const info = obj(data, 'resourceInfo', `${at}.data`);
    const props = properties(obj(info, 'properties', `${at}.data.resourceInfo`), `${at}.data.resourceInfo.properties`);
    const time = schema === 'EventGridSchema' ? str(raw, 'eventTime', at) : str(raw, 'time', at);
    return {
      kind: 'scheduled-event',
      notification: {
        id,
        subject: str(raw, 'subject', at),
        time,
        data: {
          resourceInfo: {
            id: str(info, 'id', `${at}.data.resourceInfo`),
            name: str(info, 'name', `${at}.data.resourceInfo`),
            type: str(info, 'type', `${at}.data.resourceInfo`),
            location: typeof info.location === 'string' ? info.location : '',
            properties: props,
          },
          apiVersion: typeof data.apiVersion === 'string' ? data.apiVersion : '',
        },
      },
    };
  });
}
