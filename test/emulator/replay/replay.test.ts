// Replaying a recording: the round trip record → replay → record gives back the same documents in
// the same order and timing; the manual clock makes a replay deterministic; an approval by the
// client starts the event as Azure would, and disagreements with the recording are reported;
// IMDS's request rules hold; `forewarn replay` serves a file and reports at the end.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { ScheduledEventsClient } from '../../../src/client/index.js';
import { parseRecordArgs, runRecord } from '../../../src/cli/record.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { Replay } from '../../../src/emulator/replay/server.js';
import { parseRecording, serializeRecording, type RawDocument, type Recording } from '../../../src/protocol/recording.js';
import { CliProcess, captureIo } from '../../support/cli.js';
import { FREEZE_FLEET, playFreeze } from '../../support/recording.js';
import { tempDir } from '../../support/temp.js';
import { waitFor } from '../../support/wait.js';

const dir = tempDir('replay');
const LISTEN = { imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } };
const lines = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean);

/** Records `endpoint` while `play` runs, until one event has come and gone. */
async function record(path: string, endpoint: string, play: (seen: () => number) => Promise<unknown>): Promise<Recording> {
  const request = parseRecordArgs({ endpoint, output: path, interval: '0.2', events: '1' });
  const done = runRecord(request, captureIo(), { signal: new AbortController().signal });
  await waitFor('the first document', () => (lines(path).length >= 2 ? true : undefined), 10_000, 20);
  await play(() => lines(path).length - 1);
  await done;
  return parseRecording(readFileSync(path, 'utf8'), path);
}

/** What a VM would act on: events without the absolute times, NotBefore as ms after the recording's start. */
function comparable(recording: Recording): { at: number; incarnation: number; events: unknown[] }[] {
  const start = Date.parse(recording.header.startedAt);
  return recording.changes.map((c) => ({
    at: c.at,
    incarnation: c.document.DocumentIncarnation,
    events: c.document.Events.map((e) => ({
      ...e,
      NotBefore: typeof e.NotBefore === 'string' && e.NotBefore !== '' ? Date.parse(e.NotBefore) - start : e.NotBefore,
    })),
  }));
}

let original: Recording;
let eventId: string;

before(async () => {
  const emulator = await Emulator.create({ clock: 'manual', rateLimit: 0, fleet: FREEZE_FLEET });
  try {
    const { imdsUrl } = await emulator.listen(LISTEN);
    original = await record(join(dir, 'original.jsonl'), `${imdsUrl}/vms/WestNO_0`, async (seen) => {
      eventId = await playFreeze(emulator, seen);
    });
  } finally {
    await emulator.close();
  }
});

