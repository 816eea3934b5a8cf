#!/usr/bin/env node
// Smoke test of the packages as users get them: pack forewarn and @forewarn/client, install both
// tarballs with --omit=dev into an empty project, run the CLI and import every export with the given
// Node binary; check npm warns of no install script of ours and that none of the optional peers
// (Kubernetes, etcd, Azure clients) came along; install @forewarn/client alone and check it brings
// nothing else; type-check a consumer with moduleResolution NodeNext; run publint and attw on each
// tarball; last, the agent names a missing peer (etcd3) and finds it once installed.
//
//   node scripts/smoke-packed.mjs [NODE_BINARY] [--tarball FILE]... [--no-static]
//
// NODE_BINARY defaults to the Node running this script. --tarball reuses packed files, one per
// package (CI packs once and checks them with two Nodes). npm itself runs on NODE_BINARY, so engine
// warnings (EBADENGINE) are judged against that version. --no-static skips the checks that do not
// depend on the Node (tsc, publint, attw: they run on this script's Node from the repo's
// devDependencies). Prints one PASS/FAIL/SKIP line per check; exits 1 on any FAIL.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkNodeAndTarballs, npmCli, parseNodeAndTarballs } from './packed-args.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 10_000;
const IMPORT_TIMEOUT_MS = 30_000;
const SCHEDULED_EVENTS = '/metadata/scheduledevents?api-version=2020-07-01';
const MAIN = 'forewarn';
/** The optional peers (package.json peerDependenciesMeta): a plain install brings none of them. */
const ROOT_MANIFEST = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const PEERS = Object.keys(ROOT_MANIFEST.peerDependenciesMeta ?? {});
/** An agent config that needs etcd3, for the check that a missing peer is named. */
const ETCD_AGENT = [
  'endpoint: http://127.0.0.1:9',
  'vmName: vm0',
  'budget: { backend: etcd, endpoints: ["http://127.0.0.1:9"], group: smoke, slots: 1 }',
  'rules:',
  '  - { name: freeze, match: { eventType: Freeze }, approval: immediately }',
  '',
].join('\n');
const CLIENT = '@forewarn/client';
// [choice] The packages are ESM only (Node >= 20.18 has no require(esm) by default), so attw's one
// finding for CommonJS consumers, cjs-resolves-to-esm, is expected; every other rule, node10 included
// (typesVersions), must pass. Its "esm-only" profile would also ignore node10.
const ATTW_ARGS = ['--ignore-rules', 'cjs-resolves-to-esm', '--format', 'ascii', '--no-emoji', '--no-color'];

