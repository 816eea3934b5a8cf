// The durable file layer on a real, small tmpfs that runs out of space: the kernel itself writes
// short and answers ENOSPC, while a reader on another thread samples the file as another process
// would. Needs root (CI runs as root with FOREWARN_REQUIRE_TMPFS=1, which turns a skip into a failure).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { Journal } from '../../src/agent/journal.js';
import type { ScheduledEvent } from '../../src/client/index.js';
import { DurableAppender, nodeFileOps, writeFileAtomicSync, type FileOps } from '../../src/shared/atomic-file.js';
import { tmpfsMounts } from '../support/tmpfs.js';
import { jsonOfSize } from '../shared/atomic-file-scenarios.js';
import { leaveFree, startSampler, tempFilesOf } from '../shared/disk-pressure.js';
import { withFaults } from '../shared/fault-ops.js';

/** Enough concurrent reads to have met any torn file, and a bound on how long the writer keeps trying. */
const MIN_READS = 300;
const MAX_WRITING_MS = 3_000;

const mount = tmpfsMounts();

/** Real file calls, counting the writes the kernel cut short. */
function watchedOps(): { ops: FileOps; shortWrites: () => number } {
  let short = 0;
  const { ops } = withFaults(nodeFileOps, {
    writeSync: (_n, real, fd, buffer, offset, length, position) => {
      const written = real(fd, buffer, offset, length, position);
      if (written < length) short++;
      return written;
    },
  });
  return { ops, shortWrites: () => short };
}

const codeOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code;

/** The file holds exactly `expected`; on a mismatch says how, without printing 200 KiB. */
function assertHolds(path: string, expected: string, what: string): void {
  const actual = readFileSync(path, 'utf8');
  if (actual === expected) return;
  let json = 'valid';
  try {
    JSON.parse(actual);
  } catch {
    json = 'invalid';
  }
  assert.fail(`${what}: the file holds ${actual.length} bytes (${json} JSON as a whole), expected ${expected.length}`);
}

