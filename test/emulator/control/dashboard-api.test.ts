// What the dashboard reads from the control API: VM states, deleted VMs, history, the scenario list,
// and the page itself, served beside the API without its token.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { parse as parseYaml } from 'yaml';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { FleetResponse, History, ScenarioList } from '../../../src/emulator/control/schemas.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { caller, type Call } from '../../support/control.js';
import { openSse } from '../../support/sse.js';

const T0 = Date.parse('2024-01-01T00:00:00.000Z');
const SEC = 1000;
const MIN = 60 * SEC;
const iso = (ms: number) => new Date(ms).toISOString();
const SCENARIOS_DIR = new URL('../../../scenarios/', import.meta.url);

const FLEET: VmSpec[] = [
  { name: 'vm0' },
  { name: 'web0', tenant: 'web', tenantKind: 'availabilitySet', host: 'h1', faultDomain: 0 },
  { name: 'web1', tenant: 'web', tenantKind: 'availabilitySet', host: 'h2', faultDomain: 1 },
  { name: 'ss0', tenant: 'ss', tenantKind: 'scaleSet', host: 'h1', terminateNotificationMinutes: 10 },
  { name: 'ss1', tenant: 'ss', tenantKind: 'scaleSet', host: 'h2', faultDomain: 1 },
  { name: 'spot0', priority: 'Spot' },
];

interface Harness {
  app: FastifyInstance;
  engine: Engine;
  clock: ManualClock;
  base: string;
  call: Call;
}

/** Closed when the file is done: a suite's before() starts one for all its tests. */
const servers: FastifyInstance[] = [];
after(async () => {
  await Promise.all(servers.map((app) => app.close()));
});

async function start(options: { token?: string; dashboardDir?: string } = {}): Promise<Harness> {
  const clock = new ManualClock(T0);
  const engine = new Engine({ clock, fleet: FLEET });
  const app = buildControlServer(
    { engine, clock, faults: new FaultRegistry(), rateLimiter: new RateLimiter(), token: options.token },
    { dashboardDir: options.dashboardDir ?? emptyDir() },
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  servers.push(app);
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { app, engine, clock, base, call: caller(base) };
}

const tempRoot = mkdtempSync(join(tmpdir(), 'forewarn-dashboard-'));
after(() => rmSync(tempRoot, { recursive: true, force: true }));
let dirs = 0;
/** A dashboard directory with nothing built in it. */
function emptyDir(): string {
  const dir = join(tempRoot, `empty-${++dirs}`);
  mkdirSync(dir);
  return dir;
}

const INDEX_HTML =
  '<!doctype html>\n<html><head><title>Forewarn</title><script type="module" src="/app.js"></script></head><body></body></html>\n';
const APP_JS = 'document.title = "Forewarn dashboard";\n';
const STYLE_CSS = 'body { margin: 0 }\n';

/** A dashboard directory as the build leaves it. */
function builtDir(): string {
  const dir = join(tempRoot, `built-${++dirs}`);
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), INDEX_HTML);
  writeFileSync(join(dir, 'app.js'), APP_JS);
  writeFileSync(join(dir, 'assets', 'style.css'), STYLE_CSS);
  return dir;
}

async function advance(h: Harness, seconds: number): Promise<void> {
  const res = await h.call('POST', '/v1/clock/advance', { seconds });
  assert.equal(res.status, 200, res.text);
}

async function operation(
  h: Harness,
  body: Record<string, unknown>,
): Promise<{ operation: string; events: string[]; removedVms: string[] }> {
  const res = await h.call('POST', '/v1/operations', body);
  assert.equal(res.status, 201, res.text);
  return res.json;
}

async function fleet(h: Harness): Promise<FleetResponse> {
  const res = await h.call('GET', '/v1/fleet');
  assert.equal(res.status, 200, res.text);
  // The answer is what the OpenAPI document promises.
  FleetResponse.parse(res.json);
  return res.json;
}

const stateOf = (f: FleetResponse) => Object.fromEntries(f.vms.map((vm) => [vm.name, vm.state]));

