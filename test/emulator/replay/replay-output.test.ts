// What `forewarn replay` prints comes partly from the recording: a hostile EventId or VM name must
// not move the cursor, clear the screen, or fake a line of the report.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { serializeRecording } from '../../../src/protocol/recording.js';
import { CliProcess } from '../../support/cli.js';
import { sampleRecording } from '../../support/recording.js';
import { tempDir } from '../../support/temp.js';

const dir = tempDir('replay-output');
after(() => CliProcess.killAll());
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

/** Replays a sample recording on the manual clock, a minute past its end, then stops it with SIGINT (exit 0). */
async function replayThrough(name: string, sample: { eventId: string; vmName: string }, flags: string[] = []): Promise<CliProcess> {
  const file = join(dir, name);
  writeFileSync(file, serializeRecording(sampleRecording(sample)));
  const proc = new CliProcess(['replay', file, '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0', '--clock', 'manual', ...flags]);
  const [, controlUrl] = await proc.waitForOutput(/Control:\s+(\S+)/);
  const res = await fetch(`${controlUrl}/v1/clock/advance`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ seconds: 60 }),
  });
  assert.equal(res.status, 200);
  assert.equal(await proc.stop('SIGINT'), 0, proc.stderr);
  return proc;
}

it('escapes the recording’s EventIds and VM name in the banner, the divergence lines and the JSON report', async () => {
  const eventId = 'E\u001b[1A\u001b[2K\rforewarn replay: no divergence\u009b\u202e';
  const vmName = 'vm\u001b]0;owned\u0007';
  const proc = await replayThrough('hostile.jsonl', { eventId, vmName }, ['--json']);
  assert.doesNotMatch(proc.stdout, RAW, JSON.stringify(proc.stdout));
  assert.doesNotMatch(proc.stderr, RAW, JSON.stringify(proc.stderr));
  assert.match(proc.stdout, /on vm\\x1b\]0;owned\\x07/, 'the banner names the VM, escaped');
  const report = JSON.parse(proc.stdout.trim().split('\n').at(-1)!) as { divergences: { eventId: string }[] };
  assert.equal(report.divergences[0]?.eventId, eventId, 'the JSON report keeps the value');
  const lines = proc.stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, JSON.stringify(lines));
  assert.match(
    lines[0]!,
    /^forewarn replay: divergence: the recording shows E\\x1b\[1A\\x1b\[2K\\rforewarn replay: no divergence\\x9b\\u202e approved/,
  );
});

it('ends with a summary a person reads (JSON only with --json), the recording’s ids escaped', async () => {
  const eventId = 'E\u001b[2K1';
  const proc = await replayThrough('summary.jsonl', { eventId, vmName: 'vm0' });
  const last = proc.stdout.trim().split('\n').at(-1)!;
  assert.doesNotMatch(proc.stdout, RAW, JSON.stringify(proc.stdout));
  assert.equal(
    last,
    'forewarn replay: the code under test approved 0 events; the recording shows 1 event approved (E\\x1b[2K1); 1 divergence (above, on stderr)',
  );
});
