// The loader: a malformed scenario is refused with the file, the line, the column and what is wrong.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatOffset, parseOffset } from '../../../src/emulator/scenarios/format.js';
import { ScenarioError, loadScenarioFile, parseScenario, scenarioFromObject } from '../../../src/emulator/scenarios/load.js';
import { tempDir } from '../../support/temp.js';

const dir = tempDir('scenarios');

const FLEET = 'fleet:\n  vms:\n    - name: vm0\n';
/** A scenario whose steps start on line 6. */
const scenario = (steps: string, fleet = FLEET) => `name: test\n${fleet}steps:\n${steps}`;

function refused(text: string, name = 'bad.yaml'): ScenarioError {
  const path = join(dir, name);
  writeFileSync(path, text);
  try {
    loadScenarioFile(path);
  } catch (err) {
    assert.ok(err instanceof ScenarioError, `not a ScenarioError: ${String(err)}`);
    assert.ok(err.message.startsWith(`${path}:${err.line}:${err.col}: `), err.message);
    return err;
  }
  assert.fail('the scenario was accepted');
}

describe('offsets', () => {
  test('read seconds, units and combinations, and print back the same', () => {
    const cases: [unknown, number][] = [
      [0, 0],
      ['0', 0],
      [90, 90],
      ['30s', 30],
      ['15m', 900],
      ['2h', 7200],
      ['7d', 604_800],
      ['1h30m', 5400],
      ['6d23h', 601_200],
      ['0.5s', 0.5],
    ];
    for (const [text, seconds] of cases) assert.equal(parseOffset(text), seconds, String(text));
    for (const bad of ['15x', '', 'm', '1m1h', '-5', -5, '15 m', true, null]) assert.equal(parseOffset(bad), null, String(bad));
    for (const s of [0, 30, 900, 5400, 601_200, 0.5, 3661]) assert.equal(parseOffset(formatOffset(s)), s);
    assert.equal(formatOffset(5400), '1h30m');
  });
});