describe('GET /v1/fleet: VM states', () => {
  test('every VM is running, and nothing is deleted, at first', async () => {
    const h = await start();
    const f = await fleet(h);
    assert.deepEqual(stateOf(f), { vm0: 'running', web0: 'running', web1: 'running', ss0: 'running', ss1: 'running', spot0: 'running' });
    assert.deepEqual(f.deleted, []);
  });

  test("each VM's state follows its Started event's impact, then runs again (or is deallocated or deleted)", async () => {
    const h = await start();
    // Each event may start one second from now.
    const soon = { notBefore: iso(T0 + SEC), force: true };
    const ops = [
      await operation(h, { type: 'freeze', vms: ['web0'], durationInSeconds: 60, ...soon }),
      await operation(h, { type: 'restart', vms: ['web1'], ...soon }),
      await operation(h, { type: 'redeploy', vms: ['vm0'], ...soon }),
      await operation(h, { type: 'spot-eviction', vms: ['spot0'], ...soon }),
      await operation(h, { type: 'delete', vms: ['ss0'], ...soon }),
    ];
    assert.deepEqual(Object.values(stateOf(await fleet(h))), Array(6).fill('running'), 'Scheduled changes nothing');
    const statuses = async () =>
      Promise.all(ops.map(async (op) => (await h.call('GET', `/v1/events/${op.events[0]}`)).json.event?.status ?? null));

    await advance(h, 1);
    assert.deepEqual(stateOf(await fleet(h)), {
      vm0: 'redeploying',
      web0: 'frozen',
      web1: 'rebooting',
      ss0: 'deleting',
      ss1: 'running',
      spot0: 'evicting',
    });
    // The single-VM route says the same.
    const one = await h.call('GET', '/v1/vms/web0');
    assert.equal(one.json.state, 'frozen');

    // The state lasts the impact (the Freeze's 60 s DurationInSeconds; Terminate and Preempt 60 s,
    // Reboot 180 s, Redeploy 300 s by default), while every event stays Started for about 10 minutes.
    await advance(h, 60);
    let f = await fleet(h);
    assert.deepEqual(stateOf(f), { vm0: 'redeploying', web0: 'running', web1: 'rebooting', ss1: 'running', spot0: 'deallocated' });
    assert.deepEqual(
      f.deleted.map((d) => [d.name, d.deletedAt]),
      [['ss0', iso(T0 + 61 * SEC)]],
      'a Terminate removes its VM when its impact is over',
    );
    assert.deepEqual(await statuses(), Array(5).fill('Started'));
    await advance(h, 120);
    assert.deepEqual(stateOf(await fleet(h)), {
      vm0: 'redeploying',
      web0: 'running',
      web1: 'running',
      ss1: 'running',
      spot0: 'deallocated',
    });
    await advance(h, 120);
    assert.deepEqual(stateOf(await fleet(h)), { vm0: 'running', web0: 'running', web1: 'running', ss1: 'running', spot0: 'deallocated' });
    assert.deepEqual(await statuses(), Array(5).fill('Started'));
    // "EventStatus: « Started » à complété (événement supprimé du tableau d'événements) : 10 minutes".
    await advance(h, 10 * 60 - 301);
    assert.deepEqual(await statuses(), Array(5).fill('Started'), 'still listed just before 10 minutes');
    await advance(h, 1);
    assert.deepEqual(await statuses(), Array(5).fill(null), 'removed 10 minutes after they Started');
    f = await fleet(h);
    assert.deepEqual(stateOf(f), { vm0: 'running', web0: 'running', web1: 'running', ss1: 'running', spot0: 'deallocated' });
    assert.deepEqual(
      f.deleted.map((d) => d.name),
      ['ss0'],
    );
  });

  test('a hardware failure makes its VMs rebooting at once; POST /v1/vms answers a new VM running', async () => {
    const h = await start();
    await operation(h, { type: 'hardware-failure', host: 'h1' });
    const f = await fleet(h);
    assert.equal(stateOf(f).web0, 'rebooting');
    assert.equal(stateOf(f).ss0, 'rebooting');
    assert.equal(stateOf(f).web1, 'running');
    const added = await h.call('POST', '/v1/vms', { name: 'new0', host: 'h1' });
    assert.equal(added.status, 201, added.text);
    assert.equal(added.json.state, 'running', 'a VM added now is not part of the failure');
  });
});

