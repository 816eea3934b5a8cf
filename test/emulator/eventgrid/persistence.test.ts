// Subscriptions are kept in the state file. The brief: "nothing acknowledged and then forgotten"; SPEC §4
// subscribes a webhook with `POST /v1/eventgrid/subscriptions`, and with --state a 2xx to a change means it
// is saved. A restart carries a subscription on (Event Grid does not validate an existing one again), a
// delete stays deleted, and a reset keeps them, as it keeps the emulator's other settings.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/library.js';
import { caller, type Answer } from '../../support/control.js';
import { tempDir } from '../../support/temp.js';
import { waitFor } from '../../support/wait.js';
import { Webhook } from '../../support/webhook.js';

const PUBLISH = { scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: { enable: true } } };
const FLEET = { vms: [{ name: 'solo', scheduledEventsPolicy: PUBLISH }] };

function call(emu: EmulatorHandle, method: string, path: string, body?: unknown): Promise<Answer> {
  return caller(emu.controlUrl)(method, path, body);
}

describe('Event Grid subscriptions in the state file', () => {
  const dir = tempDir('eventgrid-state');
  const hooks: Webhook[] = [];
  after(async () => Promise.all(hooks.map((h) => h.close())));

  it('a subscription outlives a restart with the same settings, and deliveries go on without a second handshake', async () => {
    const state = join(dir, 'kept.json');
    const hook = await Webhook.start();
    hooks.push(hook);
    let emu = await startEmulator({ fleet: FLEET, state, clock: 'manual' });
    const made = await call(emu, 'POST', '/v1/eventgrid/subscriptions', { endpoint: hook.url, maxEventsPerBatch: 10 });
    assert.equal(made.status, 201);
    await emu.close();
    const handshakes = hook.requests.length;

    emu = await startEmulator({ state, clock: 'manual' });
    try {
      const listed = await call(emu, 'GET', '/v1/eventgrid/subscriptions');
      assert.equal(listed.json.subscriptions.length, 1);
      const kept = listed.json.subscriptions[0];
      assert.equal(kept.id, made.json.subscription.id);
      assert.equal(kept.endpoint, hook.url);
      assert.equal(kept.maxEventsPerBatch, 10);
      assert.equal(kept.createdAt, made.json.subscription.createdAt);
      assert.equal((await call(emu, 'POST', '/v1/operations', { type: 'restart', vms: ['solo'] })).status, 201);
      await waitFor('the notification', () => hook.deliveries().length === 1 || undefined);
      assert.equal(hook.requests.length, handshakes + 1, 'no second handshake');
    } finally {
      await emu.close();
    }
  });

  it('a deleted subscription stays deleted after a restart; a reset keeps subscriptions', async () => {
    const state = join(dir, 'deleted.json');
    const hook = await Webhook.start();
    hooks.push(hook);
    let emu = await startEmulator({ fleet: FLEET, state, clock: 'manual' });
    const a = await call(emu, 'POST', '/v1/eventgrid/subscriptions', { endpoint: hook.url });
    const b = await call(emu, 'POST', '/v1/eventgrid/subscriptions', { endpoint: hook.url, schema: 'CloudEventSchemaV1_0' });
    assert.equal((await call(emu, 'DELETE', `/v1/eventgrid/subscriptions/${a.json.subscription.id}`)).status, 200);
    assert.equal((await call(emu, 'POST', '/v1/reset', {})).status, 200);
    await emu.close();

    emu = await startEmulator({ state, clock: 'manual' });
    try {
      const listed = await call(emu, 'GET', '/v1/eventgrid/subscriptions');
      assert.deepEqual(
        listed.json.subscriptions.map((s: { id: string; schema: string }) => [s.id, s.schema]),
        [[b.json.subscription.id, 'CloudEventSchemaV1_0']],
      );
    } finally {
      await emu.close();
    }
  });
});
