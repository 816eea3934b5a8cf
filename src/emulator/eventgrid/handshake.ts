// Event Grid's endpoint validation before a webhook gets any event: the SubscriptionValidationEvent for the
// Event Grid schema, the CloudEvents 1.0 abuse-protection OPTIONS request for CloudEvents.
import { randomUUID } from 'node:crypto';
import {
  AEG_SUBSCRIPTION_NAME_HEADER,
  AEG_SUBSCRIPTION_VALIDATION,
  EVENT_GRID_CONTENT_TYPE,
  EVENT_GRID_EVENT_TYPE_HEADER,
  EVENT_GRID_ORIGIN,
  METADATA_VERSION,
  SUBSCRIPTION_VALIDATION_EVENT,
  VALIDATION_DATA_VERSION,
  WEBHOOK_ALLOWED_ORIGIN,
  WEBHOOK_REQUEST_ORIGIN,
  type EventGridEnvelope,
  type EventGridSchemaName,
  type SubscriptionValidationData,
} from '../../protocol/eventgrid.js';
import { formatIso } from '../../protocol/time.js';
import { callWebhook, type WebhookAnswer } from './webhook.js';

/** Why a handshake failed, in words for the 400 that refuses the subscription; undefined when it passed. */
export type HandshakeResult = { ok: true } | { ok: false; reason: string };

function unanswered(answer: WebhookAnswer): string | undefined {
  if ('failure' in answer) return `the webhook did not answer (${answer.failure}: ${answer.detail})`;
  if (answer.status !== 200) return `the webhook answered ${answer.status}, not 200`;
  return undefined;
}

/**
 * [azure] Microsoft Learn, "Webhook event delivery": "At the time of event subscription creation, Event Grid
 * sends a subscription validation event to your endpoint … The data portion of this event includes a
 * validationCode property. Your application … returns the validation code in the response synchronously",
 * as `{"validationResponse": code}` with 200, within 30 s. The request carries `aeg-event-type:
 * SubscriptionValidation`. Manual validation (validationUrl) is not modelled, so no URL is sent.
 */
async function validationEvent(endpoint: string, name: string, topic: string, now: number, closed: AbortSignal): Promise<HandshakeResult> {
  const validationCode = randomUUID().toUpperCase();
  const event: EventGridEnvelope<SubscriptionValidationData> = {
    id: randomUUID(),
    topic,
    subject: '',
    data: { validationCode },
    eventType: SUBSCRIPTION_VALIDATION_EVENT,
    dataVersion: VALIDATION_DATA_VERSION,
    metadataVersion: METADATA_VERSION,
    eventTime: formatIso(now),
  };
  const answer = await callWebhook(
    endpoint,
    {
      method: 'POST',
      headers: {
        'content-type': EVENT_GRID_CONTENT_TYPE,
        [EVENT_GRID_EVENT_TYPE_HEADER]: AEG_SUBSCRIPTION_VALIDATION,
        [AEG_SUBSCRIPTION_NAME_HEADER]: name,
      },
      body: JSON.stringify([event]),
    },
    closed,
    true,
  );
  const refused = unanswered(answer);
  if (refused !== undefined) return { ok: false, reason: refused };
  let body: unknown;
  try {
    body = JSON.parse((answer as { text: string }).text);
  } catch {
    return { ok: false, reason: 'the webhook answered 200 without a JSON body; it must be {"validationResponse": CODE}' };
  }
  const echoed = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).validationResponse : undefined;
  if (echoed !== validationCode) {
    return { ok: false, reason: `the webhook's validationResponse is ${JSON.stringify(echoed) ?? 'missing'}, not the validationCode sent` };
  }
  return { ok: true };
}

/**
 * [azure] Microsoft Learn, "Endpoint validation with CloudEvents schema": CloudEvents v1.0 "implements its own
 * abuse protection semantics using the HTTP OPTIONS method"; the request names the sender in
 * `WebHook-Request-Origin: eventgrid.azure.net`, and the webhook grants it with `WebHook-Allowed-Origin`
 * (that origin, or `*`) in a 200 answer.
 */
async function abuseProtection(endpoint: string, closed: AbortSignal): Promise<HandshakeResult> {
  const answer = await callWebhook(endpoint, { method: 'OPTIONS', headers: { [WEBHOOK_REQUEST_ORIGIN]: EVENT_GRID_ORIGIN } }, closed);
  const refused = unanswered(answer);
  if (refused !== undefined) return { ok: false, reason: refused };
  const allowed = (answer as { headers: Headers }).headers.get(WEBHOOK_ALLOWED_ORIGIN);
  if (allowed === null || (allowed.trim() !== '*' && allowed.trim().toLowerCase() !== EVENT_GRID_ORIGIN)) {
    return {
      ok: false,
      reason: `the webhook's OPTIONS answer must carry WebHook-Allowed-Origin: ${EVENT_GRID_ORIGIN} (or *); it carried ${allowed === null ? 'none' : JSON.stringify(allowed)}`,
    };
  }
  return { ok: true };
}

/** Validates a webhook as Event Grid does for the schema asked for. */
export function handshake(
  endpoint: string,
  schema: EventGridSchemaName,
  context: { name: string; topic: string; now: number; closed: AbortSignal },
): Promise<HandshakeResult> {
  return schema === 'CloudEventSchemaV1_0'
    ? abuseProtection(endpoint, context.closed)
    : validationEvent(endpoint, context.name, context.topic, context.now, context.closed);
}
