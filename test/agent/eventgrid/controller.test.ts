// The controller end to end: a fake Event Grid (this test POSTs deliveries) and a fake ARM; the
// agent's rules run once per event, approve once through ARM, recover on Completed; a budget of one
// holds the second event until the first is over. And its config: the agent's schemas, its own limits.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { TokenCredential } from '@azure/identity';
import { Controller } from '../../../src/agent/eventgrid/controller.js';
import { ControllerConfigError, loadControllerConfig, parseControllerConfig } from '../../../src/agent/eventgrid/controller-config.js';
import { createLogger } from '../../../src/agent/logger.js';
import { run } from '../../../src/cli/program.js';
import { until } from '../support.js';
import { emitted, fakeArm, gridEvent, send } from './support.js';

const credential: TokenCredential = { getToken: async () => ({ token: 'arm-token', expiresOnTimestamp: Date.now() + 3600_000 }) };

function configText(journal: string, extra = ''): string {
  return `
name: fleet-controller
eventGrid: { listen: "127.0.0.1:0", path: /eventgrid, schema: EventGridSchema }
arm: { endpoint: "http://127.0.0.1:9", credential: { kind: managedIdentity } }
journal: ${journal}
listen: false
shutdownGraceSeconds: 1
rules:
  - name: reboots
    match: { eventType: Reboot }
    actions: [{ type: exec, name: drain, argv: [/usr/local/bin/drain] }]
    onComplete: [{ type: log, name: undrain, message: undrain }]
${extra}`;
}

describe('the controller', () => {
  let dir = '';
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'forewarn-controller-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function start(extra = '') {
    const arm = await fakeArm();
    const config = parseControllerConfig(configText(join(dir, 'journal.json'), extra), 'controller.yaml');
    config.arm.endpoint = arm.url;
    const ran: string[] = [];
    const controller = new Controller({
      config,
      logger: createLogger({ level: 'silent' }),
      credential,
      runAction: async (action, ctx) => {
        ran.push(`${ctx.phase}:${action.name}:${ctx.event.id}:${ctx.vmName}`);
        return { ok: true, attempts: 1, error: null, durationMs: 0 };
      },
    });
    const stop = new AbortController();
    const done = controller.run(stop.signal);
    const url = await until('the webhook listens', () => controller.webhookUrl ?? false);
    return {
      arm,
      ran,
      url,
      stop: async () => {
        stop.abort();
        await done;
        await arm.close();
      },
    };
  }

  test('prepares each event once, approves it once through ARM, recovers on Completed', async () => {
    // SPEC §4: "`forewarn controller --config FILE` runs the agent's rules for a fleet from Event Grid deliveries,
    // approving through that route". [azure] Event Grid is at-least-once: the same notification twice changes nothing.
    const c = await start();
    const scheduled = gridEvent(emitted('EV-1', 'Scheduled', { Resources: ['web-0', 'web-1'] }));
    assert.equal((await send(c.url, [scheduled])).status, 200);
    assert.equal((await send(c.url, [scheduled])).status, 200);
    await until('approved through ARM', () => c.arm.calls.length === 1);
    assert.match(c.arm.calls[0]!.path, /\/scheduledevents\/EV-1\/acknowledge$/);
    assert.equal(c.arm.calls[0]!.authorization, 'Bearer arm-token');
    await send(c.url, [gridEvent(emitted('EV-1', 'Started', { Resources: ['web-0', 'web-1'] }))]);
    await send(c.url, [gridEvent(emitted('EV-1', 'Completed', { Resources: ['web-0', 'web-1'] }))]);
    await until('recovered', () => c.ran.includes('complete:undrain:EV-1:fleet-controller'));
    assert.deepEqual(c.ran, ['prepare:drain:EV-1:fleet-controller', 'complete:undrain:EV-1:fleet-controller']);
    assert.equal(c.arm.calls.length, 1, 'approved once');
    await c.stop();
  });

  test('a memory budget of one holds the second event until the first has completed', async () => {
    // Brief (issue 26): "at most N events prepared/approved at once" from one place; SPEC §4: a slot "held through the
    // impact, given back once recovery is done".
    const c = await start('budget: { backend: memory, slots: 1 }');
    await send(c.url, [gridEvent(emitted('EV-A', 'Scheduled'))]);
    await until('A approved', () => c.arm.calls.length === 1);
    await send(c.url, [gridEvent(emitted('EV-B', 'Scheduled', { Resources: ['web-1'] }))]);
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(c.ran, ['prepare:drain:EV-A:fleet-controller'], 'B waits for the one slot');
    await send(c.url, [gridEvent(emitted('EV-A', 'Started'))]);
    await send(c.url, [gridEvent(emitted('EV-A', 'Completed'))]);
    await until('B prepared once A is over', () => c.ran.includes('prepare:drain:EV-B:fleet-controller'), 10_000);
    assert.deepEqual(c.ran, [
      'prepare:drain:EV-A:fleet-controller',
      'complete:undrain:EV-A:fleet-controller',
      'prepare:drain:EV-B:fleet-controller',
    ]);
    await until('B approved', () => c.arm.calls.length === 2);
    assert.match(c.arm.calls[1]!.path, /\/scheduledevents\/EV-B\/acknowledge$/);
    await c.stop();
  });
});

describe('the controller config', () => {
  test('examples/controller.yaml loads', () => {
    const config = loadControllerConfig(fileURLToPath(new URL('../../../examples/controller.yaml', import.meta.url)));
    assert.equal(config.agent.budget?.backend, 'memory');
    assert.equal(config.arm.credential.kind, 'managedIdentity');
    assert.deepEqual(config.agent.leader, { mode: 'any', standby: null });
  });

  test('reuses the agent rules and says where a controller cannot follow them', () => {
    // SPEC §4 (Kubernetes): a kubernetes action "cordons this node": the controller has none of its own.
    const text = configText('/tmp/j.json').replace(
      'actions: [{ type: exec, name: drain, argv: [/usr/local/bin/drain] }]',
      'actions: [{ type: kubernetes }]\n    approval: sometimes',
    );
    const err = (() => {
      try {
        parseControllerConfig(`${text}\nbudget: { backend: floppy, slots: 1 }\n`, 'c.yaml');
        return null;
      } catch (e) {
        return e;
      }
    })();
    assert.ok(err instanceof ControllerConfigError, String(err));
    const all = err.problems.join('\n');
    assert.match(all, /c\.yaml:\d+:\d+: rules\[0\]\.actions\[0\]\.type: the controller cannot run kubernetes actions/);
    assert.match(all, /c\.yaml:\d+:\d+: rules\[0\]\.approval: expected never, immediately or after-actions/);
    assert.match(all, /c\.yaml:\d+:\d+: budget(\.backend)?: expected backend memory, etcd or azure-blob/);
  });

  test('forewarn controller with a bad config exits 2 naming the problems, no stack', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forewarn-controller-cli-'));
    const file = join(dir, 'controller.yaml');
    writeFileSync(file, 'eventGrid: { schema: Binary }\nrules: []\n');
    let stderr = '';
    const code = await run(['controller', '--config', file], { stdout: () => {}, stderr: (s) => void (stderr += s), env: {} });
    rmSync(dir, { recursive: true, force: true });
    assert.equal(code, 2);
    assert.match(stderr, /the controller config has 2 problems/);
    assert.match(stderr, /eventGrid\.schema: expected EventGridSchema or CloudEventSchemaV1_0/);
    assert.doesNotMatch(stderr, /\n\s+at /);
  });
});
