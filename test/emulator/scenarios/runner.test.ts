// The runner: reports rather than throws, resolves references as the story unfolds, and keeps real time on the system clock.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { Timing } from '../../../src/emulator/engine/timing.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { parseScenario } from '../../../src/emulator/scenarios/load.js';
import { runScenario } from '../../../src/emulator/scenarios/runner.js';
import { startingWith } from '../../support/scenarios.js';

const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);
const parse = (text: string) => parseScenario(text, 'test.yaml');

const FREEZE = `name: freeze
${startingWith('freeze', 'm')}`;

describe('a failing expectation', () => {
  test('is a failed step naming expected and actual, not an exception; the run goes on', async () => {
    const report = await runScenario(
      parse(`${FREEZE}  - at: 0
    expect: { vm: vm0, incarnation: unchanged, events: [{ ref: m, type: Reboot, status: Started, notBefore: "+10m", resources: [vm1] }] }
  - at: 1m
    expect: { vm: vm0, events: [] }
  - at: 2m
    approve: { vm: vm0, events: [m] }
`),
    );
    assert.equal(report.passed, false);
    assert.deepEqual(
      report.steps.map((s) => s.ok),
      [true, false, false, true],
    );
    const first = report.steps[1]!;
    assert.equal(first.line, 8);
    assert.equal(first.at, '0s');
    assert.match(first.message!, /^vm0: incarnation expected unchanged, but it went from 1 to 2/);
    assert.match(first.message!, /event 1 \(m\): type expected "Reboot", got "Freeze"; status expected "Started", got "Scheduled"/);
    assert.match(first.message!, /resources expected \["vm1"\], got \["vm0"\]; notBefore expected "\+10m", got "\+15m"/);
    assert.deepEqual((first.expected as { events: unknown[] }).events, [
      { ref: 'm', type: 'Reboot', status: 'Started', resources: ['vm1'], notBefore: '+10m' },
    ]);
    const actual = first.actual as { incarnation: number; events: { event: string; status: string; notBefore: string }[] };
    assert.equal(actual.incarnation, 2);
    assert.deepEqual([actual.events[0]!.event, actual.events[0]!.status, actual.events[0]!.notBefore], ['m', 'Scheduled', '+15m']);
    assert.match(report.steps[2]!.message!, /vm0: expected no events, got 1: \[m Freeze Scheduled \[vm0\]\]/);
  });

  test('a wrong status from IMDS or the control API is a failed step too', async () => {
    const report = await runScenario(
      parse(`${FREEZE}  - at: 1m
    approve: { vm: vm0, events: [m], expectStatus: 400 }
  - at: 2m
    cancel: m
  - at: 12m
    complete: { event: m, expectStatus: 409 }
`),
    );
    assert.deepEqual(
      report.steps.map((s) => s.ok),
      [true, false, false, true],
    );
    assert.equal(report.steps[1]!.message, 'expected 400, got 200');
    // Started at 1 min, the event stays listed about 10 minutes: a cancel then is too late, and by 12 min it has ended.
    assert.match(report.steps[2]!.message!, /^expected 200, got 409: event .* has already Started/);
  });
});

