// End to end, with every part real: the emulator's Event Grid delivery and ARM route, and `forewarn controller`
// as a process, getting its ARM token from the emulator's IMDS through @azure/identity's ManagedIdentityCredential.
// Issue 26: "three VMs of a scale set with the policy, a controller receiving Event Grid, a rolling host update
// over the set: each event prepared and acknowledged through ARM, Completed seen for each, with a budget of one."
// SPEC §4: "`forewarn controller --config FILE` runs the agent's rules for a fleet from Event Grid deliveries,
// approving through that route."
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/library.js';
import { CliProcess, closedPort } from '../support/cli.js';
import { tempDir } from '../support/temp.js';
import { waitFor } from '../support/wait.js';

const POLICY = { scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: { enable: true } } };
const SUB = '6c8f0d1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e';

interface Step {
  what: 'prepare' | 'complete';
  event: string;
  resources: string;
  at: number;
}

function steps(file: string): Step[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [what, event, resources, at] = line.split(' ');
      return { what: what as Step['what'], event: event!.toUpperCase(), resources: resources!, at: Number(at) };
    });
}

describe('Event Grid to the controller to ARM, end to end', () => {
  const dir = tempDir('forewarn-e2e-controller-');
  let emu: EmulatorHandle;
  let controller: CliProcess;

  before(async () => {
    emu = await startEmulator({
      fleet: {
        scaleSets: [
          { name: 'web', instances: 3, faultDomainCount: 3, resourceGroup: 'rg-web', subscriptionId: SUB, scheduledEventsPolicy: POLICY },
        ],
        // The controller's own VM: its managed identity is what acknowledges.
        vms: [{ name: 'ops', resourceGroup: 'rg-ops', subscriptionId: SUB }],
      },
      // A rolling update over three fault domains in seconds of real time, with each NotBefore about 4 s
      // ahead: time enough for the controller (it takes about 0.1 s) to prepare and acknowledge first.
      timing: 300,
    });
  });
  after(async () => {
    await controller?.stop();
    await emu?.close();
  });

  it('prepares and acknowledges each event of a rolling host update through ARM, one at a time, and sees each Completed', async () => {
    const log = join(dir, 'steps');
    const hook = await closedPort();
    const record = (what: string) => ({
      type: 'exec',
      name: what,
      argv: ['sh', '-c', `echo "${what} $FOREWARN_EVENT_ID $FOREWARN_RESOURCES $(date +%s%3N)" >> "$STEPS"`],
      env: { STEPS: log },
    });
    const config = join(dir, 'controller.json');
    writeFileSync(
      config,
      JSON.stringify({
        eventGrid: { listen: `127.0.0.1:${hook}`, path: '/eventgrid' },
        arm: { endpoint: emu.controlUrl, credential: { kind: 'managedIdentity' } },
        journal: join(dir, 'journal.json'),
        listen: false,
        budget: { backend: 'memory', slots: 1, minPrepareSeconds: 0 },
        rules: [{ name: 'all', actions: [record('prepare')], approval: 'after-actions', onComplete: [record('complete')] }],
      }),
    );
    // IMDS for @azure/identity is the emulator's, as the ops VM sees it.
    controller = new CliProcess(['controller', '--config', config], { AZURE_POD_IDENTITY_AUTHORITY_HOST: emu.vmUrl('ops') });
    await waitFor('the controller to listen', async () => {
      try {
        await fetch(`http://127.0.0.1:${hook}/eventgrid`, { method: 'OPTIONS' });
        return true;
      } catch {
        return undefined;
      }
    });
    const subscribed = await fetch(`${emu.controlUrl}/v1/eventgrid/subscriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: `http://127.0.0.1:${hook}/eventgrid` }),
    });
    assert.equal(subscribed.status, 201, await subscribed.clone().text());

    const created = await fetch(`${emu.controlUrl}/v1/operations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'host-update', tenant: 'web' }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const { operation } = (await created.json()) as { operation: string };

    const done = await waitFor(
      'every event completed and recovered',
      async () => {
        const op = (await (await fetch(`${emu.controlUrl}/v1/operations/${operation}`)).json()) as { operation: { status: string } };
        const recorded = steps(log);
        return op.operation.status !== 'running' && recorded.filter((s) => s.what === 'complete').length >= 3 ? op : undefined;
      },
      90_000,
    );
    assert.equal(done.operation.status, 'completed');

    const { events } = (await (await fetch(`${emu.controlUrl}/v1/history?limit=10`)).json()) as {
      events: {
        id: string;
        resources: string[];
        startedBy: string;
        outcome: string;
        createdAt: string;
        notBefore: string;
        startedAt: string;
      }[];
    };
    assert.equal(events.length, 3, 'one event per fault domain');
    // Each was started by an approval, which only the controller's ARM acknowledge could give: it has no IMDS.
    for (const e of events) {
      assert.equal(e.startedBy, 'approval', `${e.id} started by ${e.startedBy}`);
      assert.equal(e.outcome, 'completed');
    }
    const recorded = steps(log);
    const ids = events.map((e) => e.id).sort();
    const prepared = recorded.filter((s) => s.what === 'prepare');
    const completed = recorded.filter((s) => s.what === 'complete');
    assert.deepEqual(prepared.map((s) => s.event).sort(), ids, 'each event prepared once');
    assert.deepEqual(completed.map((s) => s.event).sort(), ids, 'Completed seen, and recovered, once for each');
    assert.deepEqual(prepared.map((s) => s.resources).sort(), ['web_0', 'web_1', 'web_2']);
    // A budget of one: no event is prepared before the one before it has completed.
    const byEvent = new Map(completed.map((s) => [s.event, s.at]));
    const order = [...prepared].sort((a, b) => a.at - b.at);
    for (let i = 1; i < order.length; i++) {
      assert.ok(order[i]!.at >= byEvent.get(order[i - 1]!.event)!, `${order[i]!.event} prepared before ${order[i - 1]!.event} completed`);
    }
    const subscription = (await (await fetch(`${emu.controlUrl}/v1/eventgrid/subscriptions`)).json()) as {
      subscriptions: { counts: { delivered: number; deadLettered: number } }[];
    };
    assert.equal(subscription.subscriptions[0]!.counts.deadLettered, 0);
    // Scheduled, Started and Completed for each.
    assert.equal(subscription.subscriptions[0]!.counts.delivered, 9);
  });
});
