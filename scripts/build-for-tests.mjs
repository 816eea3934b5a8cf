// The source compiled to plain JavaScript for the processes the tests spawn (emulator, agent, CLI):
// node starts it in about half the time `--import tsx` takes, and it is always this run's source, never a stale dist/.
// esbuild transpiles file by file as tsx would (no bundling), into <tmp>/src; package.json, scenarios/, dist/
// and node_modules are linked beside it, so paths relative to a module (../../package.json) still resolve.
import { mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';

const LINKED = ['package.json', 'scenarios', 'dist', 'node_modules'];

function sources(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'dashboard' ? [] : sources(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Compiles `<root>/src` into a new temporary folder; `cli` is the CLI's entry point there. */
export async function buildForTests(root) {
  const out = mkdtempSync(join(tmpdir(), 'forewarn-test-build-'));
  try {
    await build({
      entryPoints: sources(join(root, 'src')),
      outbase: join(root, 'src'),
      outdir: join(out, 'src'),
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: 'inline',
      logLevel: 'error',
    });
    for (const name of LINKED) symlinkSync(join(root, name), join(out, name));
  } catch (err) {
    rmSync(out, { recursive: true, force: true });
    throw err;
  }
  return { dir: out, cli: join(out, 'src', 'cli', 'main.js'), remove: () => rmSync(out, { recursive: true, force: true }) };
}