describe('references', () => {
  test('to an event not created yet, or of a refused operation, fail their step with a reason', async () => {
    const report = await runScenario(
      parse(`name: refs
fleet:
  tenants: [{ name: web, kind: availabilitySet, faultDomainCount: 3 }]
  vms:
    - { name: web0, tenant: web, faultDomain: 0 }
    - { name: web1, tenant: web, faultDomain: 1 }
steps:
  - at: 0
    operation: { type: host-update, tenant: web }
    as: rollout
  - at: 0
    approve: { vm: web0, events: ["rollout#1"] }
  - at: 0
    operation: { type: spot-eviction, vms: [web0] }
    as: evict
  - at: 1m
    cancel: evict
  - at: 1m
    expect: { vm: web1, events: [{ ref: "rollout#0" }] }
  - at: 30m
    expect: { vm: web1, events: [{ ref: "rollout#1", resources: [web1] }] }
`),
    );
    assert.deepEqual(
      report.steps.map((s) => s.ok),
      [true, false, false, false, true, true],
    );
    assert.match(report.steps[1]!.message!, /rollout#1 has not been created yet: rollout has created 1 event so far/);
    assert.match(report.steps[2]!.message!, /refused \(400\): spot-eviction applies only to Spot VMs/);
    assert.match(report.steps[3]!.message!, /evict: the operation named evict was refused/);
  });

  test('NAME.TENANT picks a host job’s event for that tenant', async () => {
    const report = await runScenario(
      parse(`name: job
fleet:
  hosts: [{ name: h1, vms: [a0, b0] }]
  vms: [{ name: a0, tenant: a }, { name: b0, tenant: b }]
steps:
  - at: 0
    operation: { type: freeze, host: h1 }
    as: job
  - at: 0
    expect: { vm: b0, events: [{ ref: job.b, resources: [b0] }] }
  - at: 0
    expect: { vm: a0, events: [{ ref: job.b }] }
`),
    );
    assert.deepEqual(
      report.steps.map((s) => s.ok),
      [true, true, false],
    );
    assert.match(report.steps[2]!.message!, /event 1 \(job\.a\): expected job\.b \(.*\), got job\.a/);
  });
});

describe('running on a given engine', () => {
  test('replaces its fleet, keeps incarnations rising, and injects faults into its registry', async () => {
    const clock = new ManualClock(T0);
    const engine = new Engine({ clock, fleet: [{ name: 'vm0' }, { name: 'old' }] });
    engine.createOperation({ type: 'freeze', vms: ['vm0'] });
    const before = engine.incarnationOf('vm0');
    const faults = new FaultRegistry();
    const report = await runScenario(
      parse(`${FREEZE}  - at: 0
    fault: { vm: vm0, status: 410, count: 2 }
  - at: 0
    expect: { vm: vm0, incarnation: changed, events: [{ ref: m }] }
`),
      { engine, faults },
    );
    assert.ok(report.passed, JSON.stringify(report.steps));
    assert.deepEqual([...engine.fleet.vms.keys()], ['vm0']);
    assert.ok(engine.incarnationOf('vm0') > before);
    assert.equal(engine.events().length, 1);
    assert.deepEqual(
      faults.list().map((f) => [f.vm, f.status, f.remaining]),
      [['vm0', 410, 2]],
    );
    assert.match(report.steps[1]!.message!, /injected/);
    // The engine's own timing rules; asking for another is a programmer's mistake.
    await assert.rejects(runScenario(parse(FREEZE), { engine, timingFactor: 60 }), RangeError);
  });

  test('on its own, fault steps are recorded but say that nothing consumes them', async () => {
    const report = await runScenario(parse(`${FREEZE}  - at: 0\n    fault: { drop: true }\n`));
    assert.ok(report.passed);
    assert.match(report.steps[1]!.message!, /nothing consumes it/);
  });
});

describe('the system clock', () => {
  const scenario = parse(`${FREEZE}  - at: 0
    expect: { vm: vm0, events: [{ ref: m, status: Scheduled, notBefore: "+15m" }] }
  - at: 1m
    approve: { vm: vm0, events: [m] }
  - at: 1m
    expect: { vm: vm0, incarnation: changed, events: [{ ref: m, status: Started, notBefore: "" }] }
  - at: 25m
    expect: { vm: vm0, incarnation: changed, events: [] }
`);

  test('sleeps the scaled offsets in real time (factor 600: 25 minutes in 2.5 s)', async () => {
    const real = performance.now();
    const report = await runScenario(scenario, { clock: 'system', timingFactor: 600 });
    const elapsed = performance.now() - real;
    assert.ok(report.passed, JSON.stringify(report.steps, null, 2));
    assert.equal(report.clock, 'system');
    assert.ok(elapsed >= 2400 && elapsed < 6000, `took ${elapsed} ms`);
    const started = Date.parse(report.startedAt);
    const last = Date.parse(report.steps.at(-1)!.time);
    assert.ok(last - started >= 2500, `the last step ran ${last - started} ms after the start`);
  });

  test('stops between steps when aborted, and says so', async () => {
    const controller = new AbortController();
    const report = await runScenario(scenario, {
      clock: 'system',
      timingFactor: 600,
      signal: controller.signal,
      onStep: (step) => {
        if (step.index === 1) controller.abort();
      },
    });
    assert.equal(report.aborted, true);
    assert.equal(report.passed, false);
    assert.equal(report.steps.length, 2);
  });
});

describe('timing', () => {
  test('dev timing divides offsets and the engine’s notice alike, so one file serves both', async () => {
    const engine = new Engine({ clock: new ManualClock(T0), timing: new Timing(60), fleet: [] });
    const report = await runScenario(
      parse(`${FREEZE}  - at: 15m
    expect: { vm: vm0, events: [{ ref: m, status: Started }] }
`),
      { engine },
    );
    assert.ok(report.passed, JSON.stringify(report.steps));
    // 15 nominal minutes are 15 simulated seconds.
    assert.equal(Date.parse(report.steps[1]!.time) - Date.parse(report.startedAt), 15_000);
  });
});
