// `forewarn events`, `approve` and `watch` against a live in-process emulator.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ScheduledEventsClient } from '../../src/client/index.js';
import { parseApproveArgs, runApprove } from '../../src/cli/approve.js';
import { DEFAULT_ENDPOINT, parseEndpointFlags } from '../../src/cli/endpoint.js';
import { formatSpan, formatTimeLeft, parseEventsArgs, runEvents } from '../../src/cli/events.js';
import { run } from '../../src/cli/program.js';
import { parseWatchArgs, runWatch } from '../../src/cli/watch.js';
import { Emulator } from '../../src/emulator/emulator.js';
import { CliProcess, captureIo, assertNoStack, closedPort, runCli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

const LISTEN = { imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } };

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

let emulator: Emulator;
let imdsUrl: string;

before(async () => {
  emulator = await Emulator.create({ clock: 'manual', rateLimit: 0 });
  ({ imdsUrl } = await emulator.listen(LISTEN));
});
after(() => emulator.close());
beforeEach(() => {
  emulator.engine.reset();
  emulator.faults.clear();
});

function freeze(vms = ['vm0']): string {
  return emulator.engine.createOperation({ type: 'freeze', vms }).events[0]!;
}

async function imdsText(version = '2020-07-01', prefix = ''): Promise<string> {
  const res = await fetch(`${imdsUrl}${prefix}/metadata/scheduledevents?api-version=${version}`, { headers: { Metadata: 'true' } });
  assert.equal(res.status, 200);
  return res.text();
}

describe('forewarn events', () => {
  it('prints "no events" under the incarnation when the document is empty', async () => {
    const io = captureIo();
    assert.equal(await run(['events', '--endpoint', imdsUrl], io), 0, io.err);
    assert.match(io.out, /^Incarnation \d+\nno events\n$/);
  });

  it('prints a table with the incarnation on top', async () => {
    const id = freeze();
    const { incarnation } = emulator.engine.documentFor('vm0');
    const io = captureIo();
    assert.equal(await run(['events', '--endpoint', imdsUrl], io), 0, io.err);
    const lines = io.out.trimEnd().split('\n');
    assert.equal(lines[0], `Incarnation ${incarnation}`);
    assert.match(lines[1]!, /^EventId\s+Type\s+Status\s+Resources\s+NotBefore\s+TimeLeft\s+Source\s+Duration$/);
    const notBefore = new Date(emulator.engine.event(id).notBefore).toISOString().replace('.000Z', 'Z');
    assert.match(lines[2]!, new RegExp(`^${id}\\s+Freeze\\s+Scheduled\\s+vm0\\s+${notBefore}\\s+in 1[45]m \\d\\ds\\s+Platform\\s+5s$`));
    assert.equal(lines.length, 3);
    // Columns line up: every row starts each column at the header's offset.
    assert.equal(lines[2]!.indexOf('Freeze'), lines[1]!.indexOf('Type'));
    assert.equal(lines[2]!.indexOf('Platform'), lines[1]!.indexOf('Source'));
  });

  it('--json prints the document exactly as IMDS sent it', async () => {
    freeze();
    emulator.engine.createOperation({ type: 'restart', vms: ['vm0'], description: 'user restart' });
    for (const version of ['2020-07-01', '2019-01-01', '2017-03-01']) {
      const io = captureIo();
      assert.equal(await run(['events', '--json', '--endpoint', imdsUrl, '--api-version', version], io), 0, io.err);
      const sent = await imdsText(version);
      assert.deepEqual(JSON.parse(io.out), JSON.parse(sent), version);
      assert.equal(io.out, `${sent}\n`, `${version}: the same bytes, key order included`);
    }
  });

  it('shows the time left until NotBefore by an injected clock: in 14m 32s, now, and - once Started', async () => {
    const id = freeze();
    const notBefore = emulator.engine.event(id).notBefore;
    const request = parseEventsArgs({ endpoint: imdsUrl });
    const at = async (now: number) => {
      const io = captureIo();
      await runEvents(request, io, { now: () => now });
      return io.out.split('\n')[2]!;
    };
    assert.match(await at(notBefore - (14 * 60 + 32) * 1000), /\sin 14m 32s\s/);
    assert.match(await at(notBefore - 500), /\sin 1s\s/);
    assert.match(await at(notBefore), /\snow\s/);
    assert.match(await at(notBefore + 60_000), /\snow\s/);
    emulator.engine.approve('vm0', [id]);
    const started = await at(notBefore - 60_000);
    assert.match(started, new RegExp(`^${id}\\s+Freeze\\s+Started\\s+vm0\\s+-\\s+-\\s+Platform\\s+5s$`));
  });

  it('formats spans and time left', () => {
    assert.equal(formatSpan(0), '0s');
    assert.equal(formatSpan(45), '45s');
    assert.equal(formatSpan(14 * 60 + 32), '14m 32s');
    assert.equal(formatSpan(60), '1m 00s');
    assert.equal(formatSpan(2 * 3600 + 5 * 60 + 9), '2h 05m');
    assert.equal(formatSpan(7 * 86_400 - 1), '6d 23h');
    const t = Date.UTC(2030, 0, 1);
    assert.equal(formatTimeLeft({ status: 'Scheduled', notBefore: new Date(t) }, t - 90_000), 'in 1m 30s');
    assert.equal(formatTimeLeft({ status: 'Scheduled', notBefore: new Date(t) }, t + 1), 'now');
    assert.equal(formatTimeLeft({ status: 'Scheduled', notBefore: null }, t), '-');
    assert.equal(formatTimeLeft({ status: 'Started', notBefore: null }, t), '-');
  });

  it('lets IMDS speak for a well-formed but unknown api-version: exit 1 with its message', async () => {
    const io = captureIo();
    assert.equal(await run(['events', '--endpoint', imdsUrl, '--api-version', '2018-01-01'], io), 1);
    assert.match(io.err, new RegExp(`^forewarn: reading the events: IMDS at ${escape(imdsUrl)} answered 400: .+`));
    assert.match(io.err, /2020-07-01/);
    assert.equal(io.err.trimEnd().split('\n').length, 1, io.err);
    assert.equal(io.out, '');
  });
});