describe('GET /v1/fleet: deleted VMs', () => {
  test('a delete without notification lists the VM at once, where it was, with the operation', async () => {
    const h = await start();
    const before = (await fleet(h)).vms.find((vm) => vm.name === 'ss1')!;
    await advance(h, 30);
    const op = await operation(h, { type: 'delete', vms: ['ss1'] });
    assert.deepEqual(op.removedVms, ['ss1']);
    const f = await fleet(h);
    assert.ok(!f.vms.some((vm) => vm.name === 'ss1'));
    assert.deepEqual(f.deleted, [
      {
        name: 'ss1',
        tenant: 'ss',
        host: before.host,
        faultDomain: before.faultDomain,
        updateDomain: before.updateDomain,
        state: 'deleted',
        deletedAt: iso(T0 + 30 * SEC),
        operation: op.operation,
      },
    ]);
    assert.equal(before.host, 'h2');
    assert.equal(before.faultDomain, 1);
  });

  test("a delete with notification lists the VM when its Terminate's impact is over, a minute after it Starts", async () => {
    const h = await start();
    const op = await operation(h, { type: 'delete', vms: ['ss0'] });
    assert.deepEqual((await fleet(h)).deleted, []);
    await advance(h, 10 * 60);
    const started = await h.call('GET', `/v1/events/${op.events[0]}`);
    assert.equal(started.json.event.status, 'Started');
    assert.equal(started.json.event.startedAt, iso(T0 + 10 * MIN));
    assert.equal(stateOf(await fleet(h)).ss0, 'deleting');
    assert.deepEqual((await fleet(h)).deleted, []);
    // A Terminate's impact is 60 s by default: the VM is gone then, though the event stays Started.
    await advance(h, 59);
    assert.equal(stateOf(await fleet(h)).ss0, 'deleting');
    await advance(h, 1);
    const [d] = (await fleet(h)).deleted;
    assert.deepEqual(
      { name: d!.name, state: d!.state, deletedAt: d!.deletedAt, operation: d!.operation, host: d!.host },
      { name: 'ss0', state: 'deleted', deletedAt: iso(T0 + 11 * MIN), operation: op.operation, host: 'h1' },
    );
    assert.equal((await h.call('GET', `/v1/events/${op.events[0]}`)).json.event.status, 'Started');
    await advance(h, 10 * 60);
    assert.equal((await h.call('GET', `/v1/events/${op.events[0]}`)).status, 404);
    assert.deepEqual(
      (await fleet(h)).deleted.map((d) => [d.name, d.deletedAt]),
      [['ss0', iso(T0 + 11 * MIN)]],
    );
  });

  test('completing a Terminate early lists the VM at once', async () => {
    const h = await start();
    const op = await operation(h, { type: 'delete', vms: ['ss0'] });
    await advance(h, 10 * 60 + 5);
    const done = await h.call('POST', `/v1/events/${op.events[0]}/complete`);
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(
      (await fleet(h)).deleted.map((d) => [d.name, d.deletedAt]),
      [['ss0', iso(T0 + 10 * MIN + 5 * SEC)]],
    );
  });

  test('DELETE /v1/vms/NAME takes a VM out without listing it', async () => {
    const h = await start();
    const res = await h.call('DELETE', '/v1/vms/vm0');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.state, 'running');
    const f = await fleet(h);
    assert.ok(!f.vms.some((vm) => vm.name === 'vm0'));
    assert.deepEqual(f.deleted, []);
  });

  test('adding a VM of the same name takes it off the list; reset empties it', async () => {
    const h = await start();
    await operation(h, { type: 'delete', vms: ['ss1'] });
    await operation(h, { type: 'delete', vms: ['spot0'] });
    const added = await h.call('POST', '/v1/vms', { name: 'ss1', tenant: 'ss', tenantKind: 'scaleSet' });
    assert.equal(added.status, 201, added.text);
    let f = await fleet(h);
    assert.deepEqual(
      f.deleted.map((d) => d.name),
      ['spot0'],
    );
    assert.equal(stateOf(f).ss1, 'running');
    assert.equal((await h.call('POST', '/v1/reset')).status, 200);
    f = await fleet(h);
    assert.deepEqual(f.deleted, []);
    assert.ok(
      f.vms.some((vm) => vm.name === 'spot0'),
      'the reset fleet has it back',
    );
  });
});

