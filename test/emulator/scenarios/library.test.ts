// Every built-in scenario's expectations hold on the manual clock, in realistic and in dev timing.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { ScenarioReport } from '../../../src/emulator/scenarios/format.js';
import { SCENARIOS_DIR, builtinScenarios, loadBuiltinScenario } from '../../../src/emulator/scenarios/library.js';
import { runScenario } from '../../../src/emulator/scenarios/runner.js';

const failures = (r: ScenarioReport) =>
  r.steps
    .filter((s) => !s.ok)
    .map((s) => `steps[${s.index}] at ${s.at} (line ${s.line}) ${s.summary}: ${s.message}`)
    .join('\n');

const all = builtinScenarios();

describe('the built-in library', () => {
  test('holds the 14 scenarios of the issue, each named after its file, with a one-line description', () => {
    const files = readdirSync(SCENARIOS_DIR)
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    assert.equal(files.length, 14);
    assert.deepEqual(
      all.map((s) => `${s.name}.yaml`),
      files,
    );
    for (const s of all) {
      assert.equal(basename(s.file), `${s.name}.yaml`);
      assert.ok(s.description.length > 20 && !s.description.includes('\n'), `${s.name} needs a one-line description`);
      assert.ok(
        s.steps.some((step) => step.action.kind === 'expect'),
        `${s.name} expects nothing`,
      );
    }
    assert.deepEqual(
      all.map((s) => s.name),
      [
        'cancelled-maintenance',
        'degraded-hardware',
        'hardware-failure',
        'host-agent-maintenance',
        'live-migration',
        'platform-redeploy-after-failure',
        'reimage',
        'rolling-host-update',
        'scale-in-terminate',
        'shared-host-never-approves',
        'spot-eviction',
        'two-events-one-document',
        'user-reboot',
        'user-redeploy',
      ],
    );
  });

  test('is shipped with the package', () => {
    const pkg = JSON.parse(readFileSync(join(SCENARIOS_DIR, '..', 'package.json'), 'utf8')) as { files: string[] };
    assert.ok(pkg.files.includes('scenarios'));
  });

  test('a name that is not a built-in, or looks like a path, finds nothing', () => {
    assert.equal(loadBuiltinScenario('no-such-scenario'), undefined);
    assert.equal(loadBuiltinScenario('../package'), undefined);
    assert.equal(loadBuiltinScenario('live-migration')?.name, 'live-migration');
  });

  for (const scenario of all) {
    for (const [label, factor] of [
      ['realistic', 1],
      ['dev', 60],
    ] as const) {
      test(`${scenario.name} passes in ${label} timing`, async () => {
        const report = await runScenario(scenario, { clock: 'manual', timingFactor: factor });
        assert.ok(report.passed, failures(report));
        assert.equal(report.steps.length, scenario.steps.length);
        assert.equal(report.timing, factor);
        assert.equal(report.aborted, false);
      });
    }
  }
});

describe('what the built-ins promise', () => {
  const expected = (name: string) =>
    loadBuiltinScenario(name)!.steps.flatMap((s) => (s.action.kind === 'expect' ? (s.action.events ?? []) : []));

  test('live migration is a Freeze of 5 s and host agent maintenance one of 9 s', () => {
    assert.ok(expected('live-migration').some((e) => e.type === 'Freeze' && e.durationInSeconds === 5));
    assert.ok(expected('host-agent-maintenance').some((e) => e.type === 'Freeze' && e.durationInSeconds === 9));
  });

  test('a hardware failure arrives Started; degraded hardware is announced 7 days ahead; Spot gets 30 s', () => {
    const failure = expected('hardware-failure')[0]!;
    assert.equal(failure.status, 'Started');
    assert.equal(failure.notBefore, 'started');
    assert.deepEqual(expected('degraded-hardware')[0]!.notBefore, { relative: true, seconds: 7 * 86_400 });
    assert.deepEqual(expected('spot-eviction')[0]!.notBefore, { relative: true, seconds: 30 });
  });

  test('the rolling update never shows two fault domains at once, and scale-in ends with the VM gone', () => {
    const rolling = loadBuiltinScenario('rolling-host-update')!;
    for (const step of rolling.steps) if (step.action.kind === 'expect') assert.ok((step.action.events ?? []).length <= 1);
    assert.deepEqual(
      expected('rolling-host-update')
        .filter((e) => e.status === 'Scheduled')
        .map((e) => e.ref?.text),
      ['rollout#0', 'rollout#1', 'rollout#2'],
    );
    const scaleIn = loadBuiltinScenario('scale-in-terminate')!;
    assert.ok(scaleIn.steps.some((s) => s.action.kind === 'expect' && s.action.gone));
  });

  test('a cancelled event never Starts, and the shared host waits for the customer who never approves', () => {
    assert.ok(expected('cancelled-maintenance').every((e) => e.status !== 'Started'));
    const shared = loadBuiltinScenario('shared-host-never-approves')!;
    const approvals = shared.steps.filter((s) => s.action.kind === 'approve' && s.action.expectStatus === 200);
    assert.deepEqual(
      approvals.map((s) => (s.action.kind === 'approve' ? s.action.vm : '')),
      ['contoso0'],
    );
  });
});
