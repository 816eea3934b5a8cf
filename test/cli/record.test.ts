// `forewarn record` against a live in-process emulator playing the seeds' Freeze example, and
// converting `forewarn watch --json` output; the recording format's own rules.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ScheduledEventsClient } from '../../src/client/index.js';
import { run } from '../../src/cli/program.js';
import { parseRecordArgs, runRecord } from '../../src/cli/record.js';
import { Emulator } from '../../src/emulator/emulator.js';
import { anonymise, parseRecording, RecordingError, serializeRecording, type Recording } from '../../src/protocol/recording.js';
import { captureIo } from '../support/cli.js';
import { tempDir } from '../support/temp.js';
import { FREEZE_FLEET, playFreeze } from '../support/recording.js';
import { waitFor } from '../support/wait.js';

const dir = tempDir('record');
const LISTEN = { imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } };
let emulator: Emulator;
let imdsUrl: string;
let file = 0;
const output = () => join(dir, `rec-${++file}.jsonl`);

before(async () => {
  emulator = await Emulator.create({ clock: 'manual', rateLimit: 0, fleet: FREEZE_FLEET });
  ({ imdsUrl } = await emulator.listen(LISTEN));
});
after(() => emulator.close());

const lines = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean);

describe('forewarn record', () => {
  it("writes the seeds' Freeze example: a header, then each document once, with its time", async () => {
    const path = output();
    const request = parseRecordArgs({ endpoint: `${imdsUrl}/vms/WestNO_0`, output: path, interval: '0.2', events: '1' });
    const io = captureIo();
    emulator.engine.reset();
    const done = runRecord(request, io, { signal: new AbortController().signal });
    await waitFor('the header', () => (lines(path).length >= 2 ? true : undefined), 10_000, 20);
    const id = await playFreeze(emulator, () => lines(path).length - 1);
    const summary = await done;
    assert.deepEqual(summary, { changes: 4, events: 1 });
    const recording = parseRecording(readFileSync(path, 'utf8'), path);
    assert.equal(recording.header.source, 'poll');
    assert.equal(recording.header.vm?.name, 'WestNO_0', 'who was recorded, from /metadata/instance');
    assert.match(recording.header.vm?.resourceId ?? '', /virtualMachines\/WestNO_0$/);
    const docs = recording.changes.map((c) => c.document);
    const incarnations = docs.map((d) => d.DocumentIncarnation);
    assert.deepEqual(
      incarnations.map((n) => n - incarnations[0]!),
      [0, 1, 2, 3],
      'one line per change',
    );
    assert.deepEqual(
      docs.map((d) => d.Events.map((e) => `${e.EventId} ${String(e.EventStatus)}`)),
      [[], [`${id} Scheduled`], [`${id} Started`], []],
    );
    assert.deepEqual(docs[1]!.Events[0]!.Resources, ['WestNO_0', 'WestNO_1']);
    const ats = recording.changes.map((c) => c.at);
    assert.deepEqual(
      [...ats].sort((a, b) => a - b),
      ats,
      'in time order',
    );
    assert.match(io.err, /4 changes of 1 event written to /);
    // Where it records, at once, and each change as it is written: nothing is silent until the end.
    const said = io.err.split('\n');
    assert.match(said[0]!, new RegExp(`^forewarn record: recording ${imdsUrl}/vms/WestNO_0 to .+; Ctrl-C to stop$`));
    const progress = said.filter((l) => /^forewarn record: change \d+ at \+\d+(\.\d)?s: incarnation \d+, /.test(l));
    assert.equal(progress.length, 4, io.err);
    assert.match(progress[1]!, new RegExp(`1 event: ${id} Freeze Scheduled`));
    assert.match(progress[3]!, /no events/);
  });

  it('--quiet prints only problems and the summary', async () => {
    const path = output();
    const request = parseRecordArgs({ endpoint: `${imdsUrl}/vms/WestNO_0`, output: path, interval: '0.2', events: '1', quiet: true });
    const io = captureIo();
    emulator.engine.reset();
    const done = runRecord(request, io, { signal: new AbortController().signal });
    await waitFor('the header', () => (lines(path).length >= 2 ? true : undefined), 10_000, 20);
    await playFreeze(emulator, () => lines(path).length - 1);
    await done;
    assert.deepEqual(io.err.split('\n').filter(Boolean).length, 1, io.err);
    assert.match(io.err, /^forewarn record: 4 changes of 1 event written to /);
  });

  it('anonymises as it records: no VM name, EventId or description of the original', async () => {
    const path = output();
    const request = parseRecordArgs({ endpoint: `${imdsUrl}/vms/WestNO_1`, output: path, interval: '0.2', events: '1', anonymise: true });
    emulator.engine.reset();
    const done = runRecord(request, captureIo(), { signal: new AbortController().signal });
    await waitFor('the header', () => (lines(path).length >= 2 ? true : undefined), 10_000, 20);
    const id = await playFreeze(emulator, () => lines(path).length - 1);
    await done;
    const text = readFileSync(path, 'utf8');
    for (const secret of ['WestNO', id, id.toLowerCase(), 'memory-preserving', imdsUrl, 'resourceGroups']) {
      assert.ok(!text.includes(secret), `${secret} is not in the file`);
    }
    const recording = parseRecording(text, path);
    assert.equal(recording.header.anonymised, true);
    // The recorded VM is named first (the header), then the others as they appear.
    assert.equal(recording.header.vm?.name, 'vm-1');
    assert.deepEqual(recording.changes[1]!.document.Events[0]!.Resources, ['vm-2', 'vm-1']);
    assert.equal(
      recording.changes[1]!.document.Events[0]!.EventId,
      recording.changes[2]!.document.Events[0]!.EventId,
      'one alias per event',
    );
  });

  it('stops after --duration, and refuses to overwrite a file or poll faster than IMDS allows', async () => {
    const path = output();
    const io = captureIo();
    const started = Date.now();
    assert.equal(
      await run(['record', '--endpoint', `${imdsUrl}/vms/WestNO_0`, '--output', path, '--duration', '1s', '--interval', '0.2'], io),
      0,
      io.err,
    );
    assert.ok(Date.now() - started < 3_000);
    assert.equal(parseRecording(readFileSync(path, 'utf8'), path).changes.length, 1);
    const again = captureIo();
    assert.equal(await run(['record', '--endpoint', imdsUrl, '--output', path, '--duration', '1s'], again), 2);
    assert.match(again.err, /already exists; name a new file/);
    const fast = captureIo();
    assert.equal(await run(['record', '--output', output(), '--interval', '0.05'], fast), 2);
    assert.match(fast.err, /--interval must be at least 0.2 seconds/);
  });

  it('converts `forewarn watch --json` output into the documents it saw', async () => {
    emulator.engine.reset();
    const client = new ScheduledEventsClient({ endpoint: `${imdsUrl}/vms/WestNO_0` });
    const watchLines: string[] = [];
    const stop = new AbortController();
    const watching = (async () => {
      for await (const item of client.watch({ signal: stop.signal, intervalMs: 100 })) {
        if (item.type !== 'changes') continue;
        for (const c of item.changes)
          watchLines.push(JSON.stringify({ time: new Date().toISOString(), kind: c.kind, incarnation: c.incarnation, event: c.event.raw }));
      }
    })().catch(() => undefined);
    const id = await playFreeze(emulator, () => watchLines.length + 1);
    await waitFor('the watch to see it end', () => (watchLines.length >= 3 ? true : undefined), 10_000, 20);
    stop.abort();
    await watching;
    const log = join(dir, 'watch.jsonl');
    writeFileSync(
      log,
      `${watchLines.join('\n')}\n${JSON.stringify({ time: new Date().toISOString(), error: 'timeout', msSinceSuccess: 1 })}\n`,
    );
    const path = output();
    const io = captureIo();
    assert.equal(await run(['record', '--from-watch', log, '--output', path], io), 0, io.err);
    const recording = parseRecording(readFileSync(path, 'utf8'), path);
    assert.equal(recording.header.source, 'watch-json');
    assert.deepEqual(
      recording.changes.map((c) => c.document.Events.map((e) => `${e.EventId} ${String(e.EventStatus)}`)),
      [[`${id} Scheduled`], [`${id} Started`], []],
    );
  });
});

