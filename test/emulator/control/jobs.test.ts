// Shared-host jobs, rolling host updates and activation, through the control API and IMDS over real sockets.
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ActivationOptions } from '../../../src/emulator/engine/activation.js';
import { ManualClock } from '../../../src/shared/clock.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import type { ScheduledEventsDocument } from '../../../src/protocol/types.js';

const T0 = Date.parse('2024-01-01T00:00:00.000Z');
const MIN = 60;
const iso = (ms: number) => new Date(ms).toISOString();

/** Host h1 carries three customers: web, db and the standalone VM lone. */
const FLEET: VmSpec[] = [
  { name: 'web0', tenant: 'web', tenantKind: 'availabilitySet', faultDomain: 0, faultDomainCount: 3, host: 'h1' },
  { name: 'web1', tenant: 'web', tenantKind: 'availabilitySet', faultDomain: 1, faultDomainCount: 3, host: 'h2' },
  { name: 'web2', tenant: 'web', tenantKind: 'availabilitySet', faultDomain: 2, faultDomainCount: 3, host: 'h3' },
  { name: 'db0', tenant: 'db', tenantKind: 'availabilitySet', faultDomain: 0, host: 'h1' },
  { name: 'db1', tenant: 'db', tenantKind: 'availabilitySet', faultDomain: 1, host: 'h2' },
  { name: 'lone', host: 'h1' },
];

interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  text: string;
}

interface Harness {
  emulator: Emulator;
  clock: ManualClock;
  control(method: string, path: string, body?: unknown): Promise<Answer>;
  /** The document a VM gets from IMDS. */
  document(vm: string): Promise<ScheduledEventsDocument>;
  /** Approves from a VM through IMDS, as its own code would. */
  approve(vm: string, ids: string[]): Promise<Answer>;
}

let running: Emulator | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function start(activation?: ActivationOptions): Promise<Harness> {
  const clock = new ManualClock(T0);
  const emulator = await Emulator.create({ clock, fleet: FLEET, rateLimit: 0, ...(activation ? { activation } : {}) });
  running = emulator;
  const loopback = { host: '127.0.0.1', port: 0 };
  const { imdsUrl, controlUrl } = await emulator.listen({ imds: loopback, control: loopback });
  const answer = async (res: Response): Promise<Answer> => {
    const text = await res.text();
    return { status: res.status, text, json: text === '' ? undefined : JSON.parse(text) };
  };
  const eventsUrl = (vm: string) => `${imdsUrl}/vms/${vm}/metadata/scheduledevents?api-version=2020-07-01`;
  return {
    emulator,
    clock,
    control: async (method, path, body) =>
      answer(
        await fetch(controlUrl + path, {
          method,
          ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
        }),
      ),
    document: async (vm) => (await (await fetch(eventsUrl(vm), { headers: { Metadata: 'true' } })).json()) as ScheduledEventsDocument,
    approve: async (vm, ids) =>
      answer(
        await fetch(eventsUrl(vm), {
          method: 'POST',
          headers: { Metadata: 'true' },
          body: JSON.stringify({ StartRequests: ids.map((EventId) => ({ EventId })) }),
        }),
      ),
  };
}

describe('shared-host jobs', () => {
  test('GET /v1/events shows which tenants have approved; the job starts once all have', async () => {
    const h = await start();
    const created = await h.control('POST', '/v1/operations', { type: 'freeze', host: 'h1' });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json.events.length, 3);

    // web2 is not on h1, but sees its tenant's event and approves it for web.
    const [webEvent] = (await h.document('web2')).Events;
    assert.deepEqual(webEvent!.Resources, ['web0']);
    assert.equal((await h.approve('web2', [webEvent!.EventId])).status, 200);

    const { events } = (await h.control('GET', '/v1/events')).json;
    const ids = Object.fromEntries(events.map((e: { tenant: string; id: string }) => [e.tenant, e.id]));
    const expected = [
      { tenant: 'web', event: ids.web, approved: true },
      { tenant: 'db', event: ids.db, approved: false },
      { tenant: 'lone', event: ids.lone, approved: false },
    ];
    assert.equal(new Set(events.map((e: { job: { id: string } }) => e.job.id)).size, 1, 'one job');
    for (const e of events) {
      assert.equal(e.status, 'Scheduled');
      assert.deepEqual(e.job.tenants, expected);
    }
    const one = await h.control('GET', `/v1/events/${ids.db}`);
    assert.deepEqual(one.json.event.job.tenants, expected);

    assert.equal((await h.approve('db1', [ids.db])).status, 200);
    assert.equal((await h.control('GET', `/v1/events/${ids.db}`)).json.event.status, 'Scheduled');
    assert.equal((await h.approve('lone', [ids.lone])).status, 200);
    const started = (await h.control('GET', '/v1/events')).json.events;
    assert.deepEqual(
      started.map((e: { status: string }) => e.status),
      ['Started', 'Started', 'Started'],
    );
    assert.ok(started.every((e: { job: { tenants: { approved: boolean }[] } }) => e.job.tenants.every((t) => t.approved)));
  });

  test("cancelling one tenant's event cancels the whole job; the answer shows the job as it was", async () => {
    const h = await start();
    const created = (await h.control('POST', '/v1/operations', { type: 'platform-reboot', host: 'h1' })).json;
    const [web, db] = created.events;
    assert.equal((await h.approve('web1', [web])).status, 200);
    const cancelled = await h.control('POST', `/v1/events/${db}/cancel`);
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.deepEqual(
      cancelled.json.event.job.tenants.map((t: { tenant: string; approved: boolean }) => [t.tenant, t.approved]),
      [
        ['web', true],
        ['db', false],
        ['lone', false],
      ],
    );
    assert.deepEqual((await h.control('GET', '/v1/events')).json.events, []);
    assert.deepEqual((await h.document('web0')).Events, []);
    const op = (await h.control('GET', `/v1/operations/${created.operation}`)).json.operation;
    assert.equal(op.status, 'cancelled');
    assert.equal(op.host, 'h1');
    assert.equal(op.tenant, null);
    assert.equal(op.steps, null);
    assert.equal(op.progress, null);
  });
});

