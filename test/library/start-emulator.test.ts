// startEmulator as a test suite uses it: fleets, a manual clock seen through the SDK, `await using`, isolation, bad options.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ScheduledEventsClient } from '../../src/client/index.js';
import { ControlApiError, EmulatorOptionError, startEmulator, type StartEmulatorOptions } from '../../src/emulator/index.js';

const fleet = { vms: [{ name: 'web-0' }, { name: 'web-1' }] };

/** Refused once closed: nothing listens on the URL any more. */
async function refuses(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(2000) });
    return false;
  } catch (err) {
    return (err as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
  }
}

test('a Freeze triggered on a manual clock is seen through the SDK at vmUrl, then starts once the clock passes NotBefore', async () => {
  const emu = await startEmulator({ fleet, clock: 'manual', rateLimit: 0 });
  try {
    assert.match(emu.imdsUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(emu.controlUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(emu.imdsUrl, emu.controlUrl);
    assert.equal(emu.vmUrl('web-1'), `${emu.imdsUrl}/vms/web-1`);
    assert.throws(() => emu.vmUrl('db-0'), /no VM named "db-0"/);

    const created = await emu.trigger({ type: 'freeze', vms: ['web-1'] });
    assert.equal(created.events.length, 1);
    const id = created.events[0]!;

    const sdk = new ScheduledEventsClient({ endpoint: emu.vmUrl('web-1') });
    const doc = await sdk.getDocument();
    assert.deepEqual(
      doc.events.map((e) => [e.id, e.type, e.status, e.resources]),
      [[id, 'Freeze', 'Scheduled', ['web-1']]],
    );
    // The other VM is not affected, so it is not told.
    assert.deepEqual((await new ScheduledEventsClient({ endpoint: emu.vmUrl('web-0') }).getDocument()).events, []);

    const clock = await emu.advanceClock(15 * 60 + 1);
    assert.equal(clock.mode, 'manual');
    const started = await sdk.getDocument();
    assert.equal(started.events[0]?.status, 'Started');
    assert.equal((await emu.event(id)).startedBy, 'notBefore');
  } finally {
    await emu.close();
  }
});

test('the typed control operations: approve, cancel, complete, faults, fleet, documents, history, operations, reset', async () => {
  const emu = await startEmulator({ fleet, clock: 'manual', rateLimit: 0 });
  try {
    assert.deepEqual(
      (await emu.fleet()).vms.map((v) => v.name),
      ['web-0', 'web-1'],
    );
    const a = (await emu.trigger({ type: 'restart', vms: ['web-0'] })).events[0]!;
    const b = (await emu.trigger({ type: 'redeploy', vms: ['web-1'] })).events[0]!;
    assert.deepEqual((await emu.events()).map((e) => e.id).sort(), [a, b].sort());
    assert.equal((await emu.document('web-0')).Events[0]?.EventId, a);

    const approved = await emu.approve(a, 'web-0');
    assert.equal(approved.status, 'Started');
    assert.deepEqual(
      approved.approvals.map((x) => x.vm),
      ['web-0'],
    );
    assert.equal((await emu.cancel(b)).status, 'Scheduled');
    assert.equal((await emu.complete(a)).id, a);
    const history = await emu.history();
    assert.deepEqual(
      history.events.map((e) => [e.id, e.outcome]).sort(),
      [
        [a, 'completed'],
        [b, 'cancelled'],
      ].sort(),
    );
    const ops = await emu.operations({ limit: 1 });
    assert.equal(ops.operations.length, 1);
    assert.notEqual(ops.next, null);
    assert.equal((await emu.operation(ops.operations[0]!.id)).id, ops.operations[0]!.id);

    const fault = await emu.addFault({ vm: 'web-0', status: 500, count: 2 });
    assert.equal(fault.remaining, 2);
    assert.deepEqual(
      (await emu.faults()).map((f) => f.id),
      [fault.id],
    );
    assert.equal(await emu.clearFaults(), 1);
    assert.deepEqual(await emu.faults(), []);

    await emu.trigger({ type: 'freeze', vms: ['web-0'] });
    await emu.reset();
    assert.deepEqual(await emu.events(), []);
    assert.deepEqual((await emu.history()).events, []);

    // An API refusal is a ControlApiError with the status and the API's own message.
    const err = await emu.event('no-such-event').then(
      () => assert.fail('expected an error'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ControlApiError);
    assert.equal(err.status, 404);
    assert.match(err.error, /no-such-event/);
    const conflict = await startEmulator({ fleet }).then(async (sys) => {
      try {
        return await sys.advanceClock(1).catch((e: unknown) => e);
      } finally {
        await sys.close();
      }
    });
    assert.ok(conflict instanceof ControlApiError);
    assert.equal(conflict.status, 409);
    assert.match(conflict.error, /clock is system time/);
  } finally {
    await emu.close();
  }
});

test('a fleet file path works as the fleet, and its errors name file:line:col', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'forewarn-lib-'));
  try {
    const file = join(dir, 'fleet.yaml');
    writeFileSync(file, 'vms:\n  - name: db-0\n  - name: db-1\n');
    const emu = await startEmulator({ fleet: file });
    try {
      assert.deepEqual(
        (await emu.fleet()).vms.map((v) => v.name),
        ['db-0', 'db-1'],
      );
    } finally {
      await emu.close();
    }
    writeFileSync(file, 'vms:\n  - name: db-0\n    priority: Cheap\n');
    await assert.rejects(startEmulator({ fleet: file }), (err: unknown) => {
      assert.ok(err instanceof EmulatorOptionError);
      assert.equal(err.option, 'fleet');
      assert.match(err.message, new RegExp(`^options\\.fleet: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3:15: vms\\[0\\]\\.priority`));
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`await using` closes the emulator at the end of the block', async () => {
  let urls: string[];
  {
    await using emu = await startEmulator();
    urls = [emu.imdsUrl, emu.controlUrl];
    assert.deepEqual(
      (await emu.fleet()).vms.map((v) => v.name),
      ['vm0'],
    );
  }
  for (const url of urls) assert.ok(await refuses(url), `${url} still answers`);
});

test('two emulators in one process share no state', async () => {
  await using one = await startEmulator({ fleet, clock: 'manual' });
  await using two = await startEmulator({ fleet, clock: 'manual' });
  assert.notEqual(one.imdsUrl, two.imdsUrl);
  const { events } = await one.trigger({ type: 'freeze', vms: ['web-0'] });
  await one.addFault({ status: 500 });
  await one.addVm({ name: 'web-2' });
  await one.advanceClock(60);
  assert.equal((await one.events()).length, 1);
  assert.deepEqual(await two.events(), []);
  assert.deepEqual(await two.faults(), []);
  assert.deepEqual(
    (await two.fleet()).vms.map((v) => v.name),
    ['web-0', 'web-1'],
  );
  assert.deepEqual((await two.document('web-0')).Events, []);
  assert.notEqual((await one.clock()).now, (await two.clock()).now);
  // And the first keeps its own after the second is gone.
  await two.close();
  assert.deepEqual(
    (await one.events()).map((e) => e.id),
    events,
  );
});

test('bad options throw an EmulatorOptionError naming the option, and start nothing', async () => {
  const cases: [unknown, string, RegExp][] = [
    [{ clock: 'fast' }, 'clock', /system, manual or a Clock, got "fast"/],
    [{ timing: 0 }, 'timing', /realistic, dev or a positive factor, got 0/],
    [{ timing: 'slow' }, 'timing', /got "slow"/],
    [{ rateLimit: -1 }, 'rateLimit', /0 or more/],
    [{ historyLimit: 1.5 }, 'historyLimit', /whole number/],
    [{ activation: 'on' }, 'activation', /realistic or off/],
    [{ activationDelay: 5 }, 'activationDelay', /only with activation: "realistic"/],
    [{ activation: 'realistic', activationDelay: 121 }, 'activationDelay', /from 0 to 120, got 121/],
    [{ token: 'two words' }, 'token', /one non-empty word/],
    // Real impact runs and signals processes: never without a token (SPEC §4).
    [{ impact: true }, 'impact', /needs a control token/],
    [{ impact: 'yes', token: 't' }, 'impact', /true or false/],
    [{ allowHosts: ['ok.example', 'host:80'] }, 'allowHosts[1]', /has a port/],
    [{ maxStreams: 0 }, 'maxStreams', /from 1 to/],
    [{ streamBufferBytes: 10 }, 'streamBufferBytes', /from 16384 to/],
    [{ maxRequestVms: 0 }, 'maxRequestVms', /from 1 to/],
    [{ imds: { port: 70000 } }, 'imds.port', /from 0 to 65535/],
    [{ control: { host: '' } }, 'control.host', /host name or address/],
    [{ fleet: 42 }, 'fleet', /path or a fleet object/],
    [{ fleet: { vms: [{ name: 'a', priority: 'Cheap' }] } }, 'fleet', /^options\.fleet: vms\[0\]\.priority/],
    [{ fleet: [{ name: 'a' }, { name: 'a' }] }, 'fleet', /^options\.fleet: vms\[1\]\.name: duplicate VM name 'a'/],
    [{ fleet: '/no/such/fleet.yaml' }, 'fleet', /cannot read the fleet file/],
    [{ fleets: [] }, 'fleets', /is not an option/],
    [{ logger: 'loud' }, 'logger', /true, false or pino options, got "loud"/],
  ];
  for (const [options, option, message] of cases) {
    await assert.rejects(startEmulator(options as StartEmulatorOptions), (err: unknown) => {
      assert.ok(err instanceof EmulatorOptionError, `${JSON.stringify(options)}: ${String(err)}`);
      assert.equal(err.option, option, JSON.stringify(options));
      assert.match(err.message, message, JSON.stringify(options));
      assert.ok(err.message.startsWith(`options.${option}: `), err.message);
      return true;
    });
  }
});

test('options that are not an object are refused as a whole', async () => {
  await assert.rejects(startEmulator(null as unknown as StartEmulatorOptions), (err: unknown) => {
    assert.ok(err instanceof EmulatorOptionError);
    assert.equal(err.message, 'options must be an object');
    return true;
  });
});

test('a state file that cannot be read is an EmulatorOptionError on "state"', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'forewarn-lib-'));
  try {
    const state = join(dir, 'state.json');
    writeFileSync(state, '{ not json');
    await assert.rejects(startEmulator({ state }), (err: unknown) => {
      assert.ok(err instanceof EmulatorOptionError);
      assert.equal(err.option, 'state');
      assert.ok(err.message.includes(state), err.message);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a port in use is thrown as the listen error, and the emulator is cleaned up', async () => {
  await using first = await startEmulator();
  const port = Number(new URL(first.controlUrl).port);
  await assert.rejects(startEmulator({ control: { port } }), (err: unknown) => (err as NodeJS.ErrnoException).code === 'EADDRINUSE');
});