describe('recording files', () => {
  const sample = (): Recording => ({
    header: {
      format: 'forewarn-recording',
      version: 1,
      apiVersion: '2020-07-01',
      startedAt: '2026-01-05T10:00:00.000Z',
      source: 'poll',
      endpoint: 'http://169.254.169.254',
      vm: { name: 'web-0', vmId: 'x', resourceId: '/subscriptions/s/x', location: 'westeurope' },
      anonymised: false,
    },
    changes: [
      { at: 0, document: { DocumentIncarnation: 1, Events: [] } },
      {
        at: 1500,
        document: {
          DocumentIncarnation: 2,
          Events: [{ EventId: 'A', EventType: 'Reboot', Resources: ['web-0', 'web-1'], Description: 'secret' }],
        },
      },
    ],
  });

  it('reads back what it writes, and drops a last line cut short by a kill', () => {
    const text = serializeRecording(sample());
    assert.deepEqual(parseRecording(text, 'r.jsonl'), sample());
    assert.deepEqual(parseRecording(`${text}{"at":20`, 'r.jsonl').changes.length, 2);
  });

  it('names the line and the problem', () => {
    const text = serializeRecording(sample());
    const bad = (t: string, pattern: RegExp) =>
      assert.throws(
        () => parseRecording(t, 'r.jsonl'),
        (e) => e instanceof RecordingError && pattern.test(e.message),
      );
    bad('', /^r\.jsonl:1: empty/);
    bad('{"format":"other"}\n', /^r\.jsonl:1: not a forewarn recording/);
    bad(`${text}{"at":-1,"document":{"DocumentIncarnation":3,"Events":[]}}\n`, /^r\.jsonl:4: at: expected milliseconds/);
    bad(`${text}{"at":10,"document":{"DocumentIncarnation":3,"Events":[]}}\n`, /^r\.jsonl:4: at 10 is earlier than 1500/);
    bad(`${text}nonsense\n{"at":2000,"document":{"DocumentIncarnation":3,"Events":[]}}\n`, /^r\.jsonl:4: not valid JSON/);
  });

  it('anonymises consistently, leaving times, types and incarnations', () => {
    const out = anonymise(sample());
    const text = serializeRecording(out);
    for (const secret of ['web-0', 'web-1', '"A"', 'secret', '169.254', '/subscriptions/']) assert.ok(!text.includes(secret), secret);
    assert.equal(out.header.vm?.name, 'vm-1');
    assert.deepEqual(out.changes[1]!.document.Events[0]!.Resources, ['vm-1', 'vm-2']);
    assert.equal(out.changes[1]!.at, 1500);
    assert.equal(out.changes[1]!.document.Events[0]!.EventType, 'Reboot');
  });
});
