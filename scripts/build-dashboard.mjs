#!/usr/bin/env node
// Bundles the dashboard (src/dashboard) into dist/dashboard: one script, one stylesheet, one page.
// The emulator serves that folder at / on its control address; nothing is fetched at run time.
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src', 'dashboard');

export async function buildDashboard(outdir = join(root, 'dist', 'dashboard')) {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  await build({
    entryPoints: [join(src, 'main.tsx')],
    outfile: join(outdir, 'app.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    // What Debian's Chromium and any current browser run.
    target: ['es2022'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: 'linked',
    legalComments: 'linked',
    logLevel: 'warning',
  });
  for (const file of ['index.html', 'app.css']) copyFileSync(join(src, file), join(outdir, file));
  return outdir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await buildDashboard();
  console.log(`dashboard built into ${out}`);
}
