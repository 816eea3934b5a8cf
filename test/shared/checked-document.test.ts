// The one checked-document loader: parsing with positions, zod issues in one wording, one error type.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import {
  CheckedDocument,
  DocumentError,
  DocumentErrors,
  MISSING,
  formatLocated,
  issueMessage,
  issueProblems,
  moreProblems,
  readDocumentFile,
} from '../../src/shared/checked-document.js';
import { FleetFileError, parseFleet } from '../../src/emulator/fleet/file.js';
import { ScenarioError, parseScenario } from '../../src/emulator/scenarios/load.js';
import { AgentConfigError, parseAgentConfig } from '../../src/agent/config.js';
import { StateFileError, loadStateFile } from '../../src/emulator/state/log-file.js';

class TestError extends DocumentError {
  override name = 'TestError';
}

const doc = (text: string, file = 'doc.yaml') => new CheckedDocument(text, file, { error: TestError, empty: 'the file is empty' });

function caught(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  assert.fail('expected a throw');
}

const Schema = z.strictObject({ name: z.string(), size: z.int().min(1).optional(), tags: z.array(z.string()).optional() });

describe('formatLocated and DocumentError', () => {
  it('writes FILE:line:col: [context: ][path: ]problem, or FILE: problem without a line', () => {
    assert.equal(formatLocated({ file: 'f.yaml', line: 3, col: 7, path: 'vms[0].name', problem: 'bad' }), 'f.yaml:3:7: vms[0].name: bad');
    assert.equal(formatLocated({ file: 'f.yaml', line: 1, col: 1, path: '', problem: 'empty' }), 'f.yaml:1:1: empty');
    assert.equal(formatLocated({ file: 'f.yaml', line: 0, col: 0, path: '', problem: 'cannot read' }), 'f.yaml: cannot read');
    assert.equal(
      formatLocated({ file: 's', line: 2, col: 4, path: 'seq', problem: 'x', context: 'invalid change record' }),
      's:2:4: invalid change record: seq: x',
    );
  });

  it('carries file, line, col, path and problem; its subclasses keep their own names', () => {
    const err = new TestError({ file: 'f.yaml', line: 3, col: 7, path: 'a.b', problem: 'bad' });
    assert.ok(err instanceof DocumentError);
    assert.deepEqual([err.file, err.line, err.col, err.path, err.problem], ['f.yaml', 3, 7, 'a.b', 'bad']);
    assert.equal(err.message, 'f.yaml:3:7: a.b: bad');
    assert.equal(String(err), 'TestError: f.yaml:3:7: a.b: bad');
  });

  it('lists several problems one per line', () => {
    const errors = [1, 2].map((line) => new TestError({ file: 'f', line, col: 1, path: '', problem: `p${line}` }));
    const all = new DocumentErrors(errors);
    assert.deepEqual(all.problems, ['f:1:1: p1', 'f:2:1: p2']);
    assert.equal(all.message, 'f:1:1: p1\nf:2:1: p2');
  });
});

describe('zod issues in one wording', () => {
  it('says missing, drops the "Invalid input" prefix, and names each unknown key at its name', () => {
    const result = Schema.safeParse({ size: 'x', colour: 1, shape: 2 });
    assert.ok(!result.success);
    const problems = issueProblems(result.error.issues);
    assert.deepEqual(
      problems.map((p) => [p.path.join('.'), p.key, p.message]),
      [
        ['name', undefined, MISSING],
        ['size', undefined, 'expected number, received string'],
        ['colour', 'colour', 'unknown key "colour"'],
        ['shape', 'shape', 'unknown key "shape"'],
      ].map(([path, key, message]) => [path, key, message]),
    );
    assert.equal(issueMessage(result.error.issues[0]!), MISSING);
  });

  it('lets a loader reword an issue, keeping the shared words otherwise', () => {
    const result = Schema.safeParse({ name: 1, colour: 1 });
    assert.ok(!result.success);
    const problems = issueProblems(result.error.issues, (issue, path) =>
      issue.code === 'unrecognized_keys' ? `no ${String(path.at(-1))} here` : undefined,
    );
    assert.deepEqual(
      problems.map((p) => p.message),
      ['expected string, received number', 'no colour here'],
    );
  });

  it('counts the rest after the first', () => {
    assert.deepEqual([moreProblems(1), moreProblems(2), moreProblems(3)], ['', ' (and 1 more problem)', ' (and 2 more problems)']);
  });
});

