// The README's Library example is a real node:test file: run exactly that block against the current source.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const rootEntry = fileURLToPath(new URL('../../src/index.ts', import.meta.url));

/** The ```js block right after `<!-- readme-library-example -->`. */
function libraryExample(): string {
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  const match = /<!-- readme-library-example -->\r?\n```js\r?\n([\s\S]*?)\r?\n```/.exec(readme);
  assert.ok(match, 'README.md has no ```js block right after <!-- readme-library-example -->');
  return match[1]!;
}

test('the README library example is ten lines of node:test that import from forewarn', () => {
  const code = libraryExample();
  assert.equal(code.split('\n').length, 10);
  assert.match(code, /from 'node:test'/);
  assert.match(code, /startEmulator\(/);
});

test('the README library example passes under node --test', { timeout: 60_000 }, () => {
  const code = libraryExample();
  const program = code.replaceAll("from 'forewarn'", `from ${JSON.stringify(rootEntry)}`);
  assert.notEqual(program, code, "the example does not import from 'forewarn'");
  const dir = mkdtempSync(join(tmpdir(), 'forewarn-readme-lib-'));
  try {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    const file = join(dir, 'example.test.js');
    writeFileSync(file, program);
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', file], {
      cwd: repo,
      // Without NODE_TEST_CONTEXT the child reports to its stdout, not to this run.
      env: { ...process.env, NODE_OPTIONS: '', NODE_TEST_CONTEXT: undefined },
      encoding: 'utf8',
      timeout: 50_000,
    });
    assert.equal(child.status, 0, `${child.stdout}\n${child.stderr}`);
    assert.match(child.stdout, /^ok 1 - my service sees a Freeze$/m);
    assert.match(child.stdout, /^# pass 1$/m);
    assert.match(child.stdout, /^# fail 0$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
