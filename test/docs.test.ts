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
    // As SPEC §4 writes them: NAME, ID, and S, RG and TYPE in the ARM routes.
    const names: Record<string, string> = {
      subscriptionId: 'S',
      resourceGroupName: 'RG',
      resourceType: 'TYPE',
      resourceName: 'NAME',
      scheduledEventId: 'ID',
    };
    const path = route.path.replace(/:(\w+)/g, (_, p: string) => names[p] ?? p.toUpperCase());
    assert.ok(readme.includes(`${route.method} ${path}`), `README does not mention ${route.method} ${path}`);
  }
});

test('every relative link in the README and docs/ points at a file and heading that exist', async () => {
  const { existsSync, readdirSync } = await import('node:fs');
  const { dirname, join, resolve } = await import('node:path');
  const root = new URL('..', import.meta.url).pathname;
  const files = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  // GitHub's anchors: lower case, punctuation dropped, spaces to hyphens.
  const anchor = (heading: string) =>
    heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
  const headings = (file: string) => new Set([...readFileSync(file, 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)));
  const broken: string[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target!)) continue;
      const [path, hash] = target!.split('#') as [string, string | undefined];
      const abs = path === '' ? join(root, file) : resolve(dirname(join(root, file)), path);
      if (!existsSync(abs)) broken.push(`${file}: ${target} (no such file)`);
      else if (hash !== undefined && abs.endsWith('.md') && !headings(abs).has(hash)) broken.push(`${file}: ${target} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});