describe('GET /v1/history', () => {
  test('is empty at first, and live events are not in it', async () => {
    const h = await start();
    assert.deepEqual((await h.call('GET', '/v1/history')).json, { events: [], next: null });
    await operation(h, { type: 'freeze', vms: ['web0'] });
    assert.deepEqual((await h.call('GET', '/v1/history')).json, { events: [], next: null });
  });

  test('a completed event: its fields as it ended, less job, with endedAt and outcome', async () => {
    const h = await start();
    const op = await operation(h, { type: 'restart', vms: ['web0'], description: 'patching' });
    const id = op.events[0]!;
    await advance(h, 15 * 60);
    const live = (await h.call('GET', `/v1/events/${id}`)).json.event;
    assert.equal(live.status, 'Started');
    await advance(h, 60);
    const done = await h.call('POST', `/v1/events/${id}/complete`);
    assert.equal(done.status, 200, done.text);
    const res = await h.call('GET', '/v1/history');
    assert.equal(res.status, 200);
    History.parse(res.json);
    const { job, ...fields } = live;
    assert.equal(job.id, id, 'a job of its own');
    assert.deepEqual(res.json.events, [{ ...fields, endedAt: iso(T0 + 16 * MIN), outcome: 'completed' }]);
    assert.equal(res.json.events[0].description, 'patching');
    assert.equal(res.json.events[0].operation, op.operation);
    assert.equal('job' in res.json.events[0], false);
  });

  test('a cancelled event stays Scheduled, with outcome cancelled; the cancel answer agrees', async () => {
    const h = await start();
    const op = await operation(h, { type: 'freeze', host: 'h1' });
    // One event per tenant on the host: web0's and ss0's at least.
    assert.ok(op.events.length >= 2, JSON.stringify(op));
    await advance(h, 90);
    const cancelled = await h.call('POST', `/v1/events/${op.events[0]}/cancel`);
    assert.equal(cancelled.status, 200, cancelled.text);
    const { events } = (await h.call('GET', '/v1/history')).json;
    // Cancelling one tenant's share cancels the job: every tenant's event ended (the latest to end first).
    assert.deepEqual(
      events.map((e: { id: string }) => e.id),
      [...op.events].reverse(),
    );
    for (const e of events) {
      assert.equal(e.outcome, 'cancelled');
      assert.equal(e.status, 'Scheduled');
      assert.equal(e.startedAt, null);
      assert.equal(e.endedAt, iso(T0 + 90 * SEC));
    }
    const { job, ...fields } = cancelled.json.event;
    assert.equal(job.tenants.length, op.events.length);
    assert.deepEqual(events[events.length - 1], { ...fields, endedAt: iso(T0 + 90 * SEC), outcome: 'cancelled' });
  });

  test('an event that runs its course ends at its endsAt; the latest to end comes first', async () => {
    const h = await start();
    const freeze = (await operation(h, { type: 'freeze', vms: ['web0'] })).events[0]!; // 15 min notice
    const redeploy = (await operation(h, { type: 'redeploy', vms: ['vm0'] })).events[0]!; // 10 min notice
    const cancelled = (await operation(h, { type: 'restart', vms: ['web1'] })).events[0]!;
    await advance(h, 60);
    await h.call('POST', `/v1/events/${cancelled}/cancel`);
    await advance(h, 60 * 60);
    const { events } = (await h.call('GET', '/v1/history')).json;
    // Each stays Started 10 minutes whatever its impact (the Freeze's is 5 s), so the Freeze ends last.
    assert.deepEqual(
      events.map((e: { id: string; outcome: string }) => [e.id, e.outcome]),
      [
        [freeze, 'completed'],
        [redeploy, 'completed'],
        [cancelled, 'cancelled'],
      ],
    );
    for (const e of events.slice(0, 2)) assert.equal(e.endedAt, e.endsAt);
    assert.equal(events[0].endedAt, iso(T0 + 25 * MIN));
    assert.equal(events[1].endedAt, iso(T0 + 20 * MIN));
  });

  test('POST /v1/reset clears it', async () => {
    const h = await start();
    const op = await operation(h, { type: 'hardware-failure', vms: ['vm0'] });
    await h.call('POST', `/v1/events/${op.events[0]}/complete`);
    assert.equal((await h.call('GET', '/v1/history')).json.events.length, 1);
    await h.call('POST', '/v1/reset');
    assert.deepEqual((await h.call('GET', '/v1/history')).json, { events: [], next: null });
  });
});

