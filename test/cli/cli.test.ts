import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseHostPort } from '../../src/cli/address.js';
import { parseEmulatorOptions, startEmulator } from '../../src/cli/emulator.js';
import { run } from '../../src/cli/program.js';
import { parseTriggerArgs, runTrigger } from '../../src/cli/trigger.js';
import { CliProcess, captureIo, assertNoStack, closedPort, runCli } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

const dir = tempDir('cli');

describe('forewarn emulator and trigger, as processes', () => {
  it('prints its URLs, serves the document, takes a trigger and stops on SIGTERM with 0', async () => {
    const emulator = new CliProcess(['emulator', '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0', '--clock', 'manual']);
    try {
      const [, imds, control] = await emulator.waitForOutput(/^IMDS:\s+(http:\/\/\S+)\nControl:\s+(http:\/\/\S+)$/m);
      const urls = { imds: imds!, control: control! };
      // The printed curl line, done with fetch.
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.match(
        emulator.stdout,
        /curl -s -H 'Metadata: true' 'http:\/\/127\.0\.0\.1:\d+\/metadata\/scheduledevents\?api-version=2020-07-01'/,
      );
      assert.match(emulator.stdout, /\/v1\/operations/);
      const docUrl = `${urls.imds}/metadata/scheduledevents?api-version=2020-07-01`;
      const first = await fetch(docUrl, { headers: { Metadata: 'true' } });
      assert.equal(first.status, 200);
      assert.deepEqual(await first.json(), { DocumentIncarnation: 1, Events: [] });

      const trigger = await runCli(['trigger', 'freeze', '--vm', 'vm0', '--control', urls.control]);
      assert.equal(trigger.code, 0, trigger.stderr);
      const eventId = /^event ([0-9A-F-]{36})$/m.exec(trigger.stdout)?.[1];
      assert.ok(eventId, trigger.stdout);
      assert.match(trigger.stdout, /^operation \S+$/m);

      const second = (await (await fetch(docUrl, { headers: { Metadata: 'true' } })).json()) as {
        DocumentIncarnation: number;
        Events: { EventId: string; EventType: string; EventStatus: string }[];
      };
      assert.equal(second.DocumentIncarnation, 2);
      assert.deepEqual(
        second.Events.map((e) => [e.EventId, e.EventType, e.EventStatus]),
        [[eventId, 'Freeze', 'Scheduled']],
      );

      // An error from the API is printed and exits 1.
      const bad = await runCli(['trigger', 'spot-eviction', '--vm', 'vm0', '--control', urls.control]);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /spot-eviction applies only to Spot VMs/);
      assertNoStack(bad.stderr);
    } finally {
      emulator.child.kill('SIGTERM');
    }
    assert.equal(await emulator.exited, 0, emulator.stderr);
  });

  it('exits 2 with one clear line for bad flags', async () => {
    const cases: [string[], RegExp][] = [
      [['emulator', '--imds', '127.0.0.1:http'], /--imds: port must be a number/],
      [['emulator', '--clock', 'fast'], /--clock must be system or manual, got "fast"/],
      [['emulator', '--timing', 'slow'], /--timing must be realistic, dev or a positive factor/],
      [['emulator', '--rate-limit', '-1'], /--rate-limit must be .* 0 or more/],
      [['emulator', '--activation', 'sometimes'], /--activation must be realistic or off, got "sometimes"/],
      [
        ['emulator', '--activation', 'realistic', '--activation-delay', '121'],
        /--activation-delay must be a number of seconds from 0 to 120, got "121"/,
      ],
      [['emulator', '--activation-delay', '30'], /--activation-delay applies only with --activation realistic/],
      [['emulator', '--bogus'], /unknown option '--bogus'/],
      [['trigger', 'freeze'], /exactly one of --vm/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(args)));
    results.forEach((result, i) => {
      const [args, expected] = cases[i]!;
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, expected);
      assertNoStack(result.stderr);
      assert.equal(result.stdout, '');
    });
  });

  it('exits 2 naming file:line for a fleet file with an error', async () => {
    const fleet = join(dir, 'bad.yaml');
    writeFileSync(fleet, 'vms:\n  - name: a\n  - name: b\n    faultDomain: one\n');
    const result = await runCli(['emulator', '--fleet', fleet, '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0']);
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      new RegExp(`${fleet.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4:18: vms\\[1\\]\\.faultDomain: expected number, received string`),
    );
    assertNoStack(result.stderr);
  });

  it('trigger names the URL when nothing listens there, and exits 1', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const result = await runCli(['trigger', 'freeze', '--vm', 'vm0'], { FOREWARN_CONTROL: url });
    assert.equal(result.code, 1);
    assert.match(result.stderr, new RegExp(`cannot reach the control API at ${url.replace(/\./g, '\\.')}: connection refused`));
    assertNoStack(result.stderr);
  });
});