describe('forewarn approve', () => {
  it('approves: the event becomes Started', async () => {
    const id = freeze();
    const io = captureIo();
    assert.equal(await run(['approve', id, '--endpoint', imdsUrl], io), 0, io.err);
    assert.equal(io.out, `approved ${id}\n`);
    assert.equal(emulator.engine.event(id).status, 'Started');
    assert.deepEqual(
      emulator.engine.event(id).approvals.map((a) => a.vm),
      ['vm0'],
    );
  });

  it('approves several ids in one POST', async () => {
    const a = freeze();
    const b = emulator.engine.createOperation({ type: 'restart', vms: ['vm0'] }).events[0]!;
    const posts: string[] = [];
    const counting = (async (input: string | URL | Request, init?: RequestInit) => {
      if ((init?.method ?? 'GET').toUpperCase() === 'POST') posts.push(String(init?.body));
      return fetch(input, init);
    }) as typeof fetch;
    const request = parseApproveArgs([a, b], { endpoint: imdsUrl });
    const io = captureIo();
    await runApprove(request, io, new ScheduledEventsClient({ endpoint: imdsUrl, fetch: counting }));
    assert.equal(io.out, `approved ${a} ${b}\n`);
    assert.equal(posts.length, 1);
    assert.deepEqual(JSON.parse(posts[0]!), { StartRequests: [{ EventId: a }, { EventId: b }] });
    assert.equal(emulator.engine.event(a).status, 'Started');
    assert.equal(emulator.engine.event(b).status, 'Started');
    assert.deepEqual(parseApproveArgs(['x,y', 'z'], {}).ids, ['x', 'y', 'z']);
  });

  it('an event already Started: says so rather than "approved", and sends nothing for it', async () => {
    const started = freeze();
    emulator.engine.approve('vm0', [started]);
    assert.equal(emulator.engine.event(started).status, 'Started');
    const scheduled = freeze();
    const posts: string[] = [];
    const counting = (async (input: string | URL | Request, init?: RequestInit) => {
      if ((init?.method ?? 'GET').toUpperCase() === 'POST') posts.push(String(init?.body));
      return fetch(input, init);
    }) as typeof fetch;
    const io = captureIo();
    await runApprove(
      parseApproveArgs([started, scheduled], { endpoint: imdsUrl }),
      io,
      new ScheduledEventsClient({ endpoint: imdsUrl, fetch: counting }),
    );
    assert.equal(io.out, `${started} had already started: nothing to approve\napproved ${scheduled}\n`);
    assert.deepEqual(JSON.parse(posts[0]!), { StartRequests: [{ EventId: scheduled }] });
    const only = captureIo();
    posts.length = 0;
    await runApprove(
      parseApproveArgs([started], { endpoint: imdsUrl }),
      only,
      new ScheduledEventsClient({ endpoint: imdsUrl, fetch: counting }),
    );
    assert.equal(only.out, `${started} had already started: nothing to approve\n`);
    assert.equal(posts.length, 0, 'nothing to send');
  });

  it('an id never issued: exit 1 with IMDS’s message, nothing approved', async () => {
    const id = freeze();
    const unknown = '00000000-0000-0000-0000-000000000000';
    const io = captureIo();
    assert.equal(await run(['approve', id, unknown, '--endpoint', imdsUrl], io), 1);
    assert.match(
      io.err,
      new RegExp(
        `^forewarn: approving ${id} ${unknown}: IMDS at ${escape(imdsUrl)} answered 400: unknown EventId \\(never issued, or ended longer ago than the emulator keeps: --history-limit\\): ${unknown}\\n$`,
      ),
    );
    assert.equal(io.out, '');
    assert.equal(emulator.engine.event(id).status, 'Scheduled');
  });
});

