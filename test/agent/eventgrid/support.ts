// What the controller's tests share: Event Grid deliveries built with the protocol's types, and the
// emulator's real ARM route behind a proxy that records acknowledgements.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TokenCredential } from '@azure/identity';
import type { EventOutcome, EventSink, SeenKind } from '../../../src/agent/monitor.js';
import type { ScheduledEvent } from '../../../src/client/index.js';
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
  /** What the caller got: the real route's status, or the injected one. */
  status: number;
}

export interface ArmAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * ARM for the controller's tests: the emulator's real acknowledge route, behind a proxy that records
 * each request. Where `inject` answers, the proxy replies in ARM's place (a throttle, an outage, a role
 * the identity lacks: answers the emulator is never asked for); everything else reaches the real route,
 * so a wrong path, api-version or token is refused as ARM refuses it.
 */
export async function armProxy(
  target: string,
  inject: (call: Omit<ArmCall, 'status'>, n: number) => ArmAnswer | undefined = () => undefined,
): Promise<{ url: string; calls: ArmCall[]; close(): Promise<void> }> {
  const calls: ArmCall[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const u = new URL(req.url ?? '/', 'http://x');
        const seen = {
          method: req.method ?? '',
          path: u.pathname,
          apiVersion: u.searchParams.get('api-version'),
          authorization: req.headers.authorization,
        };
        const injected = inject(seen, calls.length + 1);
        const call: ArmCall = { ...seen, status: 0 };
        calls.push(call);
        if (injected !== undefined) {
          call.status = injected.status;
          res.writeHead(injected.status, { 'content-type': 'application/json', ...injected.headers });
          res.end(JSON.stringify(injected.body ?? {}));
          return;
        }
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'connection') headers[k] = v;
        const body = Buffer.concat(chunks);
        const real = await fetch(new URL(req.url ?? '/', target), {
          method: req.method ?? 'GET',
          headers,
          ...(body.length > 0 ? { body } : {}),
        });
        call.status = real.status;
        res.writeHead(real.status, { 'content-type': real.headers.get('content-type') ?? 'application/json' });
        res.end(Buffer.from(await real.arrayBuffer()));
      })().catch((err: unknown) => {
        res.writeHead(502);
        res.end(String(err));
      });
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

/**
 * A TokenCredential that asks the emulator's IMDS for VM `vm`'s managed identity token, for ARM: the
 * tokens ARM takes. It keeps a token until five minutes before it expires, as @azure/identity does: IMDS
 * allows 5 requests a second, and the emulator enforces that too.
 */
export function imdsCredential(vmUrl: string): TokenCredential & { scopes: string[] } {
  const scopes: string[] = [];
  const kept = new Map<string, { token: string; expiresOnTimestamp: number }>();
  return {
    scopes,
    getToken: async (scope) => {
      const key = String(scope);
      scopes.push(key);
      const held = kept.get(key);
      if (held !== undefined && held.expiresOnTimestamp - Date.now() > 300_000) return held;
      const resource = key.replace(/\/\.default$/, '/');
      const r = await fetch(`${vmUrl}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${encodeURIComponent(resource)}`, {
        headers: { metadata: 'true' },
      });
      const body = (await r.json()) as { access_token: string; expires_on: string };
      if (r.status !== 200) throw new Error(`IMDS gave no token: ${r.status} ${JSON.stringify(body)}`);
      const token = { token: body.access_token, expiresOnTimestamp: Number(body.expires_on) * 1000 };
      kept.set(key, token);
      return token;
    },
  };
}

/** A credential whose token no ARM signed: what a token for another tenant looks like to the route. */
export const forgedCredential: TokenCredential = {
  getToken: async () => ({
    token: 'eyJhbGciOiJub25lIn0.eyJhdWQiOiJodHRwczovL21hbmFnZW1lbnQuYXp1cmUuY29tLyJ9.',
    expiresOnTimestamp: Date.now() + 3600_000,
  }),
};

/** The fleet the controller's tests run against: an availability set of two VMs with the publishing policy, and the controller's own VM. */
export const CONTROLLER_FLEET = {
  tenants: [
    {
      name: 'web',
      kind: 'availabilitySet',
      faultDomainCount: 2,
      resourceGroup: RESOURCE_GROUP,
      subscriptionId: SUBSCRIPTION,
      scheduledEventsPolicy: { scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: { enable: true } } },
    },
  ],
  vms: [
    { name: 'web-0', tenant: 'web', faultDomain: 0 },
    { name: 'web-1', tenant: 'web', faultDomain: 1 },
    { name: 'ops', resourceGroup: 'rg-ops', subscriptionId: SUBSCRIPTION },
  ],
};

/** A sink that writes down what the runner would be told. */
export class Recorder implements EventSink {
  readonly calls: string[] = [];
  readonly events: ScheduledEvent[] = [];
  seen(event: ScheduledEvent, kind: SeenKind): void {
    this.calls.push(`seen:${kind}:${event.id}`);
    this.events.push(event);
  }
  gone(event: ScheduledEvent, outcome: EventOutcome): void {
    this.calls.push(`gone:${outcome}:${event.id}`);
  }
  unfinished(event: ScheduledEvent, outcome: EventOutcome): void {
    this.calls.push(`unfinished:${outcome}:${event.id}`);
  }
}
