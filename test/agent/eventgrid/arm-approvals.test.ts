// The controller's approvals through ARM's acknowledge route: the emulator's real route (which refuses a
// wrong path, api-version or token as ARM does), behind a proxy that records each request and stands in
// for ARM only for the answers the emulator is never asked for (a 503 with Retry-After, a missing role).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TokenCredential } from '@azure/identity';
import { ARM_SCOPE, armApprovals } from '../../../src/agent/eventgrid/arm-approvals.js';
import { createLogger } from '../../../src/agent/logger.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/library.js';
import { ARM_ACKNOWLEDGE_API_VERSION, acknowledgePath } from '../../../src/protocol/arm.js';
import { CONTROLLER_FLEET, RESOURCE_GROUP, SUBSCRIPTION, armIdOf, armProxy, forgedCredential, imdsCredential } from './support.js';

const IN_AN_HOUR = () => new Date(Date.now() + 3600_000).toISOString();

describe('ARM approvals', () => {
  let emu: EmulatorHandle;
  let identity: TokenCredential;
  before(async () => {
    emu = await startEmulator({ fleet: CONTROLLER_FLEET, clock: 'manual' });
    identity = imdsCredential(emu.vmUrl('ops'));
  });
  after(() => emu.close());

  /** A Reboot of web-0, Scheduled an hour ahead, so that only an approval starts it. */
  async function scheduled(): Promise<string> {
    const { events } = await emu.trigger({ type: 'restart', vms: ['web-0'], notBefore: IN_AN_HOUR() });
    return events[0]!;
  }

  function sender(endpoint: string, credential: TokenCredential, event: string, slept: number[] = []) {
    return armApprovals({
      endpoint,
      credential,
      subjectOf: (id) => (id.toLowerCase() === event.toLowerCase() ? armIdOf(event) : undefined),
      log: createLogger({ level: 'silent' }),
      metrics: new AgentMetrics({ defaultMetrics: false }),
      sleep: async (ms) => void slept.push(ms),
    });
  }

  test('POSTs the acknowledge route with the api-version and a bearer token for ARM, and the event starts', async () => {
    // SPEC §4: "POST /subscriptions/S/resourcegroups/RG/providers/microsoft.compute/{virtualMachines|virtualMachineScaleSets}/NAME/
    // providers/microsoft.maintenance/scheduledevents/ID/acknowledge?api-version=2023-10-01-preview … with a bearer token,
    // approves as an IMDS POST does".
    const event = await scheduled();
    const arm = await armProxy(emu.controlUrl);
    const credential = imdsCredential(emu.vmUrl('ops'));
    await sender(arm.url, credential, event).approve(event, new AbortController().signal);
    assert.equal(arm.calls.length, 1);
    const [call] = arm.calls;
    assert.equal(call!.method, 'POST');
    assert.equal(
      call!.path,
      acknowledgePath({
        subscriptionId: SUBSCRIPTION,
        resourceGroup: RESOURCE_GROUP,
        resourceType: 'virtualMachines',
        resourceName: 'web-0',
        eventId: event,
      }),
    );
    assert.equal(call!.apiVersion, ARM_ACKNOWLEDGE_API_VERSION);
    assert.match(call!.authorization ?? '', /^Bearer ey/);
    assert.equal(call!.status, 200, 'the real route took it');
    assert.deepEqual(credential.scopes, [ARM_SCOPE]);
    const seen = await emu.event(event);
    assert.equal(seen.status, 'Started');
    assert.deepEqual(
      seen.approvals.map((a) => a.vm),
      ['web-0'],
    );
    await arm.close();
  });

  test("a token ARM did not sign is refused (401) and not retried: no retry changes the route's answer", async () => {
    // [azure] ARM answers 401 to a token it did not issue; the emulator's route does too (arm-acknowledge.test.ts).
    const event = await scheduled();
    const arm = await armProxy(emu.controlUrl);
    const approvals = sender(arm.url, forgedCredential, event);
    const err = await approvals.approve(event, new AbortController().signal).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(approvals.refused(err), String(err));
    assert.match((err as Error).message, /401 InvalidAuthenticationToken.*the token was refused/);
    assert.deepEqual(
      arm.calls.map((c) => c.status),
      [401],
    );
    assert.equal((await emu.event(event)).status, 'Scheduled');
    await arm.close();
  });

  test('a 409 saying the event has Started counts as done', async () => {
    // [choice] Approval is for starting the event early; once it has Started, that is met.
    const event = await scheduled();
    await emu.approve(event, 'web-0');
    assert.equal((await emu.event(event)).status, 'Started');
    const arm = await armProxy(emu.controlUrl);
    await sender(arm.url, identity, event).approve(event, new AbortController().signal);
    assert.deepEqual(
      arm.calls.map((c) => c.status),
      [409],
    );
    await arm.close();
  });

  test('retries a 503, waiting as Retry-After says, then succeeds', async () => {
    // Brief (issue 26): "Retries with backoff on 429/5xx/network errors (honour Retry-After)".
    const event = await scheduled();
    const arm = await armProxy(emu.controlUrl, (_c, n) =>
      n < 3
        ? { status: 503, headers: { 'retry-after': '7' }, body: { error: { code: 'ServiceUnavailable', message: 'busy' } } }
        : undefined,
    );
    const slept: number[] = [];
    await sender(arm.url, identity, event, slept).approve(event, new AbortController().signal);
    assert.deepEqual(
      arm.calls.map((c) => c.status),
      [503, 503, 200],
    );
    assert.deepEqual(slept, [7000, 7000]);
    assert.equal((await emu.event(event)).status, 'Started');
    await arm.close();
  });

  test('a 403 is a refusal no retry changes; an unknown event is refused without a request', async () => {
    // [azure] ARM's 403 AuthorizationFailed: the identity lacks the role. The emulator models no RBAC, so the proxy says it.
    const event = await scheduled();
    const arm = await armProxy(emu.controlUrl, () => ({
      status: 403,
      body: { error: { code: 'AuthorizationFailed', message: 'no role' } },
    }));
    const approvals = sender(arm.url, identity, event);
    const err = await approvals.approve(event, new AbortController().signal).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(approvals.refused(err), String(err));
    assert.match((err as Error).message, /403 AuthorizationFailed/);
    assert.equal(arm.calls.length, 1);
    const unknown = await approvals.approve('not-told-of', new AbortController().signal).catch((e: unknown) => e);
    assert.ok(approvals.refused(unknown));
    assert.equal(arm.calls.length, 1);
    await arm.close();
  });
});
