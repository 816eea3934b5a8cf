// `import('forewarn')` and each subpath, as a user's test runner does it: no output, no exit code, no signal handlers.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
  name: string;
  bin: Record<string, string>;
  exports: Record<string, string | { types: string; default: string }>;
};

/** What each export must offer; a sample, not the whole list. */
const EXPECTED: Record<string, string[]> = {
  '.': ['startEmulator', 'EmulatorHandle', 'EmulatorOptionError', 'ControlClient', 'ControlApiError', 'ScheduledEventsClient'],
  './emulator': ['startEmulator', 'EmulatorHandle', 'EmulatorOptionError', 'ControlApiError'],
  './control': ['ControlClient', 'ControlApiError', 'ControlConnectionError'],
  './client': ['ScheduledEventsClient', 'ImdsError'],
};

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : path.endsWith('.ts') ? [path] : [];
  });
}

// The package as it would be installed: package.json, a dist/ compiled from the current source, and its dependencies.
// esbuild transpiles file by file like tsc's emit (no bundling), in a moment; `npm run build` is checked by CI.
let dir: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forewarn-pkg-'));
  copyFileSync(join(repo, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const sources = walk(join(repo, 'src')).filter((f) => !f.startsWith(join(repo, 'src', 'dashboard')) && !f.endsWith('.d.ts'));
  await build({
    entryPoints: sources,
    outbase: join(repo, 'src'),
    outdir: join(dir, 'dist'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'silent',
  });
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('every export has types and code compiled from a source file, and the root is not the CLI', () => {
  assert.deepEqual(Object.keys(pkg.exports).sort(), ['.', './client', './control', './emulator', './package.json']);
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (subpath === './package.json') continue;
    assert.equal(typeof target, 'object', `${subpath} has no types`);
    const { types, default: code } = target as { types: string; default: string };
    assert.match(code, /^\.\/dist\/.+\.js$/);
    assert.equal(types, code.replace(/\.js$/, '.d.ts'), subpath);
    const source = join(repo, code.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts'));
    assert.ok(existsSync(source), `${subpath}: no ${relative(repo, source)}`);
  }
  assert.equal((pkg.exports['.'] as { default: string }).default, './dist/index.js');
  assert.equal(pkg.bin.forewarn, 'dist/cli/main.js');
});

// Run as a test runner would: with argv the CLI would act on, and reporting through a file so stdout stays the import's own.
const PROBE = `
const watched = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'exit', 'beforeExit', 'uncaughtException', 'unhandledRejection', 'warning'];
const count = () => Object.fromEntries(watched.map((s) => [s, process.listenerCount(s)]));
const beforeCounts = count();
const mod = await import(process.env.PROBE_SPECIFIER);
await new Promise((resolve) => setTimeout(resolve, 50));
const report = { exitCode: process.exitCode ?? null, before: beforeCounts, after: count(), exports: Object.keys(mod) };
(await import('node:fs')).writeFileSync(process.env.PROBE_REPORT, JSON.stringify(report));
`;

for (const subpath of Object.keys(EXPECTED)) {
  const specifier = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
  test(`import('${specifier}') prints nothing, exits 0, and leaves the exit code and signal listeners alone`, () => {
    const report = join(dir, `report-${subpath.replace(/\W/g, '_')}.json`);
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', PROBE, '--', 'emulator', '--help', '--bogus'], {
      cwd: dir,
      env: { ...process.env, PROBE_SPECIFIER: specifier, PROBE_REPORT: report, NODE_OPTIONS: '' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(child.signal, null, `killed by ${String(child.signal)}: the import kept the process alive`);
    assert.equal(child.stderr, '');
    assert.equal(child.stdout, '');
    assert.equal(child.status, 0);
    const result = JSON.parse(readFileSync(report, 'utf8')) as {
      exitCode: number | null;
      before: object;
      after: object;
      exports: string[];
    };
    assert.equal(result.exitCode, null);
    assert.deepEqual(result.after, result.before);
    for (const name of EXPECTED[subpath]!) assert.ok(result.exports.includes(name), `${specifier} does not export ${name}`);
  });
}
