// The controller's approvals through ARM's acknowledge route, against a fake ARM written here.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TokenCredential } from '@azure/identity';
import { ARM_SCOPE, armApprovals } from '../../../src/agent/eventgrid/arm-approvals.js';
import { createLogger } from '../../../src/agent/logger.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import { ARM_ACKNOWLEDGE_API_VERSION, acknowledgePath } from '../../../src/protocol/arm.js';
import { RESOURCE_GROUP, SUBSCRIPTION, armIdOf, fakeArm } from './support.js';

const EVENT = 'A4F3E2D1-0000-4000-8000-000000000001';

/** A TokenCredential stand-in that hands out one token and remembers the scopes asked for. */
function stubCredential(token = 'tok-123'): TokenCredential & { scopes: string[] } {
  const scopes: string[] = [];
  return {
    scopes,
    getToken: async (scope) => {
      scopes.push(String(scope));
      return { token, expiresOnTimestamp: Date.now() + 3600_000 };
    },
  };
}

function sender(endpoint: string, credential: TokenCredential, slept: number[] = []) {
  return armApprovals({
    endpoint,
    credential,
    subjectOf: (id) => (id.toLowerCase() === EVENT.toLowerCase() ? armIdOf(EVENT) : undefined),
    log: createLogger({ level: 'silent' }),
    metrics: new AgentMetrics({ defaultMetrics: false }),
    sleep: async (ms) => void slept.push(ms),
  });
}

describe('ARM approvals', () => {
  test('POSTs the acknowledge route with the api-version and a bearer token for ARM', async () => {
    // SPEC §4: "POST /subscriptions/S/resourcegroups/RG/providers/microsoft.compute/{virtualMachines|virtualMachineScaleSets}/NAME/
    // providers/microsoft.maintenance/scheduledevents/ID/acknowledge?api-version=2023-10-01-preview … with a bearer token".
    const arm = await fakeArm();
    const credential = stubCredential();
    await sender(arm.url, credential).approve(EVENT, new AbortController().signal);
    assert.equal(arm.calls.length, 1);
    const [call] = arm.calls;
    assert.equal(call!.method, 'POST');
    assert.equal(
      call!.path,
      `/subscriptions/${SUBSCRIPTION}/resourcegroups/${RESOURCE_GROUP}/providers/microsoft.compute/virtualMachines/web-0/providers/microsoft.maintenance/scheduledevents/${EVENT}/acknowledge`,
    );
    assert.equal(
      call!.path,
      acknowledgePath({
        subscriptionId: SUBSCRIPTION,
        resourceGroup: RESOURCE_GROUP,
        resourceType: 'virtualMachines',
        resourceName: 'web-0',
        eventId: EVENT,
      }),
    );
    assert.equal(call!.apiVersion, ARM_ACKNOWLEDGE_API_VERSION);
    assert.equal(call!.authorization, 'Bearer tok-123');
    assert.deepEqual(credential.scopes, [ARM_SCOPE]);
    await arm.close();
  });

  test('a 409 saying the event has Started counts as done', async () => {
    // [choice] Approval is for starting the event early; once it has Started, that is met.
    const arm = await fakeArm(() => ({
      status: 409,
      body: { error: { code: 'Conflict', message: 'The scheduled event has already Started.' } },
    }));
    await sender(arm.url, stubCredential()).approve(EVENT, new AbortController().signal);
    assert.equal(arm.calls.length, 1);
    await arm.close();
  });

  test('retries a 503, waiting as Retry-After says, then succeeds', async () => {
    // Brief (issue 26): "Retries with backoff on 429/5xx/network errors (honour Retry-After)".
    const arm = await fakeArm((_c, n) =>
      n < 3
        ? { status: 503, headers: { 'retry-after': '7' }, body: { error: { code: 'ServiceUnavailable', message: 'busy' } } }
        : { status: 200 },
    );
    const slept: number[] = [];
    await sender(arm.url, stubCredential(), slept).approve(EVENT, new AbortController().signal);
    assert.equal(arm.calls.length, 3);
    assert.deepEqual(slept, [7000, 7000]);
    await arm.close();
  });

  test('a 403 is a refusal no retry changes; an unknown event is refused without a request', async () => {
    const arm = await fakeArm(() => ({ status: 403, body: { error: { code: 'AuthorizationFailed', message: 'no role' } } }));
    const approvals = sender(arm.url, stubCredential());
    const err = await approvals.approve(EVENT, new AbortController().signal).then(
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