describe('POST /v1/events/ID/approve', () => {
  test('approves on behalf of a VM: the event Starts by approval, as if the VM had POSTed to IMDS', async () => {
    const h = await start();
    const id = (await operation(h, { type: 'restart', vms: ['web0'] })).events[0]!;
    const res = await h.call('POST', `/v1/events/${id.toLowerCase()}/approve`, { vm: 'web0' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.event.id, id);
    assert.equal(res.json.event.status, 'Started');
    assert.equal(res.json.event.startedBy, 'approval');
    assert.deepEqual(res.json.event.approvals, [{ vm: 'web0', at: iso(T0) }]);
    // A second approval is accepted and changes nothing, as on IMDS.
    const again = await h.call('POST', `/v1/events/${id}/approve`, { vm: 'web0' });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json.event.approvals, [{ vm: 'web0', at: iso(T0) }]);
  });

  test('a job on a shared host waits for every tenant: one approval shows, the event stays Scheduled', async () => {
    const h = await start();
    const op = await operation(h, { type: 'freeze', host: 'h1' });
    const events = (await h.call('GET', '/v1/events')).json.events as { id: string; tenant: string }[];
    const web = events.find((e) => e.tenant === 'web')!;
    const ss = events.find((e) => e.tenant === 'ss')!;
    assert.equal(op.events.length, 2);
    const first = await h.call('POST', `/v1/events/${web.id}/approve`, { vm: 'web0' });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.event.status, 'Scheduled');
    assert.deepEqual(first.json.event.job.tenants.map((t: { tenant: string; approved: boolean }) => [t.tenant, t.approved]).sort(), [
      ['ss', false],
      ['web', true],
    ]);
    const second = await h.call('POST', `/v1/events/${ss.id}/approve`, { vm: 'ss0' });
    assert.equal(second.json.event.status, 'Started');
    assert.equal((await h.call('GET', `/v1/events/${web.id}`)).json.event.status, 'Started');
  });

  test("IMDS's rules hold: an unknown VM is a 404, a VM that cannot see the event a 400, nothing changes", async () => {
    const h = await start();
    const id = (await operation(h, { type: 'restart', vms: ['ss0'] })).events[0]!;
    const unknown = await h.call('POST', `/v1/events/${id}/approve`, { vm: 'nope' });
    assert.equal(unknown.status, 404);
    assert.match(unknown.json.error, /nope/);
    // Another tenant's VM does not see the event.
    const other = await h.call('POST', `/v1/events/${id}/approve`, { vm: 'web0' });
    assert.equal(other.status, 400, other.text);
    assert.match(other.json.error, /not an event that VM 'web0' can see/);
    const never = await h.call('POST', '/v1/events/00000000-0000-0000-0000-000000000000/approve', { vm: 'ss0' });
    assert.equal(never.status, 400);
    assert.match(never.json.error, /never issued/);
    assert.deepEqual((await h.call('GET', `/v1/events/${id}`)).json.event.approvals, []);
  });

  test('another VM of the tenant may approve for the one named, as a standby would', async () => {
    const h = await start();
    const id = (await operation(h, { type: 'restart', vms: ['ss0'] })).events[0]!;
    const res = await h.call('POST', `/v1/events/${id}/approve`, { vm: 'ss1' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.event.status, 'Started');
    assert.deepEqual(res.json.event.approvals, [{ vm: 'ss1', at: iso(T0) }]);
  });

  test('an ended event is a 409; a bad body is a 400 naming the field', async () => {
    const h = await start();
    const id = (await operation(h, { type: 'restart', vms: ['web0'] })).events[0]!;
    assert.equal((await h.call('POST', `/v1/events/${id}/cancel`)).status, 200);
    const ended = await h.call('POST', `/v1/events/${id}/approve`, { vm: 'web0' });
    assert.equal(ended.status, 409);
    assert.match(ended.json.error, /already ended/);
    const missing = await h.call('POST', `/v1/events/${id}/approve`, {});
    assert.equal(missing.status, 400);
    assert.match(missing.json.error, /^vm: required/);
    const extra = await h.call('POST', `/v1/events/${id}/approve`, { vm: 'web0', also: 1 });
    assert.equal(extra.status, 400);
    assert.match(extra.json.error, /unknown field "also"/);
  });
});

