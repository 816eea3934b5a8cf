// A recording is checked as it is loaded, in time linear in its size: what a replay could not
// serve (a line too long, nesting too deep, a time out of range) and what is not a file at all
// (/dev/zero, a FIFO) end `forewarn replay` with exit 2 and FILE:line, never a crash or a hang.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, describe, it } from 'node:test';
import { loadRecording } from '../../../src/cli/replay.js';
import { ReplayTimeline } from '../../../src/emulator/replay/timeline.js';
import { Replay, startReplay } from '../../../src/emulator/replay/server.js';
import { scenarioFromRecording } from '../../../src/emulator/scenarios/from-recording.js';
import { parseRecording, RecordingError, serializeRecording, type Recording } from '../../../src/protocol/recording.js';
import { assertNoStack, CliProcess } from '../../support/cli.js';
import { exitWithin, sampleRecording, startedEverywhere } from '../../support/recording.js';
import { tempDir } from '../../support/temp.js';

const dir = tempDir('replay-load');
after(() => CliProcess.killAll());
let n = 0;

function write(text: string): string {
  const file = join(dir, `rec-${++n}.jsonl`);
  writeFileSync(file, text);
  return file;
}

/** The sample recording's text with `edit` applied to its object first. */
function edited(edit: (r: Recording) => void): string {
  const recording = sampleRecording();
  edit(recording);
  return serializeRecording(recording);
}

const replayArgs = (file: string) => ['replay', file, '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0', '--clock', 'manual'];

/** `forewarn replay FILE` exits 2 at once, naming FILE:line and matching `problem`, with no stack trace. */
async function refused(file: string, line: number | null, problem: RegExp): Promise<void> {
  const { code, stderr } = await exitWithin(replayArgs(file));
  assert.equal(code, 2, `exit code; stderr: ${stderr.slice(0, 2000)}`);
  if (line !== null) assert.ok(stderr.includes(`${file}:${line}: `), `names ${file}:${line}: ${stderr.slice(0, 2000)}`);
  assert.match(stderr, problem);
  assertNoStack(stderr);
  assert.ok(stderr.length < 4000, `a short message, not ${stderr.length} characters`);
}

describe('forewarn replay: a recording it cannot serve is refused at load', () => {
  it('JSON nested 200,000 deep', async () => {
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const text = edited((r) => void (r.changes[1]!.document.Events[0]!.Extra = '@DEEP@')).replace('"@DEEP@"', deep);
    await refused(write(text), 3, /nest/);
  });

  it('brackets in strings do not count as nesting', () => {
    const text = edited((r) => void (r.changes[1]!.document.Events[0]!.Description = `${'[{'.repeat(5000)} "\\" ]`));
    assert.equal(parseRecording(text, 'r.jsonl').changes.length, 4);
  });

  it('a NotBefore in the year 275760', async () => {
    const file = write(edited((r) => void (r.changes[1]!.document.Events[0]!.NotBefore = 'Sat, 13 Sep 275760 00:00:00 GMT')));
    await refused(file, 3, /document\.Events\[0\]\.NotBefore: .*year/);
  });

  it('a NotBefore a Date cannot represent, and one before 1970', async () => {
    await refused(
      write(edited((r) => void (r.changes[1]!.document.Events[0]!.NotBefore = 'Sat, 13 Sep 300000 00:00:00 GMT'))),
      3,
      /NotBefore/,
    );
    await refused(
      write(edited((r) => void (r.changes[1]!.document.Events[0]!.NotBefore = 'Wed, 31 Dec 1969 23:59:59 GMT'))),
      3,
      /NotBefore/,
    );
  });

  it('a start time or a line time out of range', async () => {
    await refused(write(edited((r) => void (r.header.startedAt = '+275760-09-13T00:00:00.000Z'))), 1, /startedAt/);
    await refused(write(edited((r) => void (r.header.startedAt = '1969-12-31T23:59:59.000Z'))), 1, /startedAt/);
    await refused(write(edited((r) => void (r.changes[3]!.at = 8.64e15))), 5, /^forewarn: .*:5: at: /m);
  });

  it('a line longer than a document may be', async () => {
    await refused(
      write(edited((r) => void (r.changes[1]!.document.Events[0]!.Description = 'x'.repeat(5 * 1024 * 1024)))),
      3,
      /longer than/,
    );
  });

  it('/dev/zero, at once and without exhausting memory', async () => {
    const started = performance.now();
    await refused('/dev/zero', null, /\/dev\/zero.* not a regular file/);
    assert.ok(performance.now() - started < 10_000);
  });

  it('a FIFO, without waiting for a writer', async () => {
    const fifo = join(dir, 'fifo.jsonl');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
    await refused(fifo, null, /fifo\.jsonl.* not a regular file/);
  });

  it('a directory', async () => {
    await refused(dir, null, /not a regular file/);
  });

  it('keeps refusing a torn line in the middle with its place, and drops a torn last line', () => {
    const text = serializeRecording(sampleRecording());
    assert.equal(parseRecording(`${text}{"at":20`, 'r.jsonl').changes.length, 4);
    const file = write(`${text}{"at":20`);
    assert.equal(loadRecording(file).changes.length, 4, 'from a file too');
    assert.throws(
      () => loadRecording(write(`${text}{"at":20\n{"at":30000,"document":{"DocumentIncarnation":9,"Events":[]}}\n`)),
      (e: Error) => new RegExp(`rec-${n}\\.jsonl:6: not valid JSON`).test(e.message),
    );
  });

  it('the library refuses the same, with a RecordingError', () => {
    const text = edited((r) => void (r.changes[1]!.document.Events[0]!.NotBefore = 'Sat, 13 Sep 275760 00:00:00 GMT'));
    assert.throws(
      () => parseRecording(text, 'r.jsonl'),
      (e) => e instanceof RecordingError && e.line === 3 && /NotBefore/.test(e.message),
    );
  });
});

