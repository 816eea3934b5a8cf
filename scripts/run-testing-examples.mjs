#!/usr/bin/env node
// Runs the testing guide's examples (examples/testing/*) against the packed package, as users get it:
// each example is copied into an empty temp dir, the tarball (and the example's other dev
// dependencies, such as vitest, from the registry) installed with the given Node's npm, and its tests run.
//
//   node scripts/run-testing-examples.mjs NODE_BINARY --tarball FILE [--tarball FILE...]
//
// Give every tarball the package needs that is not on the registry (forewarn and its workspace
// packages, such as @forewarn/client): they are installed together in one command.
//
// Prints one PASS/FAIL line per example; exits 1 on any FAIL. Downloads go to npm's own cache
// (~/.npm, outside any node_modules) and are reused with --prefer-offline.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkNodeAndTarballs, npmCli, parseNodeAndTarballs, which } from './packed-args.mjs';

const EXAMPLES = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'examples', 'testing');
const INSTALL_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 60_000;

function usage(message) {
  process.stderr.write(
    `run-testing-examples: ${message}\nusage: node scripts/run-testing-examples.mjs NODE_BINARY --tarball FILE [--tarball FILE...]\n`,
  );
  process.exit(2);
}

function parseArgs(argv) {
  const { positional, tarballs } = parseNodeAndTarballs(argv, usage);
  if (positional.length > 1)
    usage(`one NODE_BINARY only (got ${positional[0]} and ${positional[1]}); each tarball needs its own --tarball`);
  if (positional.length === 0) usage('NODE_BINARY is required');
  if (tarballs.length === 0) usage('--tarball is required');
  return { node: checkNodeAndTarballs(positional[0], tarballs, usage), tarballs };
}

/** Each example's test command, given the chosen Node. One table, so adding an example is one row. */
function testCommand(example, node) {
  switch (example) {
    case 'node-test':
    case 'vitest':
      return [node, [npmCli(), 'test']];
    case 'pytest': {
      // Debian's python3-pytest (PyPI is not reachable in CI); the cache would be left in a temp dir anyway.
      const pytest = which('pytest-3', 'pytest');
      return pytest ? [pytest, ['-q', '-p', 'no:cacheprovider']] : undefined;
    }
    default:
      return undefined;
  }
}

function run(command, args, { cwd, env, timeoutMs }) {
  return new Promise((done) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => {
      output += `\n(killed after ${timeoutMs / 1000} s)`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => (output += `\n${err.message}`));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code: code ?? signal, output });
    });
  });
}

const tail = (text, lines = 15) => text.trim().split('\n').slice(-lines).join('\n    ');

async function runExample(example, options, env) {
  const started = Date.now();
  const seconds = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const command = testCommand(example, options.node);
  if (!command)
    return {
      ok: false,
      detail: example === 'pytest' ? 'pytest not found: install python3-pytest (pytest-3)' : 'no test command for this example',
    };
  const project = mkdtempSync(join(tmpdir(), `forewarn-example-${example}-`));
  try {
    cpSync(join(EXAMPLES, example), project, {
      recursive: true,
      filter: (source) => !/[\\/](node_modules|__pycache__|\.pytest_cache)$/.test(source),
    });
    // Installing the tarball replaces the copy's registry range for forewarn and installs its other dev dependencies.
    const install = await run(options.node, [npmCli(), 'install', '--no-audit', '--no-fund', '--prefer-offline', ...options.tarballs], {
      cwd: project,
      env,
      timeoutMs: INSTALL_TIMEOUT_MS,
    });
    if (install.code !== 0)
      return { ok: false, detail: `npm install: exit ${install.code} after ${seconds()}\n    ${tail(install.output)}` };
    const installed = seconds();
    const result = await run(command[0], command[1], { cwd: project, env, timeoutMs: TEST_TIMEOUT_MS });
    if (result.code !== 0)
      return { ok: false, detail: `${[command[0], ...command[1]].join(' ')}: exit ${result.code}\n    ${tail(result.output)}` };
    return { ok: true, detail: `install ${installed}, total ${seconds()}` };
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const version = spawnSync(options.node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  // The chosen Node comes first on PATH, so the bin's `#!/usr/bin/env node` and npm's scripts use it.
  const env = { ...process.env, PATH: `${dirname(options.node)}${delimiter}${process.env.PATH ?? ''}`, NO_COLOR: '1' };
  for (const key of Object.keys(env)) if (key.startsWith('npm_') || key === 'FOREWARN_BIN') delete env[key];
  let failed = 0;
  for (const example of ['node-test', 'vitest', 'pytest']) {
    const { ok, detail } = await runExample(example, options, env);
    if (!ok) failed++;
    process.stdout.write(`testing-examples: ${ok ? 'PASS' : 'FAIL'} ${example} on Node ${version} — ${detail}\n`);
  }
  process.exitCode = failed > 0 ? 1 : 0;
}

await main();