describe('replay', () => {
  it("round trip: the seeds' Freeze example recorded, replayed and recorded again is the same documents, order and timing", async () => {
    const replay = new Replay(original);
    const { imdsUrl } = await replay.listen({ control: null });
    try {
      const again = await record(join(dir, 'again.jsonl'), imdsUrl, async () => {});
      const a = comparable(original);
      const b = comparable(again);
      const withoutTimes = (changes: typeof a) =>
        changes.map((c) => [
          c.incarnation,
          c.events.map((e) => ({ ...(e as object), NotBefore: typeof (e as { NotBefore: unknown }).NotBefore })),
        ]);
      assert.deepEqual(withoutTimes(b), withoutTimes(a), 'the same documents in the same order');
      a.forEach((c, i) =>
        c.events.forEach((e, k) => {
          const [x, y] = [(e as { NotBefore: unknown }).NotBefore, (b[i]!.events[k] as { NotBefore: unknown }).NotBefore];
          if (typeof x === 'number') assert.ok(Math.abs((y as number) - x) <= 1500, `NotBefore ${y} ms after the start, recorded ${x} ms`);
        }),
      );
      assert.equal(again.header.vm?.name, 'WestNO_0', 'the replay answers /metadata/instance as the recorded VM');
      // Within the polling granularity (0.2 s on each side) plus scheduling slack.
      a.forEach((c, i) => assert.ok(Math.abs(b[i]!.at - c.at) <= 600, `change ${i}: ${b[i]!.at} ms against ${c.at} ms`));
    } finally {
      await replay.close();
    }
  });

  it('under the manual clock, the same steps give the same documents, every time', async () => {
    const run = async () => {
      const replay = new Replay(original, { clock: 'manual' });
      const seen: RawDocument[] = [];
      for (let step = 0; step <= 12; step++) {
        seen.push(JSON.parse(replay.document().body) as RawDocument);
        replay.advance(200);
      }
      // NotBefore is moved into the replay's time, which starts at the wall clock: compare it relative to that.
      return {
        seen: seen.map((d) => ({ ...d, Events: d.Events.map((e) => ({ ...e, NotBefore: e.NotBefore === '' ? '' : 'shifted' })) })),
        last: replay.status(),
      };
    };
    const one = await run();
    const two = await run();
    assert.deepEqual(one, { ...two, last: { ...two.last, now: one.last.now } });
    assert.deepEqual(
      [...new Set(one.seen.map((d) => d.DocumentIncarnation))],
      original.changes.map((c) => c.document.DocumentIncarnation),
      'every document shows, in order',
    );
  });

  it('moves NotBefore into the replay’s time, so the time left is what the recording showed', () => {
    const replay = new Replay(original, { clock: 'manual' });
    const scheduled = original.changes.findIndex((c) => c.document.Events.some((e) => e.EventStatus === 'Scheduled'));
    replay.advance(original.changes[scheduled]!.at);
    const recorded =
      Date.parse(original.changes[scheduled]!.document.Events[0]!.NotBefore as string) -
      Date.parse(original.header.startedAt) -
      original.changes[scheduled]!.at;
    const served = Date.parse((JSON.parse(replay.document().body) as RawDocument).Events[0]!.NotBefore as string) - replay.clock.now();
    assert.ok(Math.abs(served - recorded) <= 1000, `${served} ms left, recorded ${recorded} ms (NotBefore has whole seconds)`);
  });

  it('an approval by the client starts the event at once, as Azure would; nothing diverges when the recording approved too', async () => {
    const replay = new Replay(original, { clock: 'manual' });
    const { imdsUrl } = await replay.listen({ control: null });
    try {
      const client = new ScheduledEventsClient({ endpoint: imdsUrl });
      const scheduled = original.changes.findIndex((c) => c.document.Events.some((e) => e.EventStatus === 'Scheduled'));
      replay.advance(original.changes[scheduled]!.at);
      assert.equal((await client.getDocument()).events[0]!.status, 'Scheduled');
      await client.approve(eventId);
      assert.equal((await client.getDocument()).events[0]!.status, 'Started');
      const status = replay.status();
      assert.deepEqual(status.clientApprovals, [eventId]);
      assert.deepEqual(status.recordedApprovals, [eventId], 'the recording shows it Started well before its NotBefore');
      assert.deepEqual(status.divergences, []);
    } finally {
      await replay.close();
    }
  });

  it('reports what the client approved and the recording did not, and the reverse', () => {
    // The recording approved the Freeze; the client never does.
    const silent = new Replay(original, { clock: 'manual' });
    silent.advance(original.changes.at(-1)!.at);
    assert.deepEqual(
      silent.status().divergences.map((d) => [d.eventId, d.kind]),
      [[eventId, 'recording-only']],
    );
    // A recording where the event started at its NotBefore; the client approves it early.
    const onTime: Recording = structuredClone(original);
    const start = Date.parse(onTime.header.startedAt);
    const started = onTime.changes.findIndex((c) => c.document.Events.some((e) => e.EventStatus === 'Started'));
    for (const c of onTime.changes.slice(0, started)) {
      for (const e of c.document.Events) e.NotBefore = new Date(start + onTime.changes[started]!.at).toUTCString();
    }
    const eager = new Replay(onTime, { clock: 'manual' });
    eager.advance(onTime.changes[started - 1]!.at);
    assert.deepEqual(eager.timeline.approve(eager.position(), [eventId]), { unknown: [] });
    assert.deepEqual(
      eager.status().divergences.map((d) => [d.eventId, d.kind]),
      [[eventId, 'client-only']],
    );
  });

  it("holds IMDS's request rules", async () => {
    const replay = new Replay(original, { clock: 'manual' });
    const { imdsUrl } = await replay.listen({ control: null });
    try {
      const get = (path: string, headers: Record<string, string> = { Metadata: 'true' }) => fetch(`${imdsUrl}${path}`, { headers });
      const events = '/metadata/scheduledevents?api-version=2020-07-01';
      assert.equal((await get(events)).status, 200);
      assert.equal((await get(events, {})).status, 400, 'no Metadata header');
      assert.equal((await get(events, { Metadata: 'true', 'X-Forwarded-For': '1.2.3.4' })).status, 400, 'a proxy');
      assert.equal((await get('/metadata/scheduledevents?api-version=2001-01-01')).status, 400, 'an unknown api-version');
      assert.equal((await get(`/vms/WestNO_0${events}`)).status, 200);
      assert.equal((await get(`/vms/someone-else${events}`)).status, 404);
      const first = await get(events);
      assert.equal((await get(events, { Metadata: 'true', 'If-None-Match': first.headers.get('etag')! })).status, 304);
      const post = await fetch(`${imdsUrl}${events}`, {
        method: 'POST',
        headers: { Metadata: 'true' },
        body: JSON.stringify({ StartRequests: [{ EventId: '11111111-1111-4111-8111-111111111111' }] }),
      });
      assert.equal(post.status, 400, 'an EventId the document does not hold');
    } finally {
      await replay.close();
    }
  });

  it('`forewarn replay FILE` serves it on the manual clock, steps through the control route, and reports at the end', async () => {
    const file = join(dir, 'cli.jsonl');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, serializeRecording(original));
    const proc = new CliProcess(['replay', file, '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0', '--clock', 'manual', '--json']);
    const [, imdsUrl, controlUrl] = await proc.waitForOutput(/IMDS:\s+(\S+)\nControl:\s+(\S+)/);
    const client = new ScheduledEventsClient({ endpoint: imdsUrl! });
    assert.equal((await client.getDocument()).events.length, 0);
    const res = await fetch(`${controlUrl}/v1/clock/advance`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ seconds: original.changes.at(-1)!.at / 1000 }),
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { finished: boolean }).finished, true);
    proc.child.kill('SIGINT');
    assert.equal(await proc.exited, 0);
    const report = JSON.parse(proc.stdout.trim().split('\n').at(-1)!) as { divergences: { kind: string }[] };
    assert.deepEqual(
      report.divergences.map((d) => d.kind),
      ['recording-only'],
    );
    assert.match(proc.stderr, /divergence: the recording shows .* approved before NotBefore; the client did not approve it/);
  });
});