describe('a malformed scenario names file:line:col and the problem', () => {
  test('a YAML syntax error', () => {
    const err = refused(scenario('  - at: 0\n    expect: { vm: vm0, events: [ }\n'));
    assert.equal(err.line, 7);
    assert.match(err.message, /YAML syntax error/);
  });

  test('an unknown action', () => {
    const err = refused(scenario('  - at: 0\n    reboot: { vm: vm0 }\n'));
    assert.deepEqual([err.line, err.col, err.path], [7, 5, 'steps[0].reboot']);
    assert.match(
      err.problem,
      /^unknown action "reboot"; a step takes at, as and one of operation, approve, cancel, complete, fault, expect$/,
    );
  });

  test('two actions in a step', () => {
    const err = refused(
      scenario(
        '  - at: 0\n    operation: { type: freeze, vms: [vm0] }\n    as: m\n  - at: 1m\n    approve: { vm: vm0, events: [m] }\n    cancel: m\n',
      ),
    );
    assert.deepEqual([err.line, err.col, err.path], [11, 5, 'steps[1].cancel']);
    assert.match(err.problem, /exactly one action; this one has approve and cancel/);
  });

  test('a step with no action', () => {
    const err = refused(scenario('  - at: 0\n  - at: 1m\n    expect: { vm: vm0, events: [] }\n'));
    assert.deepEqual([err.line, err.path], [6, 'steps[0]']);
    assert.match(err.problem, /needs one action/);
  });

  test('a decreasing at', () => {
    const err = refused(scenario('  - at: 10m\n    expect: { vm: vm0, events: [] }\n  - at: 5m\n    expect: { vm: vm0, events: [] }\n'));
    assert.deepEqual([err.line, err.col, err.path], [8, 9, 'steps[1].at']);
    assert.match(err.problem, /5m is earlier than 10m of steps\[0\]/);
  });

  test('a bad offset string', () => {
    const err = refused(scenario('  - at: 15x\n    expect: { vm: vm0, events: [] }\n'));
    assert.deepEqual([err.line, err.col, err.path], [6, 9, 'steps[0].at']);
    assert.match(err.problem, /bad offset "15x"/);
    const nb = refused(scenario('  - at: 0\n    operation: { type: freeze, vms: [vm0], notBefore: "+20q" }\n'));
    assert.deepEqual([nb.line, nb.path], [7, 'steps[0].operation.notBefore']);
    // YAML reads +30 as a number; the message says to quote it.
    const unquoted = refused(scenario('  - at: 0\n    expect: { vm: vm0, events: [{ notBefore: +30 }] }\n'));
    assert.match(unquoted.problem, /quote it/);
  });

  test('an unknown reference, and one to a later step', () => {
    const err = refused(
      scenario('  - at: 0\n    operation: { type: freeze, vms: [vm0] }\n    as: m\n  - at: 1m\n    approve: { vm: vm0, events: [m, n] }\n'),
    );
    assert.deepEqual([err.line, err.col, err.path], [10, 37, 'steps[1].approve.events[1]']);
    assert.match(err.problem, /unknown reference "n": no operation step has "as: n"/);
    const later = refused(scenario('  - at: 0\n    cancel: m\n  - at: 0\n    operation: { type: freeze, vms: [vm0] }\n    as: m\n'));
    assert.deepEqual([later.line, later.path], [7, 'steps[0].cancel']);
    assert.match(later.problem, /refers to steps\[1\], which comes later/);
    const tenant = refused(
      scenario('  - at: 0\n    operation: { type: freeze, vms: [vm0] }\n    as: m\n  - at: 0\n    cancel: m.nowhere\n'),
    );
    assert.match(tenant.problem, /no tenant named 'nowhere'/);
  });

  test('a bad fleet field, pointed at inside the scenario', () => {
    const err = refused(
      scenario('  - at: 0\n    expect: { vm: vm0, events: [] }\n', 'fleet:\n  vms:\n    - name: vm0\n      faultDomain: "one"\n'),
    );
    assert.deepEqual([err.line, err.col, err.path], [5, 20, 'fleet.vms[0].faultDomain']);
    const unknown = refused(
      scenario('  - at: 0\n    expect: { vm: vm0, events: [] }\n', 'fleet:\n  vms:\n    - name: vm0\n      colour: red\n'),
    );
    assert.deepEqual([unknown.line, unknown.col, unknown.path, unknown.problem], [5, 7, 'fleet.vms[0].colour', 'unknown key "colour"']);
    // The fleet file's own rules, such as a terminate notification outside a scale set.
    const rule = refused(
      scenario(
        '  - at: 0\n    expect: { vm: vm0, events: [] }\n',
        'fleet:\n  vms:\n    - { name: vm0, terminateNotificationMinutes: 10 }\n',
      ),
    );
    assert.deepEqual([rule.line, rule.path], [4, 'fleet.vms[0].terminateNotificationMinutes']);
  });

  test('names that are not in the fleet, a bad type, and a misplaced as', () => {
    assert.match(
      refused(scenario('  - at: 0\n    expect: { vm: vm9, events: [] }\n')).message,
      /bad\.yaml:7:19: steps\[0\]\.expect\.vm: no VM named 'vm9'/,
    );
    assert.match(refused(scenario('  - at: 0\n    operation: { type: freeze, host: nowhere }\n')).problem, /no host named 'nowhere'/);
    assert.match(refused(scenario('  - at: 0\n    operation: { type: explode, vms: [vm0] }\n')).path, /steps\[0\]\.operation\.type/);
    assert.match(refused(scenario('  - at: 0\n    operation: { type: freeze }\n')).problem, /exactly one target/);
    assert.match(refused(scenario('  - at: 0\n    as: m\n    expect: { vm: vm0, events: [] }\n')).problem, /this step has no operation/);
    assert.match(refused(scenario('  - at: 0\n    expect: { vm: vm0 }\n')).problem, /events .* or gone: true/);
    assert.match(refused(scenario('  - at: 0\n    fault: { vm: vm0 }\n')).problem, /at least one of status, latencyMs or drop/);
  });

  test('an empty file, a missing fleet, an unknown top-level key, a file that is not there', () => {
    assert.match(refused('').message, /:1:1: the scenario is empty/);
    assert.match(refused('name: x\nsteps:\n  - at: 0\n    expect: { vm: vm0, events: [] }\n').message, /fleet: missing \(required\)/);
    const extra = refused(`${scenario('  - at: 0\n    expect: { vm: vm0, events: [] }\n')}colour: red\n`);
    assert.deepEqual([extra.line, extra.problem], [8, 'unknown key "colour"']);
    assert.throws(() => loadScenarioFile(join(dir, 'missing.yaml')), /missing\.yaml: cannot read the scenario: no such file/);
  });

  test('JSON scenarios get the same positions', () => {
    const text = JSON.stringify(
      { name: 'j', fleet: { vms: [{ name: 'vm0', faultDomain: 'one' }] }, steps: [{ at: 0, expect: { vm: 'vm0', events: [] } }] },
      null,
      2,
    );
    const err = refused(text, 'bad.json');
    assert.equal(err.path, 'fleet.vms[0].faultDomain');
    assert.equal(err.line, 7);
  });
});

describe('a well-formed scenario', () => {
  test('is read with nominal offsets, references, time specs and the line of each step', () => {
    const s = parseScenario(
      scenario(
        '  - at: 0\n    operation: { type: freeze, vms: [vm0], notBefore: "+20m" }\n    as: m\n' +
          '  - at: 90\n    expect: { vm: vm0, incarnation: changed, events: [{ ref: "m#0", notBefore: "20m" }] }\n' +
          '  - at: 1h30m\n    complete: { event: m, expectStatus: 409 }\n',
      ),
      'ok.yaml',
    );
    assert.deepEqual(
      s.steps.map((step) => [step.at, step.line, step.action.kind]),
      [
        [0, 6, 'operation'],
        [90, 9, 'expect'],
        [5400, 11, 'complete'],
      ],
    );
    const op = s.steps[0]!.action;
    assert.ok(op.kind === 'operation');
    assert.deepEqual(op.notBefore, { relative: true, seconds: 1200 });
    assert.equal(op.as, 'm');
    const exp = s.steps[1]!.action;
    assert.ok(exp.kind === 'expect');
    assert.deepEqual(exp.events![0]!.ref, { text: 'm#0', name: 'm', tenant: undefined, index: 0 });
    assert.deepEqual(exp.events![0]!.notBefore, { relative: false, seconds: 1200 });
    assert.deepEqual(s.fleet, [{ name: 'vm0' }]);
  });

  test('as data, errors name the path without positions to chase', () => {
    const err = (() => {
      try {
        scenarioFromObject({
          name: 'x',
          fleet: { vms: [{ name: 'vm0' }] },
          steps: [{ at: '5 minutes', expect: { vm: 'vm0', events: [] } }],
        });
      } catch (e) {
        return e as ScenarioError;
      }
      assert.fail('accepted');
    })();
    assert.equal(err.path, 'steps[0].at');
    assert.match(err.problem, /bad offset "5 minutes"/);
  });
});
