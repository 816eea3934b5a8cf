// What the controller's tests share: Event Grid deliveries built with the protocol's types, and a
// fake ARM that records acknowledgements.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { scheduledEventArmId } from '../../../src/protocol/arm.js';
import {
  DEFAULT_PAYLOAD_API_VERSION,
  METADATA_VERSION,
  PAYLOAD_DATA_VERSION,
  SCHEDULED_EVENT_EMITTED,
  SCHEDULED_EVENT_RESOURCE_TYPE,
  type CloudEventEnvelope,
  type EventGridEnvelope,
  type PublishedStatus,
  type ScheduledEventEmittedData,
  type ScheduledEventProperties,
} from '../../../src/protocol/eventgrid.js';

export const SUBSCRIPTION = '00000000-0000-0000-0000-0000000000aa';
export const RESOURCE_GROUP = 'rg-web';

export function armIdOf(eventId: string, vm = 'web-0'): string {
  return scheduledEventArmId({
    subscriptionId: SUBSCRIPTION,
    resourceGroup: RESOURCE_GROUP,
    resourceType: 'virtualMachines',
    resourceName: vm,
    eventId,
  });
}

let counter = 0;

/** One ScheduledEventEmitted notification's data, as Microsoft's sample shapes it. */
export function emitted(eventId: string, status: PublishedStatus, over: Partial<ScheduledEventProperties> = {}): ScheduledEventEmittedData {
  const properties: ScheduledEventProperties = {
    DurationInSeconds: -1,
    Description: 'Host server is undergoing maintenance.',
    EventId: eventId,
    EventSource: 'Platform',
    EventStatus: status,
    EventType: 'Reboot',
    NotBefore: status === 'Scheduled' ? new Date(Date.now() + 3600_000).toUTCString() : '',
    Resources: ['web-0'],
    ResourceType: 'VirtualMachine',
    ...over,
  };
  return {
    resourceInfo: { id: armIdOf(eventId), name: eventId, type: SCHEDULED_EVENT_RESOURCE_TYPE, location: 'westeurope', properties },
    apiVersion: DEFAULT_PAYLOAD_API_VERSION,
  };
}

/** An Event Grid schema envelope; `id` defaults to a fresh one, `time` to now. */
export function gridEvent(
  data: ScheduledEventEmittedData,
  over: { id?: string; time?: string } = {},
): EventGridEnvelope<ScheduledEventEmittedData> {
  counter += 1;
  return {
    id: over.id ?? `notification-${counter}`,
    topic: `/subscriptions/${SUBSCRIPTION}`,
    subject: data.resourceInfo.id,
    data,
    eventType: SCHEDULED_EVENT_EMITTED,
    dataVersion: PAYLOAD_DATA_VERSION,
    metadataVersion: METADATA_VERSION,
    eventTime: over.time ?? new Date().toISOString(),
  };
}

export function cloudEvent(data: ScheduledEventEmittedData, over: { id?: string } = {}): CloudEventEnvelope<ScheduledEventEmittedData> {
  counter += 1;
  return {
    specversion: '1.0',
    id: over.id ?? `notification-${counter}`,
    source: `/subscriptions/${SUBSCRIPTION}`,
    subject: data.resourceInfo.id,
    type: SCHEDULED_EVENT_EMITTED,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data,
  };
}

/** POSTs JSON (or sends `method`) and returns the status and body text. */
export async function send(
  url: string,
  body: unknown,
  init: { method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const response = await fetch(url, {
    method: init.method ?? 'POST',
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, text: await response.text(), headers: response.headers };
}

export interface ArmCall {
  method: string;
  path: string;
  apiVersion: string | null;
  authorization: string | undefined;
}

/** A fake ARM: records each request; `answer` decides the reply (default 200 "Successfully Approved"). */
export async function fakeArm(
  answer: (call: ArmCall, n: number) => { status: number; body?: unknown; headers?: Record<string, string> } = () => ({ status: 200 }),
): Promise<{ url: string; calls: ArmCall[]; close(): Promise<void> }> {
  const calls: ArmCall[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://x');
      const call = {
        method: req.method ?? '',
        path: u.pathname,
        apiVersion: u.searchParams.get('api-version'),
        authorization: req.headers.authorization,
      };
      calls.push(call);
      const a = answer(call, calls.length);
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
      res.end(JSON.stringify(a.body ?? { value: 'Successfully Approved' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