describe('rolling host update', () => {
  test('progress through GET /v1/operations/:id while the clock advances, one fault domain at a time', async () => {
    const h = await start();
    const advance = async (seconds: number) => {
      const res = await h.control('POST', '/v1/clock/advance', { seconds });
      assert.equal(res.status, 200, res.text);
    };
    const operation = async (id: string) => {
      const res = await h.control('GET', `/v1/operations/${id}`);
      assert.equal(res.status, 200, res.text);
      return res.json.operation;
    };
    const stepStates = (op: { steps: { faultDomain: number; status: string }[] }) => op.steps.map((s) => `${s.faultDomain}:${s.status}`);

    const created = await h.control('POST', '/v1/operations', { type: 'host-update', tenant: 'web' });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json.status, 'running');
    assert.deepEqual(
      created.json.steps.map((s: { vms: string[]; at: string | null }) => [s.vms, s.at]),
      [
        [['web0'], iso(T0)],
        [['web1'], null],
        [['web2'], null],
      ],
    );
    const id = created.json.operation;

    let op = await operation(id);
    assert.equal(op.type, 'host-update');
    assert.equal(op.tenant, 'web');
    assert.equal(op.host, null);
    assert.deepEqual(op.vms, ['web0', 'web1', 'web2']);
    assert.equal(op.status, 'running');
    assert.deepEqual(stepStates(op), ['0:scheduled', '1:pending', '2:pending']);
    assert.deepEqual(op.progress, { done: 0, total: 3 });
    assert.deepEqual(op.steps[0].events, created.json.events);
    // Every VM of the tenant sees the step's event, which names only that fault domain.
    assert.deepEqual(
      (await h.document('web2')).Events.map((e) => [e.EventType, e.Resources]),
      [['Freeze', ['web0']]],
    );

    // At most one host update per tenant at a time, whether on the tenant or on a host it uses.
    const again = await h.control('POST', '/v1/operations', { type: 'host-update', tenant: 'web' });
    assert.equal(again.status, 409);
    assert.match(again.json.error, /a host update is already in progress for tenant 'web'/);
    assert.equal((await h.control('POST', '/v1/operations', { type: 'host-update', host: 'h2' })).status, 409);
    assert.equal((await h.control('POST', '/v1/operations', { type: 'host-update', tenant: 'db' })).status, 201);

    await advance(15 * MIN);
    assert.deepEqual(stepStates(await operation(id)), ['0:started', '1:pending', '2:pending']);
    // The Freeze's impact lasts its 9 s, but the event stays Started about 10 minutes ("« Started » à
    // complété (événement supprimé du tableau d'événements) : 10 minutes"); the next fault domain is
    // Scheduled a minute after it is removed.
    await advance(9);
    assert.deepEqual(stepStates(await operation(id)), ['0:started', '1:pending', '2:pending']);
    await advance(10 * MIN - 9);
    op = await operation(id);
    assert.deepEqual(stepStates(op), ['0:done', '1:pending', '2:pending']);
    assert.deepEqual(op.progress, { done: 1, total: 3 });
    assert.equal(op.steps[1].at, iso(T0 + (25 * MIN + 60) * 1000));
    assert.deepEqual((await h.document('web1')).Events, []);

    await advance(60);
    op = await operation(id);
    assert.deepEqual(stepStates(op), ['0:done', '1:scheduled', '2:pending']);
    const [step1] = (await h.document('web1')).Events;
    assert.deepEqual(step1!.Resources, ['web1']);
    assert.deepEqual(op.steps[1].events, [step1!.EventId]);
    // Approving lets the fault domain go at once.
    assert.equal((await h.approve('web1', [step1!.EventId])).status, 200);
    assert.deepEqual(stepStates(await operation(id)), ['0:done', '1:started', '2:pending']);
    await advance(10 * MIN);
    assert.deepEqual(stepStates(await operation(id)), ['0:done', '1:done', '2:pending']);
    await advance(60);
    assert.deepEqual(stepStates(await operation(id)), ['0:done', '1:done', '2:scheduled']);
    await advance(15 * MIN + 10 * MIN);
    op = await operation(id);
    assert.deepEqual(stepStates(op), ['0:done', '1:done', '2:done']);
    assert.deepEqual(op.progress, { done: 3, total: 3 });
    assert.equal(op.status, 'completed');
    assert.equal(op.events.length, 3);

    const listed = (await h.control('GET', '/v1/operations')).json.operations.find((o: { id: string }) => o.id === id);
    assert.deepEqual(listed, op);
    // Done, so the tenant takes another.
    assert.equal((await h.control('POST', '/v1/operations', { type: 'host-update', tenant: 'web' })).status, 201);
  });

  test('a cancelled step calls off the rest', async () => {
    const h = await start();
    const created = (await h.control('POST', '/v1/operations', { type: 'host-update', tenant: 'web' })).json;
    assert.equal((await h.control('POST', `/v1/events/${created.events[0]}/cancel`)).status, 200);
    const op = (await h.control('GET', `/v1/operations/${created.operation}`)).json.operation;
    assert.equal(op.status, 'cancelled');
    assert.deepEqual(
      op.steps.map((s: { status: string }) => s.status),
      ['cancelled', 'cancelled', 'cancelled'],
    );
    assert.deepEqual(op.progress, { done: 0, total: 3 });
  });

  test('an unknown operation is a 404', async () => {
    const h = await start();
    const res = await h.control('GET', '/v1/operations/nope');
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { error: 'no operation with id nope' });
  });
});