describe('scenario from-recording', () => {
  it('turns the recording into a scenario that runs and passes its own expectations', async () => {
    const { scenarioFromRecording } = await import('../../../src/emulator/scenarios/from-recording.js');
    const { scenarioFromObject } = await import('../../../src/emulator/scenarios/load.js');
    const { runScenario } = await import('../../../src/emulator/scenarios/runner.js');
    const document = scenarioFromRecording(original, 'live-migration');
    assert.deepEqual(
      document.steps.map((s) => Object.keys(s).find((k) => k !== 'at' && k !== 'as')),
      ['expect', 'operation', 'expect', 'approve', 'expect', 'complete', 'expect'],
      'an operation when the Freeze appears, the recorded approval, its end, and every document',
    );
    const report = await runScenario(scenarioFromObject(document));
    assert.equal(
      report.passed,
      true,
      JSON.stringify(
        report.steps.filter((s) => !s.ok),
        null,
        2,
      ),
    );
  });

  it('`forewarn scenario from-recording` writes YAML that `scenario run` passes', async () => {
    const { run } = await import('../../../src/cli/program.js');
    const { writeFileSync } = await import('node:fs');
    const recordingFile = join(dir, 'incident.jsonl');
    writeFileSync(recordingFile, serializeRecording(original));
    const scenarioFile = join(dir, 'incident.yaml');
    const io = captureIo();
    assert.equal(await run(['scenario', 'from-recording', recordingFile, '--output', scenarioFile], io), 0, io.err);
    const ran = captureIo();
    assert.equal(await run(['scenario', 'run', scenarioFile], ran), 0, ran.out + ran.err);
    assert.match(readFileSync(scenarioFile, 'utf8'), /^name: incident\n/);
  });
});