describe('forewarn watch', () => {
  it('--json prints one NDJSON line per change as it happens, and stops on SIGTERM with 0', async () => {
    // Already there at the first read: a first sighting is "scheduled" too.
    const a = freeze();
    const watch = new CliProcess(['watch', '--json', '--endpoint', imdsUrl]);
    type Line = { time: string; kind: string; incarnation: number; event: Record<string, unknown> };
    const lines = () =>
      watch.stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Line);
    const next = (kind: string, id: string) =>
      waitFor(
        () => `${kind} ${id}; stdout: ${watch.stdout}; stderr: ${watch.stderr}`,
        () => lines().find((l) => l.kind === kind && l.event.EventId === id),
      );
    try {
      const scheduled = await next('scheduled', a);
      assert.deepEqual(Object.keys(scheduled), ['time', 'kind', 'incarnation', 'event']);
      assert.equal(scheduled.incarnation, emulator.engine.documentFor('vm0').incarnation);
      assert.ok(!Number.isNaN(Date.parse(scheduled.time)));
      assert.deepEqual(scheduled.event, JSON.parse(await imdsText()).Events[0]);

      emulator.engine.approve('vm0', [a]);
      const started = await next('started', a);
      assert.equal(started.event.EventStatus, 'Started');
      assert.equal(started.event.NotBefore, '');

      emulator.engine.complete(a);
      await next('completed', a);

      const b = emulator.engine.createOperation({ type: 'restart', vms: ['vm0'] }).events[0]!;
      await next('scheduled', b);
      emulator.engine.cancel(b);
      const cancelled = await next('cancelled', b);
      assert.equal(cancelled.event.EventType, 'Reboot');
      assert.deepEqual(
        lines().map((l) => [l.kind, l.event.EventId]),
        [
          ['scheduled', a],
          ['started', a],
          ['completed', a],
          ['scheduled', b],
          ['cancelled', b],
        ],
      );
    } finally {
      watch.child.kill('SIGTERM');
    }
    assert.equal(await watch.exited, 0, watch.stderr);
    assert.equal(watch.stderr, '');
  });

  it('prints text lines per change and carries on after errors, naming the last good read', async () => {
    const id = freeze();
    const inc = emulator.engine.documentFor('vm0').incarnation;
    const notBefore = new Date(emulator.engine.event(id).notBefore).toISOString().replace('.000Z', 'Z');
    const controller = new AbortController();
    const io = captureIo();
    // One attempt per read, so a failing read is reported at once.
    const client = new ScheduledEventsClient({ endpoint: imdsUrl, retry: { maxAttempts: 1 } });
    const watching = runWatch(parseWatchArgs({ endpoint: imdsUrl }), io, { signal: controller.signal, intervalMs: 20, client });
    try {
      const line = await waitFor(`scheduled line; ${io.out}`, () => io.out.split('\n').find((l) => l.includes(' scheduled ')));
      assert.match(
        line,
        new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z scheduled ${id} Freeze Scheduled vm0 NotBefore ${notBefore} \\(incarnation ${inc}\\)$`),
      );

      // Every read fails for a while: the watch reports it on stderr and keeps going.
      emulator.faults.add({ status: 500, count: 1_000 });
      const error = await waitFor(`error line; ${io.err}`, () => io.err.split('\n').find((l) => l.includes(' error: ')));
      assert.match(error, new RegExp(`^\\S+Z error: IMDS at ${escape(imdsUrl)} answered 500: .* \\(last good read \\d+s ago\\)$`));
      emulator.faults.clear();
      emulator.engine.approve('vm0', [id]);
      await waitFor(`started line; ${io.out}`, () =>
        io.out.split('\n').find((l) => l.includes(` started ${id} Freeze Started vm0 NotBefore - `)),
      );
    } finally {
      controller.abort();
    }
    await watching;
  });

  it('reports that no read has succeeded yet when IMDS cannot be reached', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const controller = new AbortController();
    const io = captureIo();
    const client = new ScheduledEventsClient({ endpoint: url, retry: { maxAttempts: 1 } });
    const watching = runWatch(parseWatchArgs({ endpoint: url, json: true }), io, { signal: controller.signal, intervalMs: 20, client });
    try {
      const line = await waitFor(`an error object; ${io.out}`, () => io.out.split('\n').find((l) => l.includes('"error"')));
      const parsed = JSON.parse(line) as { time: string; error: string; msSinceSuccess: number | null };
      assert.deepEqual(Object.keys(parsed), ['time', 'error', 'msSinceSuccess']);
      assert.equal(parsed.msSinceSuccess, null);
      assert.match(parsed.error, new RegExp(`^cannot reach IMDS at ${escape(url)}`));
      assert.equal(io.err, '');
    } finally {
      controller.abort();
    }
    await watching;
  });
});

describe('endpoint, failures and flags', () => {
  it('takes the endpoint from the flag, else FOREWARN_ENDPOINT, else 169.254.169.254', async () => {
    assert.equal(parseEndpointFlags({}, {}).endpoint, DEFAULT_ENDPOINT);
    assert.equal(parseEndpointFlags({}, { FOREWARN_ENDPOINT: 'http://127.0.0.1:1/' }).endpoint, 'http://127.0.0.1:1');
    assert.equal(
      parseEndpointFlags({ endpoint: 'http://127.0.0.1:2' }, { FOREWARN_ENDPOINT: 'http://127.0.0.1:1' }).endpoint,
      'http://127.0.0.1:2',
    );

    freeze();
    const fromEnv = captureIo({ FOREWARN_ENDPOINT: imdsUrl });
    assert.equal(await run(['events', '--json'], fromEnv), 0, fromEnv.err);
    assert.equal(fromEnv.out, `${await imdsText()}\n`);

    const dead = `http://127.0.0.1:${await closedPort()}`;
    const flagWins = captureIo({ FOREWARN_ENDPOINT: dead });
    assert.equal(await run(['events', '--json', '--endpoint', imdsUrl], flagWins), 0, flagWins.err);
    assert.equal(flagWins.out, fromEnv.out);
  });

  it('an unreachable endpoint: exit 1, one line naming the URL, no stack (as a process)', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const [events, approve] = await Promise.all([
      runCli(['events'], { FOREWARN_ENDPOINT: url }),
      runCli(['approve', 'E1', '--endpoint', url]),
    ]);
    for (const result of [events, approve]) {
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, new RegExp(`^forewarn: .*cannot reach IMDS at ${escape(url)}`));
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr);
      assertNoStack(result.stderr);
      assert.equal(result.stdout, '');
    }
  });

  it('bad flags exit 2 with one clear line', async () => {
    const cases: [string[], RegExp][] = [
      [['events', '--api-version', 'latest'], /--api-version must be a date such as 2020-07-01, got "latest"/],
      [['events', '--api-version', '{latest}'], /--api-version must be a date/],
      [['events', '--endpoint', 'not a url'], /--endpoint must be a URL/],
      [['events', '--endpoint', 'ftp://127.0.0.1'], /--endpoint must be an http\(s\) URL/],
      [['approve', '--endpoint', 'http://127.0.0.1:1'], /missing required argument 'EVENT_ID/],
      [['approve', ',', '--endpoint', 'http://127.0.0.1:1'], /name at least one EVENT_ID/],
      [['watch', '--api-version', '2020-7-1'], /--api-version must be a date/],
      [['watch', '--bogus'], /unknown option '--bogus'/],
    ];
    for (const [args, expected] of cases) {
      const io = captureIo();
      assert.equal(await run(args, io), 2, `${args.join(' ')}: ${io.err}`);
      assert.match(io.err, expected, args.join(' '));
      assertNoStack(io.err);
      assert.equal(io.out, '');
    }
    const env = captureIo({ FOREWARN_ENDPOINT: 'nope' });
    assert.equal(await run(['events'], env), 2);
    assert.match(env.err, /^forewarn: FOREWARN_ENDPOINT must be a URL/);
  });

  it('--help of each command mentions the /vms/NAME prefix for an emulator with several VMs', async () => {
    for (const command of ['events', 'approve', 'watch']) {
      const io = captureIo();
      assert.equal(await run([command, '--help'], io), 0);
      assert.match(io.out, /\/vms\/NAME/, command);
      assert.match(io.out, /FOREWARN_ENDPOINT/, command);
    }
  });

  it('reaches one VM of a fleet through the /vms/NAME prefix; without it, IMDS’s 404 explains', async () => {
    const fleet = await Emulator.create({ clock: 'manual', rateLimit: 0, fleet: [{ name: 'web0' }, { name: 'web1' }] });
    try {
      const { imdsUrl: url } = await fleet.listen(LISTEN);
      const id = fleet.engine.createOperation({ type: 'freeze', vms: ['web1'] }).events[0]!;
      const io = captureIo();
      assert.equal(await run(['events', '--endpoint', `${url}/vms/web1`], io), 0, io.err);
      assert.match(io.out, new RegExp(`^${id}\\s+Freeze\\s+Scheduled\\s+web1\\s`, 'm'));
      const approve = captureIo({ FOREWARN_ENDPOINT: `${url}/vms/web1/` });
      assert.equal(await run(['approve', id], approve), 0, approve.err);
      assert.equal(fleet.engine.event(id).status, 'Started');

      const bare = captureIo();
      assert.equal(await run(['events', '--endpoint', url], bare), 1);
      assert.match(bare.err, new RegExp(`^forewarn: reading the events: IMDS at ${escape(url)} answered 404: .*vms/NAME`));
    } finally {
      await fleet.close();
    }
  });
});
