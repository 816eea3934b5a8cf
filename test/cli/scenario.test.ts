// `forewarn scenario list | validate | run`: output and exit codes.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { run } from '../../src/cli/program.js';
import { Emulator } from '../../src/emulator/emulator.js';
import { captureIo, runCli } from '../support/cli.js';
import { startingWith } from '../support/scenarios.js';
import { tempDir } from '../support/temp.js';

const dir = tempDir('scenario-cli');

async function cli(args: string[]) {
  const io = captureIo();
  const code = await run(args, io);
  return { code, out: io.out, err: io.err };
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const GOOD = file(
  'good.yaml',
  `name: quick-freeze
description: A freeze the VM approves at once.
${startingWith('freeze', 'm')}  - at: 0
    expect: { vm: vm0, events: [{ ref: m, status: Scheduled, notBefore: "+15m" }] }
  - at: 1m
    approve: { vm: vm0, events: [m] }
  - at: 1m
    expect: { vm: vm0, incarnation: changed, events: [{ ref: m, status: Started }] }
  - at: 25m
    expect: { vm: vm0, incarnation: changed, events: [] }
`,
);
const FAILING = file(
  'failing.yaml',
  `name: wrong
${startingWith('restart', 'r')}  - at: 15m
    expect: { vm: vm0, events: [{ ref: r, status: Scheduled }] }
`,
);
const BAD = file('bad.yaml', 'name: bad\nfleet:\n  vms: [{ name: vm0 }]\nsteps:\n  - at: 0\n    reboot: vm0\n');

describe('forewarn scenario list and validate', () => {
  it('lists the 14 built-ins with a one-line description each', async () => {
    const { code, out } = await cli(['scenario', 'list']);
    assert.equal(code, 0);
    const lines = out.trim().split('\n');
    assert.equal(lines.length, 14);
    assert.match(out, /^live-migration +A platform live migration pauses the VM for 5 seconds/m);
    const json = await cli(['scenario', 'list', '--json']);
    assert.equal((JSON.parse(json.out) as unknown[]).length, 14);
  });

  it('validate: 0 and "valid" for a good file, 2 and file:line:col for a bad one', async () => {
    const good = await cli(['scenario', 'validate', GOOD]);
    assert.equal(good.code, 0);
    assert.match(good.out, /good\.yaml: valid \(scenario quick-freeze, 5 steps, 1 VMs\)/);
    const bad = await cli(['scenario', 'validate', BAD]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /^forewarn: .*bad\.yaml:6:5: steps\[0\]\.reboot: unknown action "reboot"/);
    const missing = await cli(['scenario', 'validate', join(dir, 'nope.yaml')]);
    assert.equal(missing.code, 2);
    assert.match(missing.err, /nope\.yaml: cannot read the scenario: no such file/);
  });
});

describe('forewarn scenario validate: every problem', () => {
  it('lists each problem at its file:line:col, the embedded fleet’s included, not only the first', async () => {
    const many = file(
      'many.yaml',
      'name: many\nfleet:\n  vms: [{ name: vm0, colour: red }, { name: 7 }]\nsteps:\n  - at: 0\n    reboot: vm0\n  - at: 1m\n    explode: vm0\n',
    );
    const fleetBad = await cli(['scenario', 'validate', many]);
    assert.equal(fleetBad.code, 2);
    assert.doesNotMatch(fleetBad.err, /more problem/);
    assert.match(fleetBad.err, /many\.yaml:3:22: fleet\.vms\[0\]\.colour: unknown key "colour"/);
    assert.match(fleetBad.err, /many\.yaml:3:45: fleet\.vms\[1\]\.name: /);
    const steps = file(
      'steps.yaml',
      'name: steps\nfleet:\n  vms: [{ name: vm0 }]\nsteps:\n  - at: 0\n    reboot: vm0\n  - at: 1m\n    explode: vm0\n',
    );
    const stepsBad = await cli(['scenario', 'validate', steps]);
    assert.equal(stepsBad.code, 2);
    assert.match(stepsBad.err, /steps\.yaml:6:5: steps\[0\]\.reboot: unknown action "reboot"/);
    assert.match(stepsBad.err, /steps\.yaml:8:5: steps\[1\]\.explode: unknown action "explode"/);
  });
});

describe('forewarn scenario run', () => {
  it('runs a built-in instantly on the manual clock and exits 0', async () => {
    const { code, out } = await cli(['scenario', 'run', 'shared-host-never-approves', '--timing', 'dev']);
    assert.equal(code, 0, out);
    assert.match(out, /^timing x60 \(dev\), manual clock$/m);
    assert.match(out, /^ {2}ok {4}15m +expect contoso0: update\.contoso Started, incarnation changed$/m);
    assert.match(out, /^passed: all 11 steps$/m);
  });

  it('exits 1 when an expectation fails, printing which, with expected vs actual', async () => {
    const { code, out, err } = await cli(['scenario', 'run', FAILING]);
    assert.equal(code, 1);
    assert.match(out, /^ {2}FAIL {2}15m +expect vm0: r Scheduled$/m);
    assert.match(out, /vm0: event 1 \(r\): status expected "Scheduled", got "Started"/);
    assert.match(out, /^FAILED: 1 of 2 steps failed$/m);
    assert.match(err, /scenario wrong failed/);
  });

  it('--json prints the report alone', async () => {
    const { code, out } = await cli(['scenario', 'run', GOOD, '--json']);
    assert.equal(code, 0);
    const report = JSON.parse(out) as { name: string; passed: boolean; steps: unknown[] };
    assert.deepEqual([report.name, report.passed, report.steps.length], ['quick-freeze', true, 5]);
  });

  it('exits 2 for a bad file, an unknown name or bad flags', async () => {
    for (const args of [
      ['scenario', 'run', BAD],
      ['scenario', 'run', 'meteor-strike'],
      ['scenario', 'run', join(dir, 'nope.yaml')],
      ['scenario', 'run', 'live-migration', '--timing', 'fast'],
      ['scenario', 'run', 'live-migration', '--clock', 'sundial'],
      ['scenario', 'run', 'live-migration', '--imds', '127.0.0.1:0'],
      ['scenario', 'run', 'live-migration', '--control', 'not a url'],
      ['scenario', 'run', 'live-migration', '--control', 'http://127.0.0.1:1', '--clock', 'manual'],
    ]) {
      const { code, err } = await cli(args);
      assert.equal(code, 2, `${args.join(' ')}: ${err}`);
      assert.doesNotMatch(err, /^\s+at /m);
    }
    assert.match((await cli(['scenario', 'run', 'meteor-strike'])).err, /neither a built-in scenario nor a file/);
  });

  it('on the system clock, serves the story on IMDS while it unfolds', async () => {
    const io = captureIo();
    const done = run(['scenario', 'run', GOOD, '--clock', 'system', '--timing', '600', '--imds', '127.0.0.1:0'], io);
    let url: string | undefined;
    for (let i = 0; i < 100 && !url; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      url = /IMDS at (http:\/\/\S+)/.exec(io.out)?.[1];
    }
    assert.ok(url, io.out);
    let seen: { Events?: { EventType: string }[] } | undefined;
    // Polled within IMDS's rate limit of 5 a second.
    for (let i = 0; i < 20 && !seen?.Events?.length; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      const res = await fetch(`${url}/metadata/scheduledevents?api-version=2020-07-01`, { headers: { Metadata: 'true' } });
      seen = (await res.json()) as typeof seen;
    }
    assert.equal(seen?.Events?.[0]?.EventType, 'Freeze', JSON.stringify(seen));
    assert.equal(await done, 0, io.out + io.err);
    assert.match(io.out, /passed: all 5 steps/);
  });

  it('with --control, runs on that emulator: at once on its manual clock, polled on its system clock', async () => {
    const manual = await Emulator.create({ clock: 'manual', logger: false });
    const system = await Emulator.create({ clock: 'system', timingFactor: 600, logger: false });
    try {
      const m = await manual.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
      const s = await system.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
      const first = await cli(['scenario', 'run', 'user-reboot', '--control', m.controlUrl]);
      assert.equal(first.code, 0, first.out + first.err);
      assert.match(first.out, /the manual clock of http/);
      assert.deepEqual([...manual.engine.fleet.vms.keys()], ['vm0']);
      const second = await cli(['scenario', 'run', GOOD, '--control', s.controlUrl, '--timing', '600']);
      assert.equal(second.code, 0, second.out + second.err);
      assert.match(second.out, /timing x600, the system clock of/);
      assert.match(second.out, /passed: all 5 steps/);
      const refused = await cli(['scenario', 'run', 'user-reboot', '--control', s.controlUrl, '--timing', 'dev']);
      assert.equal(refused.code, 2);
      assert.match(refused.err, /409 this emulator runs at timing x600, not x60/);
    } finally {
      await Promise.all([manual.close(), system.close()]);
    }
  });
});

describe('forewarn scenario, as a process', () => {
  it('runs a built-in in dev timing with exit 0, and refuses a bad file with exit 2', async () => {
    const ok = await runCli(['scenario', 'run', 'live-migration', '--timing', 'dev']);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    // live-migration checks the Freeze still listed as Started after its impact, then removed at 10 minutes.
    assert.match(ok.stdout, /passed: all 7 steps/);
    const bad = await runCli(['scenario', 'validate', BAD]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /bad\.yaml:6:5: steps\[0\]\.reboot: unknown action/);
  });
});
