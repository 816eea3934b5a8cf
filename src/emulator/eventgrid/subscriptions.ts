// An event subscription's settings: its webhook, schema, batching and retry policy, with Event Grid's
// defaults and limits. The one owner of these numbers; the control API's schema takes them from here.
import type { EventGridSchemaName } from '../../protocol/eventgrid.js';

/**
 * [azure] Microsoft Learn, "Event Grid message delivery and retry": "Max events per batch … Must be between
 * 1 and 5,000", "Preferred batch size in kilobytes … between 1 and 1024"; batching is off by default (one
 * event per delivery). [choice] 64 KB as the preferred size when only the event count is set, the value
 * Event Grid's portal proposes. Retry policy: "Maximum number of attempts … between 1 and 30. The default
 * value is 30", "Event time-to-live (TTL) … between 1 and 1440. The default value is 1440 minutes".
 */
export const SUBSCRIPTION_LIMITS = {
  maxEventsPerBatch: { min: 1, max: 5000, default: 1 },
  preferredBatchSizeInKilobytes: { min: 1, max: 1024, default: 64 },
  maxDeliveryAttempts: { min: 1, max: 30, default: 30 },
  eventTimeToLiveInMinutes: { min: 1, max: 1440, default: 1440 },
} as const;

export type SubscriptionSetting = keyof typeof SUBSCRIPTION_LIMITS;

/** [choice] The schema when none is given: Event Grid's own, as `az eventgrid event-subscription create` defaults to. */
export const DEFAULT_SCHEMA: EventGridSchemaName = 'EventGridSchema';

/** What a subscription is asked for; absent settings take Event Grid's defaults. */
export type SubscriptionRequest = { endpoint: string; schema?: EventGridSchemaName | undefined } & {
  [K in SubscriptionSetting]?: number | undefined;
};

export interface SubscriptionSettings {
  endpoint: string;
  schema: EventGridSchemaName;
  maxEventsPerBatch: number;
  preferredBatchSizeInKilobytes: number;
  maxDeliveryAttempts: number;
  eventTimeToLiveInMinutes: number;
}

export function settingsOf(request: SubscriptionRequest): SubscriptionSettings {
  const pick = (key: SubscriptionSetting) => request[key] ?? SUBSCRIPTION_LIMITS[key].default;
  return {
    endpoint: request.endpoint,
    schema: request.schema ?? DEFAULT_SCHEMA,
    maxEventsPerBatch: pick('maxEventsPerBatch'),
    preferredBatchSizeInKilobytes: pick('preferredBatchSizeInKilobytes'),
    maxDeliveryAttempts: pick('maxDeliveryAttempts'),
    eventTimeToLiveInMinutes: pick('eventTimeToLiveInMinutes'),
  };
}
