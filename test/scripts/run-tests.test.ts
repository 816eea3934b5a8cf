// scripts/run-tests.mjs on a folder of its own: a stuck test fails under its name after the per-test timeout and the
// file goes on; a file stuck where no timer can fire fails after the per-file one; the run fails and ends with the summary.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { repo } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

const dir = tempDir('run-tests');
writeFileSync(
  join(dir, 'stuck.test.ts'),
  `import { test } from 'node:test';
test('waits for a promise nobody settles', () => new Promise(() => setInterval(() => {}, 1000)));
test('runs after the stuck one', () => {});
test('takes its own longer timeout', { timeout: 2_000 }, () => new Promise((resolve) => setTimeout(resolve, 700)));
`,
);
// Atomics.wait blocks the thread without using the CPU: no timer of the file's own can fire.
writeFileSync(
  join(dir, 'blocked.test.ts'),
  `import { test } from 'node:test';\ntest('blocks its thread', () => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); });\n`,
);

test('a stuck test fails by name, a blocked file by its path, and the run fails ending with the summary', () => {
  // Not as a child of this test run: node:test would refuse to start another.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CI: '1',
    FOREWARN_TEST_DIR: dir,
    FOREWARN_TEST_TIMEOUT_MS: '500',
    FOREWARN_TEST_FILE_TIMEOUT_MS: '4000',
  };
  delete env.NODE_TEST_CONTEXT;
  const run = spawnSync(process.execPath, [join(repo, 'scripts', 'run-tests.mjs')], {
    cwd: repo,
    env,
    encoding: 'utf8',
    timeout: 30_000,
  });
  const out = run.stdout + run.stderr;
  assert.equal(run.signal, null, out);
  assert.equal(run.status, 1, out);
  assert.match(out, /✖ waits for a promise nobody settles \([\d.]+ms\)\n\s+'test timed out after 500ms'/);
  assert.match(out, /✔ runs after the stuck one/);
  assert.match(out, /✔ takes its own longer timeout/, 'its 700 ms are over the default 500 but within its own 2 s');
  assert.match(out, /✖ \S*blocked\.test\.ts \([\d.]+ms\)\n\s+'test timed out after 4000ms'/);
  // node:test's summary closes the output, then its list of the failures.
  const summary = out.lastIndexOf('ℹ tests ');
  assert.ok(summary > out.lastIndexOf('✔ '), out);
  assert.match(out.slice(summary), /^ℹ tests 4\nℹ suites 0\nℹ pass 2\nℹ fail 0\nℹ cancelled 2\n/);
  const failures = out.slice(out.indexOf('✖ failing tests:', summary));
  assert.match(failures, /✖ waits for a promise nobody settles/);
  assert.match(failures, /✖ \S*blocked\.test\.ts/);
});