describe('CLI functions', () => {
  it('parses HOST:PORT', () => {
    assert.deepEqual(parseHostPort('127.0.0.1:8169', '--imds'), { host: '127.0.0.1', port: 8169 });
    assert.deepEqual(parseHostPort('0.0.0.0:0', '--imds'), { host: '0.0.0.0', port: 0 });
    assert.deepEqual(parseHostPort('[::1]:80', '--imds'), { host: '::1', port: 80 });
    assert.deepEqual(parseHostPort('localhost:1', '--imds'), { host: 'localhost', port: 1 });
    assert.deepEqual(parseHostPort('9000', '--imds'), { host: '127.0.0.1', port: 9000 });
    assert.deepEqual(parseHostPort(':9000', '--imds'), { host: '127.0.0.1', port: 9000 });
    for (const bad of ['', 'host', 'host:', 'host:-1', 'host:65536', 'host:1.5', '::1:80', '[nope]:80']) {
      assert.throws(() => parseHostPort(bad, '--imds'), { name: 'UsageError' }, bad);
    }
  });

  it('has the SPEC’s defaults', () => {
    const options = parseEmulatorOptions({});
    assert.deepEqual(options.imds, { host: '127.0.0.1', port: 8169 });
    assert.deepEqual(options.control, { host: '127.0.0.1', port: 8170 });
    assert.equal(options.timingFactor, 1);
    assert.equal(options.clock, 'system');
    assert.equal(options.rateLimit, 5);
    assert.equal(options.fleet, undefined);
    assert.equal(parseEmulatorOptions({ timing: 'dev' }).timingFactor, 60);
    assert.equal(parseEmulatorOptions({ timing: '6000' }).timingFactor, 6000);
    assert.equal(parseEmulatorOptions({}, { FOREWARN_TOKEN: 't' }).token, 't');
    assert.equal(parseEmulatorOptions({ token: 'flag' }, { FOREWARN_TOKEN: 't' }).token, 'flag');
  });

  it('takes --vm repeated, with several names, or comma-separated', async () => {
    const io = captureIo();
    const seen: unknown[] = [];
    const fakeFetch = (async (_url: string, init: RequestInit) => {
      seen.push(JSON.parse(init.body as string));
      return new Response(JSON.stringify({ operation: 'op', events: ['E1'], removedVms: [], reimagedVms: [] }), { status: 201 });
    }) as typeof fetch;
    const request = parseTriggerArgs('restart', { vm: ['a', 'b', 'c,d'], duration: '30', notBefore: '2030-01-01T00:20:00+00:00' });
    assert.deepEqual(request.body, {
      type: 'restart',
      vms: ['a', 'b', 'c', 'd'],
      durationInSeconds: 30,
      notBefore: '2030-01-01T00:20:00.000Z',
    });
    assert.equal(request.controlUrl, 'http://127.0.0.1:8170');
    await runTrigger(request, io, fakeFetch);
    assert.equal(io.out, 'operation op\nevent E1\n');
    assert.equal(seen.length, 1);
    assert.equal(parseTriggerArgs('freeze', { vm: ['a'] }, { FOREWARN_CONTROL: 'http://x:1/' }).controlUrl, 'http://x:1');
    assert.throws(() => parseTriggerArgs('frieze', { vm: ['a'] }), /unknown operation "frieze"/);
    assert.throws(() => parseTriggerArgs('freeze', { vm: ['a'], host: 'h' }), /exactly one of/);
    assert.throws(() => parseTriggerArgs('freeze', { vm: ['a'], duration: '-2' }), /--duration/);
    assert.throws(() => parseTriggerArgs('freeze', { vm: ['a'], notBefore: 'tomorrow' }), /--not-before/);
  });

  it('names the CLI\'s --force, not the API\'s "force": true, when NotBefore is too early', async () => {
    const io = captureIo();
    const refusal = {
      error: 'notBefore 2030-01-01T00:01:00.000Z gives less than the minimum notice of 900 s for Freeze; pass "force": true to allow it',
    };
    const fakeFetch = (async () => new Response(JSON.stringify(refusal), { status: 400 })) as unknown as typeof fetch;
    const request = parseTriggerArgs('freeze', { vm: ['a'], notBefore: '2030-01-01T00:01:00Z' });
    await assert.rejects(runTrigger(request, io, fakeFetch), (err: Error) => {
      assert.match(err.message, /pass --force to allow it/);
      assert.doesNotMatch(err.message, /"force": true/);
      return true;
    });
  });

  it('runs trigger in-process against a live emulator: --vm names, --json, and the token', async () => {
    const fleet = join(dir, 'two.yaml');
    writeFileSync(fleet, 'vms:\n  - {name: a, tenant: as1}\n  - {name: b, tenant: as1}\n');
    const options = parseEmulatorOptions({ imds: '127.0.0.1:0', control: '127.0.0.1:0', clock: 'manual', fleet, token: 'tok' });
    const io = captureIo();
    const { emulator, controlUrl } = await startEmulator({ ...options, logLevel: 'silent' }, io);
    try {
      // Several VMs: the example uses the /vms/NAME/ prefix, and the token stays out of stdout.
      assert.match(io.out, /\/vms\/a\/metadata\/scheduledevents\?api-version=2020-07-01/);
      assert.match(io.out, /Bearer \$FOREWARN_TOKEN/);
      assert.doesNotMatch(io.out, /tok\b/);

      const out = captureIo({ FOREWARN_TOKEN: 'tok' });
      const code = await run(['trigger', 'freeze', '--vm', 'a', 'b', '--json', '--control', controlUrl], out);
      assert.equal(code, 0, out.err);
      const created = JSON.parse(out.out) as { operation: string; events: string[] };
      assert.equal(created.events.length, 1);
      assert.deepEqual(emulator.engine.event(created.events[0]!).resources, ['a', 'b']);

      const denied = captureIo();
      assert.equal(await run(['trigger', 'freeze', '--vm', 'a', '--control', controlUrl], denied), 1);
      assert.match(denied.err, /^forewarn: the control API refused: 401 /);
    } finally {
      await emulator.close();
    }
  });

  it('warns when the control API is reachable from other machines without a token', async () => {
    const options = parseEmulatorOptions({ imds: '127.0.0.1:0', control: '0.0.0.0:0', clock: 'manual', logLevel: 'silent' });
    const io = captureIo();
    const { emulator, controlUrl } = await startEmulator(options, io);
    try {
      assert.match(io.err, /warning: the control API on 0\.0\.0\.0 .* no token/);
      assert.match(controlUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await emulator.close();
    }
  });

  it('maps failures to exit codes without stack traces', async () => {
    const io = captureIo();
    assert.equal(await run(['emulator', '--activation', 'realistic', '--activation-delay', 'soon'], io), 2);
    assert.match(io.err, /^forewarn: --activation-delay must be a number of seconds from 0 to 120, got "soon"/);
    assertNoStack(io.err);
    const help = captureIo();
    assert.equal(await run(['--help'], help), 0);
    assert.match(help.out, /emulator/);
    const none = captureIo();
    assert.equal(await run(['nope'], none), 2);
    assert.match(none.err, /unknown command 'nope'/);
  });

  it('prints the package version', async () => {
    const io = captureIo();
    assert.equal(await run(['--version'], io), 0);
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    assert.equal(io.out.trim(), version);
  });
});

describe('activation and host or tenant targets', () => {
  it('parses --activation and --activation-delay', () => {
    assert.deepEqual(parseEmulatorOptions({}).activation, { mode: 'off' });
    assert.deepEqual(parseEmulatorOptions({ activation: 'realistic' }).activation, { mode: 'realistic', firstCallDelaySeconds: 120 });
    assert.deepEqual(parseEmulatorOptions({ activation: 'realistic', activationDelay: '0' }).activation, {
      mode: 'realistic',
      firstCallDelaySeconds: 0,
    });
    assert.deepEqual(parseEmulatorOptions({ activation: 'realistic', activationDelay: '7.5' }).activation, {
      mode: 'realistic',
      firstCallDelaySeconds: 7.5,
    });
    for (const bad of ['-1', '120.5', '121', 'two', '', ' ', 'Infinity']) {
      assert.throws(
        () => parseEmulatorOptions({ activation: 'realistic', activationDelay: bad }),
        { name: 'UsageError', message: /--activation-delay must be a number of seconds from 0 to 120/ },
        bad,
      );
    }
    assert.throws(() => parseEmulatorOptions({ activation: 'off', activationDelay: '10' }), /only with --activation realistic/);
  });

  it('--activation realistic works: the banner says so and the first request is held for the scaled delay', async () => {
    const options = parseEmulatorOptions({
      imds: '127.0.0.1:0',
      control: '127.0.0.1:0',
      activation: 'realistic',
      activationDelay: '60',
      timing: '60',
      rateLimit: '0',
      logLevel: 'silent',
    });
    const io = captureIo();
    const { emulator, imdsUrl } = await startEmulator(options, io);
    try {
      assert.match(io.out, /^Activation: realistic; the first request of each VM is held for 1 s \(60 s at timing x60\)/m);
      emulator.engine.createOperation({ type: 'freeze', vms: ['vm0'] });
      const url = `${imdsUrl}/metadata/scheduledevents?api-version=2020-07-01`;
      const started = Date.now();
      const first = (await (await fetch(url, { headers: { Metadata: 'true' } })).json()) as { Events: unknown[] };
      const held = Date.now() - started;
      assert.ok(held >= 990, `held ${held} ms`);
      assert.equal(first.Events.length, 1);
    } finally {
      await emulator.close();
    }

    const manual = captureIo();
    const running = await startEmulator({ ...options, clock: 'manual', timingFactor: 1 }, manual);
    await running.emulator.close();
    assert.match(manual.out, /^Activation: realistic; each VM sees its events 60 s of clock time after its first request/m);
    const off = captureIo();
    const plain = await startEmulator(
      { ...parseEmulatorOptions({ imds: '127.0.0.1:0', control: '127.0.0.1:0' }), logLevel: 'silent' },
      off,
    );
    await plain.emulator.close();
    assert.doesNotMatch(off.out, /Activation/);
  });

  const SHARED_FLEET = [
    'tenants:',
    '  - { name: web, kind: availabilitySet, faultDomainCount: 2 }',
    '  - { name: workers, kind: scaleSet, faultDomainCount: 2 }',
    'hosts:',
    '  - { name: rack1-host1, vms: [web0, worker0] }',
    'vms:',
    '  - { name: web0, tenant: web, faultDomain: 0 }',
    '  - { name: web1, tenant: web, faultDomain: 1 }',
    '  - { name: worker0, tenant: workers, faultDomain: 0 }',
    '  - { name: worker1, tenant: workers, faultDomain: 1 }',
    '',
  ].join('\n');

  async function sharedEmulator() {
    const fleet = join(dir, 'shared.yaml');
    writeFileSync(fleet, SHARED_FLEET);
    const options = parseEmulatorOptions({ imds: '127.0.0.1:0', control: '127.0.0.1:0', clock: 'manual', fleet, logLevel: 'silent' });
    return startEmulator(options, captureIo());
  }

  it('trigger host-update --tenant prints the rolling steps; a second one on the tenant is refused with 409', async () => {
    const { emulator, controlUrl } = await sharedEmulator();
    try {
      const io = captureIo();
      assert.equal(await run(['trigger', 'host-update', '--tenant', 'web', '--control', controlUrl], io), 0, io.err);
      const [op] = emulator.engine.operations().items;
      const [event] = emulator.engine.events();
      assert.equal(op!.tenant, 'web');
      assert.deepEqual(event!.resources, ['web0']);
      assert.equal(
        io.out,
        [
          `operation ${op!.id}`,
          `event ${event!.id}`,
          'rolling over 2 fault domains, one at a time:',
          `  fault domain 0: web0 (scheduled, event ${event!.id})`,
          '  fault domain 1: web1 (pending)',
          '',
        ].join('\n'),
      );

      const again = captureIo();
      assert.equal(await run(['trigger', 'host-update', '--tenant', 'web', '--control', controlUrl], again), 1);
      assert.match(again.err, /refused: 409 a host update is already in progress for tenant 'web'/);

      const json = captureIo();
      assert.equal(await run(['trigger', 'host-update', '--tenant', 'workers', '--json', '--control', controlUrl], json), 0, json.err);
      const created = JSON.parse(json.out) as { status: string; steps: { faultDomain: number; status: string }[] };
      assert.equal(created.status, 'running');
      assert.deepEqual(
        created.steps.map((s) => [s.faultDomain, s.status]),
        [
          [0, 'scheduled'],
          [1, 'pending'],
        ],
      );
    } finally {
      await emulator.close();
    }
  });

  it('trigger hardware-failure --host gives every tenant on the host its own Started event', async () => {
    const { emulator, controlUrl } = await sharedEmulator();
    try {
      const io = captureIo();
      assert.equal(await run(['trigger', 'hardware-failure', '--host', 'rack1-host1', '--control', controlUrl], io), 0, io.err);
      const events = emulator.engine.events();
      assert.deepEqual(
        events.map((e) => [e.tenant, e.resources, e.status]),
        [
          ['web', ['web0'], 'Started'],
          ['workers', ['worker0'], 'Started'],
        ],
      );
      for (const e of events) assert.match(io.out, new RegExp(`^event ${e.id}$`, 'm'));
      assert.doesNotMatch(io.out, /rolling/);
      assert.equal(emulator.engine.operations().items[0]!.host, 'rack1-host1');

      const refused = captureIo();
      assert.equal(await run(['trigger', 'restart', '--host', 'rack1-host1', '--control', controlUrl], refused), 1);
      assert.match(refused.err, /refused: 400 'restart' is not a host-level job/);
      const unknown = captureIo();
      assert.equal(await run(['trigger', 'freeze', '--host', 'nope', '--control', controlUrl], unknown), 1);
      assert.match(unknown.err, /refused: 404 no host named 'nope'/);
    } finally {
      await emulator.close();
    }
  });
});
