#!/usr/bin/env node
// Runs the test files (all, or those whose path contains one of the arguments) under node:test with tsx.
// Node 20's --test takes no globs, so the files are listed here and handed over.
//   FOREWARN_TEST_TIMEOUT_MS       each test's and hook's timeout unless it sets its own (default 60 s; scripts/per-test-timeout.mjs)
//   FOREWARN_TEST_FILE_TIMEOUT_MS  a whole file's, the backstop for a file stuck where no timer runs (default 10 min)
//   FOREWARN_TEST_DIR              where the test files are (default test/)
// The spawned CLI runs from a fresh JavaScript build of src/ (scripts/build-for-tests.mjs), named by FOREWARN_TEST_CLI;
// a run started by a test inherits its parent's.
import { readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const filters = process.argv.slice(2);
const testDir = resolve(root, process.env.FOREWARN_TEST_DIR || 'test');
const fileTimeoutMs = process.env.FOREWARN_TEST_FILE_TIMEOUT_MS || String(10 * 60_000);

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : name.endsWith('.test.ts') ? [path] : [];
  });
}

const files = walk(testDir)
  .map((f) => relative(root, f))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// The dashboard tests load the page the emulator serves: build it from the current source first.
if (files.some((f) => f.startsWith('test/e2e/'))) {
  const { buildDashboard } = await import('./build-dashboard.mjs');
  await buildDashboard();
}
const env = { ...process.env };
let build;
if (!env.FOREWARN_TEST_CLI) {
  const { buildForTests } = await import('./build-for-tests.mjs');
  try {
    build = await buildForTests(root);
    env.FOREWARN_TEST_CLI = build.cli;
  } catch (err) {
    // Source esbuild cannot compile fails the tests that load it; the rest still run, spawning through tsx.
    console.error(`run-tests: no build of src/ for the spawned CLI (${err.message.split('\n')[0]}); it runs through tsx`);
  }
}
const reporter = process.env.CI || !process.stdout.isTTY ? ['--test-reporter=spec'] : [];
const args = [
  '--import',
  'tsx',
  '--import',
  pathToFileURL(join(root, 'scripts', 'per-test-timeout.mjs')).href,
  '--test',
  // Once a file's tests are done (a timed-out one may leave handles open), its process ends.
  '--test-force-exit',
  `--test-timeout=${fileTimeoutMs}`,
  ...reporter,
  ...files,
];
let result;
try {
  // Nothing is printed after node:test's summary: CI's log ends with it.
  result = spawnSync(process.execPath, args, { cwd: root, env, stdio: 'inherit' });
} finally {
  build?.remove();
}
process.exit(result.status ?? 1);