describe('GET /v1/scenarios', () => {
  const files = readdirSync(SCENARIOS_DIR).filter((f) => f.endsWith('.yaml'));

  test('lists every built-in by name and description, as the scenario files give them', async () => {
    const h = await start();
    const res = await h.call('GET', '/v1/scenarios');
    assert.equal(res.status, 200);
    ScenarioList.parse(res.json);
    const listed = res.json.scenarios as { name: string; description: string }[];
    assert.ok(files.length > 5);
    assert.deepEqual(listed.map((s) => s.name).sort(), files.map((f) => basename(f, '.yaml')).sort());
    assert.ok(listed.some((s) => s.name === 'rolling-host-update'));
    for (const s of listed) {
      assert.deepEqual(Object.keys(s).sort(), ['description', 'name']);
      const doc = parseYaml(readFileSync(new URL(`${s.name}.yaml`, SCENARIOS_DIR), 'utf8')) as { description?: string };
      assert.equal(s.description, doc.description ?? '', s.name);
    }
  });

  test('every listed scenario can be run by name', async () => {
    const h = await start();
    const { scenarios } = (await h.call('GET', '/v1/scenarios')).json as { scenarios: { name: string }[] };
    const run = await h.call('POST', '/v1/scenarios', { name: scenarios[0]!.name });
    assert.equal(run.status, 200, run.text);
    assert.equal(run.json.report.name, scenarios[0]!.name);
    // The list is not a run, and a run does not change the list.
    assert.deepEqual((await h.call('GET', '/v1/scenarios')).json.scenarios, scenarios);
    assert.equal((await h.call('GET', `/v1/scenarios/${run.json.run}`)).json.run, run.json.run);
  });
});

describe('the OpenAPI document', () => {
  test('describes the new routes and nothing of the page', async () => {
    const h = await start({ dashboardDir: builtDir() });
    const doc = (await h.call('GET', '/v1/openapi.json')).json as {
      paths: Record<string, Record<string, { parameters?: { name: string }[] }>>;
    };
    // The API's own routes, and ARM's acknowledge routes (SPEC §4, Event Grid and ARM): no page.
    for (const path of Object.keys(doc.paths)) assert.match(path, /^\/(v1|subscriptions)\//);
    assert.ok(doc.paths['/v1/history']?.get);
    assert.ok(doc.paths['/v1/scenarios']?.get);
    assert.deepEqual(
      doc.paths['/v1/stream']!.get!.parameters?.map((p) => p.name),
      ['include'],
    );
  });
});

describe('the dashboard page', () => {
  test('not built: GET / says to run npm run build; the API still works', async () => {
    const dir = emptyDir();
    const h = await start({ dashboardDir: dir });
    const res = await h.call('GET', '/');
    assert.equal(res.status, 503);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    assert.match(res.text, /npm run build/);
    assert.ok(res.text.includes(join(dir, 'index.html')), 'names the missing file');
    const asset = await h.call('GET', '/app.js');
    assert.equal(asset.status, 404);
    assert.deepEqual(asset.json, { error: 'no route GET /app.js' });
    assert.equal((await h.call('GET', '/v1/clock')).status, 200);
  });

  describe('built', () => {
    let h: Harness;
    before(async () => (h = await start({ dashboardDir: builtDir() })));

    test('GET / serves index.html with a content security policy', async () => {
      for (const path of ['/', '/index.html']) {
        const res = await h.call('GET', path);
        assert.equal(res.status, 200, path);
        assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
        assert.equal(res.text, INDEX_HTML);
        const csp = res.headers.get('content-security-policy') ?? '';
        for (const directive of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) {
          assert.ok(csp.split('; ').includes(directive), `${directive} in ${csp}`);
        }
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
        assert.equal(res.headers.get('cache-control'), 'no-cache');
      }
    });

    test('serves the files by name, with their types', async () => {
      const js = await h.call('GET', '/app.js');
      assert.equal(js.status, 200);
      assert.match(js.headers.get('content-type') ?? '', /javascript/);
      assert.equal(js.text, APP_JS);
      const css = await h.call('GET', '/assets/style.css');
      assert.equal(css.status, 200);
      assert.match(css.headers.get('content-type') ?? '', /^text\/css/);
      assert.equal(css.text, STYLE_CSS);
    });

    test("unknown paths get the API's JSON 404", async () => {
      for (const path of ['/nope', '/v2/x', '/assets/missing.css', '/v1/nope', '/assets']) {
        const res = await h.call('GET', path);
        assert.equal(res.status, 404, path);
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/, path);
        assert.deepEqual(res.json, { error: `no route GET ${path}` });
      }
    });

    test('the API is still there, 405s included', async () => {
      assert.equal((await h.call('GET', '/v1/fleet')).status, 200);
      const wrong = await h.call('POST', '/v1/fleet');
      assert.equal(wrong.status, 405);
      assert.equal(wrong.headers.get('allow'), 'GET, HEAD');
    });
  });
});

