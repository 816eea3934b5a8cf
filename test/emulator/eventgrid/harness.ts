// An emulator on the manual clock with a real webhook, for the Event Grid tests: deliveries are read with
// @azure/eventgrid's EventGridDeserializer, as real consumers read them.
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { EventGridDeserializer, type CloudEvent, type EventGridEvent } from '@azure/eventgrid';
import { Emulator } from '../../../src/emulator/emulator.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { caller, type Call } from '../../support/control.js';
import { waitFor } from '../../support/wait.js';
import { Webhook, type Received, type Responder } from '../../support/webhook.js';

export const T0 = Date.parse('2025-09-19T18:00:00.000Z');
export const SUB = '11111111-2222-3333-4444-555555555555';
const PUBLISH = { scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: { enable: true } } };
const PUBLISH_2019 = {
  scheduledEventsAdditionalPublishingTargets: {
    eventGridAndResourceGraph: { enable: true, scheduledEventsApiVersion: '2019-08-01' as const },
  },
};

/** solo publishes; quiet does not; myvmss (two VMs) publishes with api-version 2019-08-01. */
export const FLEET: VmSpec[] = [
  { name: 'solo', subscriptionId: SUB, resourceGroup: 'rg1', location: 'westeurope', scheduledEventsPolicy: PUBLISH },
  { name: 'quiet' },
  {
    name: 'myvmss_1',
    tenant: 'myvmss',
    tenantKind: 'scaleSet',
    faultDomain: 0,
    subscriptionId: SUB,
    resourceGroup: 'rg1',
    scheduledEventsPolicy: PUBLISH_2019,
  },
  {
    name: 'myvmss_2',
    tenant: 'myvmss',
    tenantKind: 'scaleSet',
    faultDomain: 1,
    subscriptionId: SUB,
    resourceGroup: 'rg1',
    scheduledEventsPolicy: PUBLISH_2019,
  },
];

export interface Harness {
  emulator: Emulator;
  clock: ManualClock;
  call: Call;
  imdsUrl: string;
  hook: Webhook;
  /** POST /v1/eventgrid/subscriptions to the webhook; asserts 201 and returns the subscription's id. */
  subscribe(body?: Record<string, unknown>): Promise<string>;
  advance(seconds: number): Promise<void>;
  /** Creates an operation and returns its one event's id. */
  operation(type: string, vms: string[]): Promise<string>;
  /** Waits until the webhook has had `n` deliveries of events. */
  deliveries(n: number): Promise<Received[]>;
}

const deserializer = new EventGridDeserializer();
export const eventGridEvents = (r: Received): Promise<EventGridEvent<unknown>[]> => deserializer.deserializeEventGridEvents(r.body);
export const cloudEvents = (r: Received): Promise<CloudEvent<unknown>[]> => deserializer.deserializeCloudEvents(r.body);

/** Starts an emulator and a webhook, both closed after the file's tests. */
export async function start(respond?: Responder, fleet: VmSpec[] = FLEET): Promise<Harness> {
  const clock = new ManualClock(T0);
  const emulator = await Emulator.create({ clock, fleet, rateLimit: 0 });
  const hook = await Webhook.start(respond);
  after(async () => {
    await emulator.close();
    await hook.close();
  });
  const loopback = { host: '127.0.0.1', port: 0 };
  const { imdsUrl, controlUrl } = await emulator.listen({ imds: loopback, control: loopback });
  const call = caller(controlUrl);
  return {
    emulator,
    clock,
    call,
    imdsUrl,
    hook,
    async subscribe(body = {}) {
      const res = await call('POST', '/v1/eventgrid/subscriptions', { endpoint: hook.url, ...body });
      assert.equal(res.status, 201, res.text);
      return res.json.subscription.id as string;
    },
    async advance(seconds) {
      const res = await call('POST', '/v1/clock/advance', { seconds });
      assert.equal(res.status, 200, res.text);
    },
    async operation(type, vms) {
      const res = await call('POST', '/v1/operations', { type, vms });
      assert.equal(res.status, 201, res.text);
      return res.json.events[0] as string;
    },
    deliveries(n) {
      return waitFor(
        () => `${n} deliveries, got ${hook.deliveries().length}`,
        () => hook.deliveries().length >= n && hook.deliveries(),
      );
    },
  };
}
