#!/usr/bin/env node
// Node 20's --test takes no globs, so list the test files here and hand them over.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2);

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : name.endsWith('.test.ts') ? [path] : [];
  });
}

const files = walk(join(root, 'test'))
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
const reporter = process.env.CI || !process.stdout.isTTY ? ['--test-reporter=spec'] : [];
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', ...reporter, ...files], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