describe('the dashboard page with a bearer token', () => {
  const TOKEN = 'dash-token';
  const auth = { authorization: `Bearer ${TOKEN}` };
  let h: Harness;
  before(async () => (h = await start({ token: TOKEN, dashboardDir: builtDir() })));

  test('the page and its files load without the token', async () => {
    for (const [path, body] of [
      ['/', INDEX_HTML],
      ['/index.html', INDEX_HTML],
      ['/app.js', APP_JS],
      ['/assets/style.css', STYLE_CSS],
    ] as const) {
      const res = await h.call('GET', path);
      assert.equal(res.status, 200, path);
      assert.equal(res.text, body);
    }
  });

  test('an unknown page path is a 404 without the token, not a 401', async () => {
    const res = await h.call('GET', '/nope');
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { error: 'no route GET /nope' });
  });

  const apiPaths = [
    '/v1/fleet',
    '/v1/history',
    '/v1/scenarios',
    '/v1/events',
    '/v1/operations',
    '/v1/clock',
    '/v1/faults',
    '/v1/vms/vm0',
    '/v1/vms/vm0/document',
    '/v1/openapi.json',
    '/v1/fleet?x=/',
  ];
  test('every /v1 route still needs it', async () => {
    for (const path of [...apiPaths, '/v1', '/v1?x=1', '/v1/nope', '/v1/stream', '/v1/stream?include=changes']) {
      const res = await h.call('GET', path);
      assert.equal(res.status, 401, path);
      assert.deepEqual(res.json, { error: 'missing or wrong bearer token' });
    }
    for (const path of apiPaths) {
      const res = await h.call('GET', path, undefined, auth);
      assert.equal(res.status, 200, path);
    }
    for (const path of ['/v1/stream', '/v1/stream?include=changes']) {
      const { sse, abort } = await openSse(h.base + path, auth);
      assert.equal((await sse.nextEvent()).event, 'hello');
      abort();
    }
  });

  test('a %-escaped /v1 path, which the router decodes, still needs it', async () => {
    for (const path of ['/%761/fleet', '/%76%31/history', '/v%31/openapi.json', '/%76%31/clock', '/%761/stream']) {
      const res = await h.call('GET', path);
      assert.equal(res.status, 401, path);
      assert.deepEqual(res.json, { error: 'missing or wrong bearer token' });
    }
    // It is the same route: with the token it answers.
    const res = await h.call('GET', '/%761/fleet', undefined, auth);
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.json.vms));
    // Escapes on the page's side change nothing for the page.
    assert.equal((await h.call('GET', '/%61pp.js')).text, APP_JS);
  });

  test('not built: the page says what is missing without the token', async () => {
    const h2 = await start({ token: TOKEN });
    const res = await h2.call('GET', '/');
    assert.equal(res.status, 503);
    assert.match(res.text, /npm run build/);
    assert.equal((await h2.call('GET', '/v1/fleet')).status, 401);
  });
});