function usage(message) {
  process.stderr.write(`smoke-packed: ${message}\nusage: node scripts/smoke-packed.mjs [NODE_BINARY] [--tarball FILE]... [--no-static]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const options = { static: true };
  const { positional, tarballs } = parseNodeAndTarballs(argv, usage, { '--no-static': () => (options.static = false) });
  // The last NODE_BINARY given wins; this Node by default.
  return { ...options, tarballs, node: checkNodeAndTarballs(positional.at(-1) ?? process.execPath, tarballs, usage) };
}

const results = [];
function report(status, name, detail = '') {
  results.push(status);
  process.stdout.write(`smoke: ${status.padEnd(4)} ${name}${detail ? ` — ${detail}` : ''}\n`);
}
const pass = (name, detail) => report('PASS', name, detail);
const fail = (name, detail) => report('FAIL', name, detail);
const skip = (name, detail) => report('SKIP', name, detail);

/** The last lines of a command's output, enough to see why it failed. */
function tail(text, lines = 12) {
  return text.trim().split('\n').slice(-lines).join('\n    ');
}

function run(command, args, { cwd, env, input, timeout } = {}) {
  const result = spawnSync(command, args, { cwd, env, input, timeout, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { code: result.status, signal: result.signal, stdout: result.stdout ?? '', stderr: result.stderr ?? '', error: result.error };
}

function pack(work) {
  // Runs `prepack` (the builds), so the tarballs hold what the current sources compile to.
  const result = run('npm', ['pack', '--json', '-w', CLIENT, '--include-workspace-root', '--pack-destination', work], { cwd: ROOT });
  if (result.code !== 0) {
    fail('npm pack', `exit ${result.code}\n    ${tail(result.stderr + result.stdout)}`);
    return undefined;
  }
  const json = result.stdout.slice(result.stdout.indexOf('\n[') + 1 || result.stdout.indexOf('['));
  const infos = JSON.parse(json);
  for (const info of infos) {
    pass(
      `npm pack ${info.name}`,
      `${info.filename}: ${info.entryCount} files, ${(info.size / 1024).toFixed(0)} kB packed, ${(info.unpackedSize / 1024).toFixed(0)} kB unpacked`,
    );
  }
  return infos.map((info) => join(work, info.filename));
}

/** The package.json inside a tarball, to tell which package it holds. */
function tarballManifest(file) {
  const result = run('tar', ['-xzOf', file, 'package/package.json']);
  if (result.code !== 0) throw new Error(`cannot read package/package.json in ${file}: ${result.stderr.trim()}`);
  return JSON.parse(result.stdout);
}

function install(node, env, project, tarballs, label) {
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'smoke-consumer', private: true, type: 'module' }, null, 2));
  const result = run(node, [npmCli(), 'install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs], {
    cwd: project,
    env,
  });
  const name = `npm install --omit=dev ${label}`;
  if (result.code !== 0) {
    fail(name, `exit ${result.code}\n    ${tail(result.stderr + result.stdout)}`);
    return false;
  }
  pass(name, tail(result.stdout, 1));
  // A tarball with an install-time script (`prepare` kept in the manifest, say) makes npm warn of it.
  const scripts = (result.stderr + result.stdout)
    .split('\n')
    .filter((line) => /install-scripts|forewarn.*\((pre|post)?(install|prepare)/.test(line));
  const ours = scripts.filter((line) => /forewarn/.test(line));
  if (ours.length > 0) fail(`no install scripts of ours (${label})`, `\n    ${ours.join('\n    ')}`);
  else pass(`no install scripts of ours (${label})`);
  // An engines range that excludes this Node is a warning by default and an error with engine-strict.
  const engine = (result.stderr + result.stdout).split('\n').filter((line) => line.includes('EBADENGINE'));
  if (engine.length > 0) fail(`no EBADENGINE warnings (${label})`, `\n    ${engine.join('\n    ')}`);
  else pass(`no EBADENGINE warnings (${label})`);
  return true;
}

/** @forewarn/client installed alone brings nothing else: `npm ls --all` lists it and only it. */
function checkClientAlone(node, env, project, manifest) {
  const name = `${CLIENT} installs with zero dependencies`;
  const declared = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies, ...manifest.optionalDependencies });
  const result = run(node, [npmCli(), 'ls', '--omit=dev', '--all', '--parseable'], { cwd: project, env });
  const installed = result.stdout
    .trim()
    .split('\n')
    .slice(1)
    .map((dir) => dir.slice(join(project, 'node_modules').length + 1));
  if (result.code !== 0) fail(name, `npm ls exit ${result.code}\n    ${tail(result.stderr + result.stdout)}`);
  else if (declared.length > 0 || installed.length !== 1 || installed[0] !== CLIENT) {
    fail(name, `declares [${declared.join(', ')}]; installed: ${installed.join(', ')}`);
  } else pass(name, 'npm ls --omit=dev --all lists only it');
}

/** The same classes whichever name a consumer imports them by. */
async function checkSameClient(node, env, project) {
  const name = `'${MAIN}/client' and '${MAIN}' re-export '${CLIENT}'`;
  const code = `const [a, b, c] = await Promise.all([import('${CLIENT}'), import('${MAIN}/client'), import('${MAIN}')]);
const names = Object.keys(a);
const differ = names.filter((n) => a[n] !== b[n] || a[n] !== c[n]);
process.stdout.write(JSON.stringify({ count: names.length, differ }));`;
  const result = run(node, ['--input-type=module', '-e', code], { cwd: project, env });
  let seen;
  try {
    seen = JSON.parse(result.stdout);
  } catch {
    fail(name, `exit ${result.code}\n    ${tail(result.stderr + result.stdout)}`);
    return;
  }
  if (seen.count > 0 && seen.differ.length === 0) pass(name, `${seen.count} names, the same objects`);
  else fail(name, `${seen.count} names; different objects: ${seen.differ.join(', ')}`);
}

/** A consumer's TypeScript: every export imported and a few types used, checked as NodeNext sees it. */
const CONSUMER_TS = `import { startEmulator, ScheduledEventsClient as RootClient } from '${MAIN}';
import * as emulator from '${MAIN}/emulator';
import { ControlClient } from '${MAIN}/control';
import { ScheduledEventsClient, ImdsError, affects, type ScheduledEvent, type EventChange, type WatchItem } from '${MAIN}/client';
import * as alone from '${CLIENT}';

const sameClass: typeof alone.ScheduledEventsClient = ScheduledEventsClient;
const rootClass: typeof ScheduledEventsClient = RootClient;
export async function use(): Promise<string[]> {
  const emu = await startEmulator({});
  const control = new ControlClient({ baseUrl: emu.controlUrl });
  const client = new sameClass({ endpoint: emu.imdsUrl });
  const doc = await client.getDocument();
  const first: ScheduledEvent | undefined = doc.events[0];
  const kinds: EventChange['kind'][] = ['scheduled', 'started'];
  const handle = (item: WatchItem): number => (item.type === 'changes' ? item.changes.length : 0);
  const err: unknown = new Error('x');
  await emu.close();
  return [String(first?.id), String(affects), String(err instanceof ImdsError), String(handle), kinds.join(), typeof control, typeof rootClass, typeof emulator];
}
`;

function checkTypes(project) {
  const name = 'tsc --module nodenext --moduleResolution nodenext (consumer of every export)';
  writeFileSync(join(project, 'consumer.ts'), CONSUMER_TS);
  // @types/node from this repo, as any Node consumer has it; the packages' own .d.ts are checked too.
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const args = [
    tsc,
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--target',
    'es2022',
    '--strict',
    '--noEmit',
    '--skipLibCheck',
    'false',
    '--typeRoots',
    join(ROOT, 'node_modules', '@types'),
    '--types',
    'node',
    'consumer.ts',
  ];
  const result = run(process.execPath, args, { cwd: project });
  if (result.code === 0) pass(name);
  else fail(name, `exit ${result.code}\n    ${tail(result.stdout + result.stderr, 20)}`);
}

async function checkPublint(tarball) {
  const name = `publint ${basename(tarball)}`;
  const { publint } = await import('publint');
  const { formatMessage } = await import('publint/utils');
  const data = readFileSync(tarball);
  const tarballBytes = data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
  const { messages, pkg } = await publint({ pack: { tarball: tarballBytes }, strict: true });
  const lines = messages.map((m) => `${m.type}: ${formatMessage(m, pkg, { color: false }) ?? m.code}`);
  if (messages.length === 0) pass(name, 'no messages (strict)');
  else fail(name, `\n    ${lines.join('\n    ')}`);
}

function checkAttw(tarball) {
  const name = `attw ${basename(tarball)} (ESM only: cjs-resolves-to-esm ignored)`;
  const attw = join(ROOT, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js');
  const result = run(process.execPath, [attw, tarball, ...ATTW_ARGS]);
  const verdict = result.stdout
    .split('\n')
    .find((line) => /No problems found/.test(line))
    ?.trim();
  if (result.code === 0) pass(name, verdict ?? 'exit 0');
  else fail(name, `exit ${result.code}\n    ${tail(result.stdout + result.stderr, 40)}`);
}

/** A plain install is lean: none of the optional peers, and its size said. */
function checkLean(node, env, project) {
  const name = `npm install forewarn brings none of the optional peers (${PEERS.join(', ')})`;
  const present = PEERS.filter((peer) => existsSync(join(project, 'node_modules', peer, 'package.json')));
  const du = run('du', ['-sk', join(project, 'node_modules')]);
  const count =
    run(node, [npmCli(), 'ls', '--omit=dev', '--all', '--parseable'], { cwd: project, env }).stdout.trim().split('\n').length - 1;
  const size = du.code === 0 ? `${(Number(du.stdout.split('\t')[0]) / 1024).toFixed(0)} MB` : 'size unknown';
  if (PEERS.length === 0) fail(name, 'package.json declares no optional peers');
  else if (present.length > 0) fail(name, `installed: ${present.join(', ')}`);
  else pass(name, `${count} packages, ${size} in node_modules`);
}

/** The agent with an etcd budget: refused at start naming etcd3 while it is missing; past that once it is installed. */
function checkPeerNamed(node, env, project) {
  const config = join(project, 'agent-etcd.yaml');
  writeFileSync(config, ETCD_AGENT);
  const bin = join(project, 'node_modules', '.bin', 'forewarn');
  // With etcd3 there, the agent would start and wait for IMDS for ever: the timeout ends it.
  const missing = run(bin, ['agent', '--config', config], { cwd: project, env, timeout: START_TIMEOUT_MS });
  const name = 'forewarn agent with an etcd budget, etcd3 missing: exit 2, names it';
  const range = ROOT_MANIFEST.peerDependencies?.etcd3;
  if (missing.code === 2 && missing.stderr.includes(`npm install etcd3@${range}`) && !/^\s+at /m.test(missing.stderr)) pass(name);
  else fail(name, `exit ${missing.code ?? missing.signal}\n    ${tail(missing.stderr + missing.stdout)}`);
  const install = run(node, [npmCli(), 'install', '--no-audit', '--no-fund', '--prefer-offline', `etcd3@${range}`], { cwd: project, env });
  const after = 'forewarn agent --check after `npm install etcd3`: the package is found, the store is tried';
  if (install.code !== 0) {
    fail(after, `npm install etcd3 exit ${install.code}\n    ${tail(install.stderr + install.stdout)}`);
    return;
  }
  const check = run(bin, ['agent', '--check', '--config', config], { cwd: project, env, timeout: START_TIMEOUT_MS * 3 });
  if (!check.stdout.includes('needs the package') && /problem +fleet store etcd/.test(check.stdout)) pass(after);
  else fail(after, `exit ${check.code}\n    ${tail(check.stdout + check.stderr)}`);
}

function checkVersion(env, project, expected) {
  const result = run(join(project, 'node_modules', '.bin', 'forewarn'), ['--version'], { cwd: project, env });
  const out = result.stdout.trim();
  if (result.code === 0 && out === expected) pass('forewarn --version', out);
  else fail('forewarn --version', `exit ${result.code}, printed ${JSON.stringify(out)} (expected ${expected})\n    ${tail(result.stderr)}`);
}

/** The IMDS URL from the ready line: the banner's `IMDS: URL`, or a JSON line with imdsUrl. */
function imdsUrlIn(text) {
  for (const line of text.split('\n')) {
    const banner = /^\s*IMDS:\s+(http:\/\/\S+)/.exec(line);
    if (banner) return banner[1];
    if (line.trimStart().startsWith('{')) {
      try {
        const ready = JSON.parse(line);
        if (typeof ready.imdsUrl === 'string') return ready.imdsUrl;
      } catch {
        // Not a JSON line; keep reading.
      }
    }
  }
  return undefined;
}

/** Starts `command args` in the consumer project, keeping what it prints in `stdout` and `stderr`. */
function start(command, args, env, project) {
  const child = spawn(command, args, { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const started = { child, stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (chunk) => (started.stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (started.stderr += chunk));
  return started;
}

async function checkEmulator(env, project) {
  const name = 'forewarn emulator (start, GET the document, SIGTERM)';
  const emulator = start(
    join(project, 'node_modules', '.bin', 'forewarn'),
    ['emulator', '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0'],
    env,
    project,
  );
  const { child } = emulator;
  const exited = new Promise((done) => child.on('exit', (code, signal) => done({ code, signal })));
  const deadline = Date.now() + START_TIMEOUT_MS;
  let imdsUrl;
  while (!(imdsUrl = imdsUrlIn(emulator.stdout)) && child.exitCode === null && child.signalCode === null && Date.now() < deadline) {
    await new Promise((done) => setTimeout(done, 50));
  }
  if (!imdsUrl) {
    child.kill('SIGKILL');
    const end = await exited;
    fail(name, `no URLs printed (exit ${end.code ?? end.signal})\n    ${tail(emulator.stderr + emulator.stdout)}`);
    return;
  }
  let detail;
  try {
    const response = await fetch(imdsUrl + SCHEDULED_EVENTS, { headers: { Metadata: 'true' }, signal: AbortSignal.timeout(5000) });
    const body = await response.json();
    if (response.status !== 200 || typeof body.DocumentIncarnation !== 'number' || !Array.isArray(body.Events)) {
      detail = `GET answered ${response.status} ${JSON.stringify(body)}`;
    }
  } catch (error) {
    detail = `GET failed: ${error.message}`;
  }
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  const end = await exited;
  clearTimeout(timer);
  if (!detail && end.code !== 0) detail = `after SIGTERM it exited with ${end.code ?? end.signal}\n    ${tail(emulator.stderr)}`;
  if (detail) fail(name, detail);
  else pass(name, `listening at ${imdsUrl}, exit 0`);
}

/** Code run in the consumer project for each export: it prints one JSON line with what it saw. */
function importProbe(specifier) {
  return `
const output = [];
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => (output.push(String(chunk)), true);
process.stderr.write = (chunk, ...rest) => (output.push(String(chunk)), true);
const listeners = process.listenerCount('SIGINT') + process.listenerCount('SIGTERM');
const mod = await import(${JSON.stringify(specifier)});
const seen = {
  names: Object.keys(mod).sort(),
  output: output.join(''),
  exitCode: process.exitCode ?? 0,
  signalHandlers: process.listenerCount('SIGINT') + process.listenerCount('SIGTERM') - listeners,
};
if (typeof mod.startEmulator === 'function') {
  const emulator = await mod.startEmulator({});
  // \`await using\` needs the handle's Symbol.asyncDispose, which Node has from 20.4 only.
  const dispose = typeof Symbol.asyncDispose === 'symbol' ? emulator[Symbol.asyncDispose] : undefined;
  try {
    const response = await fetch(emulator.imdsUrl + ${JSON.stringify(SCHEDULED_EVENTS)}, { headers: { Metadata: 'true' } });
    seen.emulator = { status: response.status, body: await response.json(), asyncDispose: typeof dispose === 'function' };
  } finally {
    await (typeof dispose === 'function' ? dispose.call(emulator) : emulator.close());
  }
}
write(JSON.stringify(seen) + '\\n');
`;
}

/** Every subpath in exports except ./package.json; the root too unless it is the bin (importing it runs the CLI). */
function exportsToCheck(manifest) {
  const exportsField = manifest.exports ?? {};
  const entries = typeof exportsField === 'string' ? { '.': exportsField } : exportsField;
  const target = (value) => (typeof value === 'string' ? value : (value?.import ?? value?.default));
  const bins = new Set(
    Object.values(typeof manifest.bin === 'string' ? { b: manifest.bin } : (manifest.bin ?? {})).map((p) => p.replace(/^\.\//, '')),
  );
  const checks = [];
  for (const [subpath, value] of Object.entries(entries)) {
    if (subpath === './package.json' || subpath.includes('*')) continue;
    const file = target(value)?.replace(/^\.\//, '');
    const specifier = subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`;
    checks.push({ specifier, isBin: bins.has(file) });
  }
  return checks;
}