describe('CheckedDocument', () => {
  it('gives plain data and the place of every field path, YAML or JSON', () => {
    const yaml = doc('name: a\ntags:\n  - x\n  - 3\n');
    assert.deepEqual(yaml.data, { name: 'a', tags: ['x', 3] });
    const result = Schema.safeParse(yaml.data);
    assert.ok(!result.success);
    const err = yaml.first(issueProblems(result.error.issues));
    assert.ok(err instanceof TestError);
    assert.deepEqual([err.line, err.col, err.path, err.problem], [4, 5, 'tags[1]', 'expected string, received number']);
    assert.equal(err.message, 'doc.yaml:4:5: tags[1]: expected string, received number');

    const json = doc('{\n  "name": "a",\n  "size": 0\n}\n', 'doc.json');
    const bad = Schema.safeParse(json.data);
    assert.ok(!bad.success);
    assert.equal(json.first(issueProblems(bad.error.issues)).message, 'doc.json:3:11: size: Too small: expected number to be >=1');
  });

  it('reports the first problem in file order with a count, or every problem in file order', () => {
    const d = doc('name: 1\nsize: x\ncolour: red\n');
    const result = Schema.safeParse(d.data);
    assert.ok(!result.success);
    const problems = issueProblems(result.error.issues).reverse();
    assert.equal(d.first(problems).message, 'doc.yaml:1:7: name: expected string, received number (and 2 more problems)');
    assert.deepEqual(
      d.locate(problems).map((e) => e.message),
      [
        'doc.yaml:1:7: name: expected string, received number',
        'doc.yaml:2:7: size: expected number, received string',
        'doc.yaml:3:1: colour: unknown key "colour"',
      ],
    );
    assert.equal(d.lineOf(['size']), 2);
  });

  it('refuses an empty document, a YAML syntax error and duplicate keys at their place', () => {
    assert.equal((caught(() => doc('')) as TestError).message, 'doc.yaml:1:1: the file is empty');
    assert.equal((caught(() => doc('# only a comment\n')) as TestError).problem, 'the file is empty');
    assert.match((caught(() => doc('name: "x\n')) as TestError).message, /^doc\.yaml:\d+:\d+: YAML syntax error: Missing closing "quote/);
    assert.match(
      (caught(() => doc('name: a\nname: b\n')) as TestError).message,
      /^doc\.yaml:2:1: YAML syntax error: Map keys must be unique/,
    );
  });

  it("gives a .json file JSON's own syntax check, which YAML alone would let through", () => {
    const err = caught(() => doc('{"name": "a",}', 'doc.json')) as TestError;
    assert.ok(err instanceof TestError);
    assert.equal(err.message, 'doc.json:1:14: JSON syntax error: Expected double-quoted property name');
    assert.deepEqual(doc('{"name": "a",}', 'doc.yaml').data, { name: 'a' });
  });

  it('lists every syntax error through `errors` when the loader lists every problem, with its own label', () => {
    const err = caught(
      () =>
        new CheckedDocument('a: [1\nb: {\n', 'c.yaml', {
          error: TestError,
          empty: 'empty',
          errors: (e) => new DocumentErrors(e),
          syntaxLabel: 'syntax error',
        }),
    );
    assert.ok(err instanceof DocumentErrors);
    assert.ok(err.errors.length >= 2, err.message);
    for (const line of err.problems) assert.match(line, /^c\.yaml:\d+:\d+: syntax error: /);
  });

  it('refuses an alias bomb at the alias, with its field path apart from the problem', () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 8; i++)
      levels.push(
        `${'abcdefgh'[i]}: &${'abcdefgh'[i]} [${Array(10)
          .fill(`*${'abcdefgh'[i - 1]}`)
          .join(', ')}]`,
      );
    const err = caught(() => doc(`${levels.join('\n')}\n`)) as TestError;
    assert.ok(err instanceof TestError);
    assert.equal(err.path, 'h[0]');
    assert.match(err.problem, /^YAML aliases expand too far \(\*g stands for \d+ values\)/);
    assert.equal(err.line, 8);
  });
});