describe('a full disk (real tmpfs)', () => {
  it('writeFileAtomicSync: every read is whole JSON, the writes fail with ENOSPC, no temp file is left, and space coming back heals it', async (t) => {
    const disk = await mount(t, 1024);
    if (!disk) return;
    const path = join(disk.dir, 'state.json');
    const { ops, shortWrites } = watchedOps();
    let good = jsonOfSize(1024, 0);
    writeFileAtomicSync(path, good, { ops });
    const sampler = await startSampler(path, 'json');
    t.after(() => sampler.stop());

    // A state file growing from 1 KiB to 200 KiB on a disk with 96 KiB free, then with none.
    const outcomes = { written: 0, enospc: 0 };
    const started = performance.now();
    let version = 0;
    for (const freeKiB of [96, 0]) {
      leaveFree(disk, freeKiB);
      let round = 0;
      while (round++ < 2 || (sampler.reads() < MIN_READS * (freeKiB === 0 ? 2 : 1) && performance.now() - started < MAX_WRITING_MS)) {
        for (let kib = 1; kib <= 200; kib += 13) {
          const text = jsonOfSize(kib * 1024, ++version);
          try {
            writeFileAtomicSync(path, text, { ops });
            good = text;
            outcomes.written++;
          } catch (err) {
            assert.equal(codeOf(err), 'ENOSPC', `a ${kib} KiB write failed with ${String(err)}`);
            outcomes.enospc++;
          }
          assertHolds(path, good, 'the last state written whole');
          assert.deepEqual(tempFilesOf(path), [], 'no temp file is left');
        }
      }
      if (freeKiB === 0) assert.ok(outcomes.enospc > 0);
    }
    const samples = await sampler.stop();
    t.diagnostic(`state: ${samples.invalid} invalid of ${samples.reads} reads; ${JSON.stringify(outcomes)}; ${shortWrites()} short writes`);

    assert.ok(outcomes.written > 0 && outcomes.enospc > 0, `some writes fit, some did not: ${JSON.stringify(outcomes)}`);
    assert.ok(shortWrites() > 0, 'the kernel cut at least one write short before ENOSPC: the case that truncated the file');
    assert.ok(samples.reads >= MIN_READS, `the reader sampled ${samples.reads} times`);
    assert.equal(samples.invalid, 0, `invalid reads: ${samples.invalid} of ${samples.reads}; first: ${samples.firstInvalid}`);

    disk.free();
    const healed = jsonOfSize(200 * 1024, version + 1);
    writeFileAtomicSync(path, healed);
    assertHolds(path, healed, 'the write after space returned');
    assert.deepEqual(tempFilesOf(path), []);
  });

  it('DurableAppender: failed appends are cut back, so the file holds only whole records; appends resume once space returns', async (t) => {
    const disk = await mount(t, 256);
    if (!disk) return;
    const path = join(disk.dir, 'events.jsonl');
    const { ops, shortWrites } = watchedOps();
    const appender = new DurableAppender(path, { ops });
    let expected = '';
    const sampler = await startSampler(path, 'jsonl');
    t.after(() => sampler.stop());

    // Records of 1–7 KiB until the disk is nearly full, then a completely full one.
    const outcomes = { appended: 0, enospc: 0 };
    const started = performance.now();
    for (let i = 0; i < 300 || (sampler.reads() < MIN_READS && performance.now() - started < MAX_WRITING_MS); i++) {
      if (i === 150) disk.fill();
      const record = `${JSON.stringify({ i, pad: 'r'.repeat(1024 * (1 + (i % 7))) })}\n`;
      try {
        appender.append(record);
        expected += record;
        outcomes.appended++;
      } catch (err) {
        assert.equal(codeOf(err), 'ENOSPC', `append ${i} failed with ${String(err)}`);
        outcomes.enospc++;
      }
      assertHolds(path, expected, `after append ${i}, exactly the whole records`);
      assert.equal(appender.size, Buffer.byteLength(expected));
    }
    const samples = await sampler.stop();
    t.diagnostic(`appender: ${samples.invalid} torn of ${samples.reads} reads; ${JSON.stringify(outcomes)}; ${shortWrites()} short writes`);
    assert.ok(outcomes.appended > 0 && outcomes.enospc > 0, JSON.stringify(outcomes));
    assert.ok(shortWrites() > 0, 'the kernel cut at least one append short before ENOSPC');
    assert.ok(samples.reads >= MIN_READS, `the reader sampled ${samples.reads} times`);
    assert.equal(samples.invalid, 0, `torn records: ${samples.invalid} of ${samples.reads}; first: ${samples.firstInvalid}`);

    disk.free();
    appender.append('{"after":"space returned"}\n');
    appender.close();
    assertHolds(path, `${expected}{"after":"space returned"}\n`, 'the append after space returned');
  });

  it('the agent journal: changes on a full disk throw, every read is a valid journal, and a reopen finds the last state written', async (t) => {
    const disk = await mount(t, 512);
    if (!disk) return;
    const path = join(disk.dir, 'agent', 'journal.json');
    const journal = Journal.open(path);
    const event = (i: number): ScheduledEvent => ({
      id: `0000000${i % 10}-0000-4000-8000-${String(i).padStart(12, '0')}`,
      status: 'Scheduled',
      type: 'Reboot',
      resourceType: 'VirtualMachine',
      resources: Array.from({ length: 8 }, (_, r) => `web-${r}`),
      notBefore: new Date('2030-01-01T00:15:00Z'),
      description: 'Host server is undergoing maintenance.',
      source: 'Platform',
      durationInSeconds: -1,
      raw: {},
    });
    for (let i = 0; i < 60; i++) journal.ensure(event(i), 'reboot');
    const written = readFileSync(path, 'utf8');
    const lastGood = journal.entries();
    assert.ok(written.length > 32 * 1024, `a journal of some size (${written.length} bytes)`);

    const sampler = await startSampler(path, 'json');
    t.after(() => sampler.stop());
    // A journal of about 40 KiB on a disk with 16 KiB free (its rewrites come out short), then with none.
    let ensured = 0;
    const started = performance.now();
    for (const [phase, freeKiB] of [16, 0].entries()) {
      leaveFree(disk, freeKiB);
      for (
        let i = 0;
        i < 40 || (sampler.reads() < MIN_READS * (phase + 1) && performance.now() - started < MAX_WRITING_MS && i < 5_000);
        i++
      ) {
        const change =
          i % 2 === 0
            ? () => journal.ensure(event(10_000 * (phase + 1) + i), 'reboot')
            : () => journal.actionStarted(event(i % 60).id, `before:${i}`);
        assert.throws(change, (err: unknown) => codeOf(err) === 'ENOSPC', `change ${i} with ${freeKiB} KiB free`);
        if (i % 2 === 0) ensured++;
        assertHolds(path, written, 'the journal last written whole');
        assert.deepEqual(tempFilesOf(path), []);
      }
    }
    const samples = await sampler.stop();
    t.diagnostic(`journal: ${samples.invalid} invalid of ${samples.reads} reads; ${ensured} events added while full`);
    assert.ok(samples.reads >= MIN_READS, `the reader sampled ${samples.reads} times`);
    assert.equal(samples.invalid, 0, `invalid reads: ${samples.invalid} of ${samples.reads}; first: ${samples.firstInvalid}`);

    const reopened = Journal.open(path);
    assert.equal(reopened.corruptedTo, null);
    assert.deepEqual(reopened.entries(), lastGood);

    disk.free();
    journal.flush();
    assert.equal(Journal.open(path).entries().length, 60 + ensured, 'the changes kept in memory go out with the next write');
  });
});
