// The docs that describe contracts must match the code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { OPENAPI_PATH, renderOpenApi } from '../scripts/export-openapi.js';
import { ROUTES } from '../src/emulator/control/openapi.js';

test('docs/openapi.json is the description the control API serves', () => {
  // A plain boolean: a diff of the whole document would bury the fix.
  assert.ok(readFileSync(OPENAPI_PATH, 'utf8') === renderOpenApi(), 'docs/openapi.json is stale: run `npm run docs:openapi`');
});

test('the README lists every control API route', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  for (const route of ROUTES) {
    const path = route.path.replace(/:name/g, 'NAME').replace(/:id/g, 'ID');
    assert.ok(readme.includes(`${route.method} ${path}`), `README does not mention ${route.method} ${path}`);
  }
});