/** Every file that exports (any condition) or bin names is in the installed package. */
function checkExportFiles(project, manifest) {
  const targets = new Set();
  const collect = (value) => {
    if (typeof value === 'string') targets.add(value.replace(/^\.\//, ''));
    else if (value && typeof value === 'object') Object.values(value).forEach(collect);
  };
  collect(manifest.exports);
  collect(manifest.bin);
  const dir = join(project, 'node_modules', manifest.name);
  const missing = [...targets].filter((file) => !file.includes('*') && !existsSync(join(dir, file)));
  if (missing.length > 0) fail('files named by exports and bin are shipped', `missing: ${missing.join(', ')}`);
  else pass('files named by exports and bin are shipped', `${targets.size} files`);
}

async function checkImport(node, env, project, specifier) {
  const name = `import '${specifier}'`;
  const result = await new Promise((done) => {
    const probe = start(node, ['--input-type=module', '-e', importProbe(specifier)], env, project);
    const { child } = probe;
    // A module that keeps the process alive (a timer, a server left open) fails here.
    const timer = setTimeout(() => child.kill('SIGKILL'), IMPORT_TIMEOUT_MS);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout: probe.stdout, stderr: probe.stderr });
    });
  });
  if (result.code !== 0) {
    fail(
      name,
      `exit ${result.code ?? `${result.signal} (did not exit within ${IMPORT_TIMEOUT_MS / 1000} s)`}\n    ${tail(result.stderr + result.stdout)}`,
    );
    return;
  }
  const seen = JSON.parse(result.stdout.trim().split('\n').pop());
  const problems = [];
  if (seen.names.length === 0) problems.push('no exports');
  if (seen.output) problems.push(`printed ${JSON.stringify(seen.output.slice(0, 200))}`);
  if (seen.exitCode !== 0) problems.push(`set exit code ${seen.exitCode}`);
  if (seen.signalHandlers !== 0) problems.push(`installed ${seen.signalHandlers} signal handler(s)`);
  if (seen.emulator) {
    const { status, body } = seen.emulator;
    if (status !== 200 || !Array.isArray(body?.Events)) problems.push(`startEmulator's IMDS answered ${status} ${JSON.stringify(body)}`);
    if (!seen.emulator.asyncDispose) problems.push('the handle has no [Symbol.asyncDispose]() on this Node');
  }
  const closedBy = seen.emulator?.asyncDispose ? '[Symbol.asyncDispose]()' : 'close()';
  const what = `${seen.names.length} exports${seen.emulator ? `; startEmulator served a document, closed by ${closedBy}` : ''}`;
  if (problems.length > 0) fail(name, `${what}; ${problems.join('; ')}`);
  else pass(name, `${what}, no side effects`);
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const version = run(options.node, ['--version']).stdout.trim();
  process.stdout.write(`smoke: packed package on Node ${version} (${options.node})\n`);
  const work = mkdtempSync(join(tmpdir(), 'forewarn-smoke-'));
  try {
    const tarballs = options.tarballs.length > 0 ? options.tarballs : pack(work);
    if (!tarballs) return;
    const byName = new Map(tarballs.map((file) => [tarballManifest(file).name, file]));
    for (const wanted of [MAIN, CLIENT]) if (!byName.has(wanted)) usage(`no tarball of ${wanted} among ${tarballs.join(', ')}`);
    // The chosen Node comes first on PATH, so the bin's `#!/usr/bin/env node` and npm's scripts use it.
    const env = { ...process.env, PATH: `${dirname(options.node)}${delimiter}${process.env.PATH ?? ''}` };
    for (const key of Object.keys(env)) if (key.startsWith('npm_')) delete env[key];

    // @forewarn/client alone, in a project of its own.
    const alone = join(work, 'client-alone');
    mkdirSync(alone);
    if (install(options.node, env, alone, [byName.get(CLIENT)], CLIENT)) {
      const clientManifest = JSON.parse(readFileSync(join(alone, 'node_modules', CLIENT, 'package.json'), 'utf8'));
      checkClientAlone(options.node, env, alone, clientManifest);
      checkExportFiles(alone, clientManifest);
      for (const { specifier } of exportsToCheck(clientManifest)) await checkImport(options.node, env, alone, specifier);
    }

    // forewarn, which depends on @forewarn/client: npm resolves that from the tarball given with it.
    const project = join(work, 'consumer');
    mkdirSync(project);
    if (!install(options.node, env, project, [...byName.values()], 'all packages')) return;
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules', MAIN, 'package.json'), 'utf8'));
    checkVersion(env, project, manifest.version);
    checkLean(options.node, env, project);
    await checkEmulator(env, project);
    checkExportFiles(project, manifest);
    const checks = exportsToCheck(manifest);
    for (const { specifier, isBin } of checks) {
      if (isBin) skip(`import '${specifier}'`, 'the root export is the CLI bin; importing it would run the CLI');
      else await checkImport(options.node, env, project, specifier);
    }
    await checkSameClient(options.node, env, project);
    process.stdout.write(
      `smoke: exports checked: ${
        checks
          .filter((c) => !c.isBin)
          .map((c) => c.specifier)
          .join(', ') || 'none'
      }, ${CLIENT}\n`,
    );

    if (!options.static) {
      skip('tsc, publint, attw, installing a peer', '--no-static');
      return;
    }
    // Last: it installs etcd3 into the project.
    checkPeerNamed(options.node, env, project);
    checkTypes(project);
    for (const file of byName.values()) {
      await checkPublint(file);
      checkAttw(file);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (error) {
  fail('smoke script', error instanceof Error ? error.message : String(error));
}
const failed = results.filter((status) => status === 'FAIL').length;
process.stdout.write(
  `smoke: ${failed === 0 && results.length > 0 ? 'OK' : 'FAILED'} — ${results.filter((s) => s === 'PASS').length} passed, ${failed} failed, ${results.filter((s) => s === 'SKIP').length} skipped\n`,
);
process.exitCode = failed === 0 && results.length > 0 ? 0 : 1;