describe('forewarn replay: loading is linear in the recording', () => {
  /** Everything a load does with a recording: read, the replay's timeline, and a scenario from it. */
  function load(recording: Recording): void {
    new ReplayTimeline(recording);
    scenarioFromRecording(recording, 'x');
  }

  it('loads 20,000 changes quickly, from the file through to serving', async () => {
    const file = write(serializeRecording(startedEverywhere(20_000)));
    const started = performance.now();
    const recording = loadRecording(file);
    const replay = new Replay(recording, { clock: 'manual' });
    scenarioFromRecording(recording, 'big');
    const ms = performance.now() - started;
    assert.equal(recording.changes.length, 20_000);
    assert.equal(replay.status().changes, 20_000);
    // Linear work takes well under a second here; the quadratic kind took 8 s and more.
    assert.ok(ms < 4_000, `${Math.round(ms)} ms`);
  });

  it('reads each document a fixed number of times, however many changes there are', () => {
    // Counting reads, not timing them: deterministic on a noisy machine. A quadratic check reads
    // about changes² / 2 documents (50 million here).
    for (const changes of [2_500, 10_000]) {
      let reads = 0;
      const recording = startedEverywhere(changes);
      recording.changes = recording.changes.map(({ at, document }) =>
        Object.defineProperty({ at }, 'document', { get: () => (reads++, document), enumerable: true }),
      ) as Recording['changes'];
      load(recording);
      assert.ok(reads <= 10 * changes, `${reads} document reads for ${changes} changes`);
    }
  });
});

describe('startReplay: a recording handed over as an object is checked as a file is', () => {
  it('refuses a NotBefore in the year 275760 and nesting too deep, naming options.recording:LINE', async () => {
    const late = sampleRecording();
    late.changes[1]!.document.Events[0]!.NotBefore = 'Sat, 13 Sep 275760 00:00:00 GMT';
    await assert.rejects(startReplay({ recording: late, clock: 'manual' }), (err: unknown) => {
      assert.ok(err instanceof RecordingError, String(err));
      assert.match(err.message, /^options\.recording:3: .*NotBefore/);
      return true;
    });
    const deep = sampleRecording();
    let nested: unknown[] = [];
    for (let i = 0; i < 100; i++) nested = [nested];
    deep.changes[0]!.document.Events.push({ EventId: 'x', Extra: nested });
    await assert.rejects(startReplay({ recording: deep, clock: 'manual' }), /options\.recording:2: .*nest/);
  });
});