describe('readDocumentFile', () => {
  it("names the file and why it cannot be read, in the loader's error", () => {
    const dir = mkdtempSync(join(tmpdir(), 'checked-'));
    const missing = caught(() => readDocumentFile(join(dir, 'none.yaml'), 'thing', TestError)) as TestError;
    assert.ok(missing instanceof TestError);
    assert.equal(missing.message, `${join(dir, 'none.yaml')}: cannot read the thing: no such file`);
    assert.equal(missing.line, 0);
    assert.equal((caught(() => readDocumentFile(dir, 'thing', TestError)) as TestError).problem, 'cannot read the thing: is a directory');
    writeFileSync(join(dir, 'ok.yaml'), 'a: 1\n');
    assert.equal(readDocumentFile(join(dir, 'ok.yaml'), 'thing', TestError), 'a: 1\n');
  });
});

describe('every loader throws the one error type', () => {
  it('the fleet file, a scenario (its fleet included), the agent config and the state file', () => {
    const fleet = caught(() => parseFleet('vms:\n  - name: a\n    gpu: "yes"\n', 'f.yaml'));
    assert.ok(fleet instanceof FleetFileError && fleet instanceof DocumentError);
    assert.deepEqual([fleet.line, fleet.col, fleet.path, fleet.problem], [3, 10, 'vms[0].gpu', 'expected boolean, received string']);

    const scenario = caught(() =>
      parseScenario(
        'name: s\nfleet:\n  vms:\n    - name: a\n      gpu: "yes"\nsteps: [{ at: 0, expect: { vm: a, events: [] } }]\n',
        's.yaml',
      ),
    );
    assert.ok(scenario instanceof ScenarioError && scenario instanceof DocumentError);
    assert.deepEqual(
      [scenario.line, scenario.col, scenario.path, scenario.problem],
      [5, 12, 'fleet.vms[0].gpu', 'expected boolean, received string'],
    );
    assert.equal(scenario.message, 's.yaml:5:12: fleet.vms[0].gpu: expected boolean, received string');

    const config = caught(() => parseAgentConfig('colour: red\nrules: [{ name: r }]\n', 'a.yaml'));
    assert.ok(config instanceof AgentConfigError && config instanceof DocumentErrors);
    assert.ok(config.errors.every((e) => e instanceof DocumentError));
    assert.deepEqual(config.problems, ['a.yaml:1:1: colour: unknown key "colour"']);

    const dir = mkdtempSync(join(tmpdir(), 'checked-'));
    const path = join(dir, 'state.json');
    writeFileSync(
      path,
      `${JSON.stringify({ format: 'forewarn-state', version: 2, initialFleet: [], vms: [], events: [], ended: [], operations: [], incarnations: {} })}\n`,
    );
    const state = caught(() => loadStateFile(path));
    assert.ok(state instanceof StateFileError && state instanceof DocumentError);
    assert.deepEqual([state.line, state.col, state.path, state.problem], [1, 1, 'savedAt', MISSING]);
    assert.equal(state.message, `${path}:1:1: invalid state file: savedAt: ${MISSING}`);
  });
});
