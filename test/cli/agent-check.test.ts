// `forewarn agent --check --config FILE` finds now what the agent would find at its first event:
// against a running emulator it says what works and what each event type would do (exit 0); with
// a secret unset and IMDS out of reach it names both problems and exits 1.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { run } from '../../src/cli/program.js';
import { Emulator } from '../../src/emulator/emulator.js';
import { captureIo, closedPort } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

const dir = tempDir('agent-check');
let emulator: Emulator;
let imdsUrl: string;

before(async () => {
  emulator = await Emulator.create({ clock: 'manual', rateLimit: 0, fleet: [{ name: 'web-0' }] });
  ({ imdsUrl } = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } }));
});
after(() => emulator.close());

function config(endpoint: string): string {
  const path = join(dir, `agent-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(
    path,
    [
      `endpoint: ${endpoint}`,
      'rules:',
      '  - name: drain',
      '    match: { eventType: [Reboot, Redeploy] }',
      '    actions:',
      '      - { type: http, name: deregister, method: POST, url: "https://lb.example/members", headers: { Authorization: "Bearer ${env:LB_TOKEN}" } }',
      '    approval: after-actions',
      '  - name: freeze',
      '    match: { eventType: Freeze }',
      '    approval: immediately',
      '',
    ].join('\n'),
  );
  return path;
}

describe('forewarn agent --check', () => {
  it('against the emulator: each check ok, what each event type would do, exit 0', async () => {
    const io = captureIo({ LB_TOKEN: 'secret' });
    const code = await run(['agent', '--check', '--config', config(`${imdsUrl}/vms/web-0`)], io);
    assert.equal(code, 0, io.out + io.err);
    assert.match(io.out, new RegExp(`^ok +IMDS at ${imdsUrl}/vms/web-0 answers: incarnation \\d+`, 'm'));
    assert.match(io.out, /^ok +this VM is web-0 \(from IMDS\)$/m);
    assert.match(io.out, /^ +Reboot: rule 'drain': http deregister; approval after-actions$/m);
    assert.match(io.out, /^ +Freeze: rule 'freeze': no actions; approval immediately$/m);
    assert.match(io.out, /^ +Preempt: no rule matches: nothing is done, and it starts at NotBefore$/m);
    assert.match(io.out, /^no problems$/m);
    assert.doesNotMatch(io.out, /secret/, 'a secret is never printed');
  });

  it('a secret unset and IMDS out of reach: both named, exit 1', { timeout: 60_000 }, async () => {
    const io = captureIo({});
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const code = await run(['agent', '--check', '--config', config(endpoint)], io);
    assert.equal(code, 1, io.out + io.err);
    assert.match(
      io.out,
      /^problem +environment variable LB_TOKEN is not set \(needed by rule 'drain' action 'deregister' header Authorization\)$/m,
    );
    assert.match(io.out, new RegExp(`^problem +IMDS at ${endpoint}: `, 'm'));
    assert.match(io.out, /^3 problems$/m, 'the secret, IMDS and the VM name it could not learn');
    assert.match(io.err, /the check found 3 problems/);
  });
});
