// The dashboard's bundle takes code from its own files and from src/protocol only (the wire and control
// contract: enums, limits, the error body); types it takes from elsewhere are erased and load nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

test("the dashboard's run-time code is its own and src/protocol's", async () => {
  const entry = fileURLToPath(new URL('../../../src/dashboard/main.tsx', import.meta.url));
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'browser',
    format: 'esm',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    packages: 'external',
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  assert.ok(
    inputs.some((f) => f.startsWith('src/protocol/')),
    'the page uses the contract',
  );
  const foreign = inputs.filter((f) => !f.startsWith('src/dashboard/') && !f.startsWith('src/protocol/'));
  assert.deepEqual(foreign, [], 'import these from src/protocol, moving a constant there if it is part of the contract');
});