describe('VM activation in the control API', () => {
  test('scheduledEvents and lastRequestAt follow the realistic profile', async () => {
    const h = await start({ mode: 'realistic', firstCallDelaySeconds: 30 });
    assert.equal((await h.control('GET', '/v1/clock')).json.activation, 'realistic');
    const fleet = (await h.control('GET', '/v1/fleet')).json;
    assert.ok(fleet.vms.every((vm: { scheduledEvents: string; lastRequestAt?: unknown }) => vm.scheduledEvents === 'disabled'));
    assert.ok(
      fleet.vms.every((vm: object) => !('lastRequestAt' in vm)),
      'only the single-VM route has lastRequestAt',
    );
    let vm = (await h.control('GET', '/v1/vms/web0')).json;
    assert.equal(vm.scheduledEvents, 'disabled');
    assert.equal(vm.lastRequestAt, null);

    await h.document('web0');
    vm = (await h.control('GET', '/v1/vms/web0')).json;
    assert.equal(vm.scheduledEvents, 'enabling');
    assert.equal(vm.lastRequestAt, iso(T0));
    assert.equal((await h.control('POST', '/v1/clock/advance', { seconds: 30 })).status, 200);
    assert.equal((await h.control('GET', '/v1/vms/web0')).json.scheduledEvents, 'enabled');
    assert.equal((await h.control('GET', '/v1/vms/web1')).json.scheduledEvents, 'disabled');
    // A VM added later starts disabled too; the body takes only the VM's own fields.
    const added = await h.control('POST', '/v1/vms', { name: 'new0' });
    assert.equal(added.status, 201, added.text);
    assert.equal(added.json.scheduledEvents, 'disabled');
    const refused = await h.control('POST', '/v1/vms', { name: 'new1', scheduledEvents: 'enabled' });
    assert.equal(refused.status, 400);
    assert.match(refused.json.error, /unknown field "scheduledEvents"/);
  });

  test('with activation off every VM is enabled and no request is recorded', async () => {
    const h = await start();
    await h.document('web0');
    const vm = (await h.control('GET', '/v1/vms/web0')).json;
    assert.equal(vm.scheduledEvents, 'enabled');
    assert.equal(vm.lastRequestAt, null);
    assert.equal((await h.control('GET', '/v1/clock')).json.activation, 'off');
  });
});
