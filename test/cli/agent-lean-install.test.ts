// An install without the optional peers (`npm install -D forewarn` for tests): the emulator runs, and
// an agent config that needs Kubernetes, etcd or Azure Blob is refused at start (exit 2) with the
// package to install, or reported by --check, never Node's "Cannot find package" at the first event.
// The CLI runs from a build whose node_modules links everything the repository has except the peers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildForTests, type TestBuild } from '../../scripts/build-for-tests.mjs';
import { PEERS } from '../../src/agent/peers.js';
import { assertNoStack, outputOf, repo } from '../support/cli.js';
import { tempDir } from '../support/temp.js';
import { waitFor } from '../support/wait.js';

const PEER_NAMES: ReadonlySet<string> = new Set(Object.values(PEERS).map((p) => p.name));
const dir = tempDir('lean-install');
let build: TestBuild;

/** Replaces the build's node_modules link with a folder linking each package of the repository's but the peers. */
function leanNodeModules(target: string): void {
  rmSync(target, { force: true, recursive: true });
  mkdirSync(target);
  const modules = join(repo, 'node_modules');
  for (const name of readdirSync(modules)) {
    if (name.startsWith('.')) continue;
    if (name.startsWith('@') && lstatSync(join(modules, name)).isDirectory()) {
      mkdirSync(join(target, name));
      for (const inner of readdirSync(join(modules, name))) {
        if (!PEER_NAMES.has(`${name}/${inner}`)) symlinkSync(join(modules, name, inner), join(target, name, inner));
      }
    } else if (!PEER_NAMES.has(name)) symlinkSync(join(modules, name), join(target, name));
  }
}

before(async () => {
  build = await buildForTests(repo);
  leanNodeModules(join(build.dir, 'node_modules'));
});
after(() => build?.remove());

function forewarn(args: string[], env: Record<string, string> = {}) {
  const clean = { ...process.env, ...env };
  delete clean.AZURE_STORAGE_CONNECTION_STRING;
  delete clean.FOREWARN_ENDPOINT;
  return spawn(process.execPath, [build.cli, ...args], { cwd: dir, env: clean, stdio: ['ignore', 'pipe', 'pipe'] });
}

function configFile(name: string, lines: string[]): string {
  const path = join(dir, name);
  writeFileSync(path, ['endpoint: http://127.0.0.1:9', 'vmName: vm0', ...lines, ''].join('\n'));
  return path;
}

const freeze = ['rules:', '  - name: freeze', '    match: { eventType: Freeze }', '    approval: immediately'];
const etcd = () =>
  configFile('etcd.yaml', ['budget: { backend: etcd, endpoints: ["http://127.0.0.1:2379"], group: web, slots: 1 }', ...freeze]);
const blob = () =>
  configFile('blob.yaml', [
    'budget: { backend: azure-blob, containerUrl: "https://acct.blob.core.windows.net/forewarn", group: web, slots: 1 }',
    ...freeze,
  ]);
const kube = () =>
  configFile('kube.yaml', [
    'rules:',
    '  - name: drain',
    '    match: { eventType: Reboot }',
    '    actions: [{ type: kubernetes, drain: true }]',
    '    approval: after-actions',
  ]);

describe('an install without the optional peers', () => {
  it('the emulator starts and serves', async () => {
    const child = forewarn(['emulator', '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0', '--json']);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    const closed = outputOf(child);
    try {
      const ready = await waitFor(`the ready line in ${out}`, () => out.split('\n').find((l) => l.startsWith('{')));
      const { imdsUrl } = JSON.parse(ready) as { imdsUrl: string };
      const res = await fetch(`${imdsUrl}/metadata/scheduledevents?api-version=2020-07-01`, { headers: { Metadata: 'true' } });
      assert.equal(res.status, 200);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal((await closed).code, 0);
  });

  for (const [what, file, message] of [
    ['an etcd budget', etcd, /budget\.backend: etcd needs the package etcd3, which is not installed: npm install etcd3@\^1\.1\.2 /],
    [
      'a kubernetes action',
      kube,
      /a kubernetes action needs the package @kubernetes\/client-node, which is not installed: npm install @kubernetes\/client-node@~1\.4\.0 /,
    ],
  ] as const) {
    it(`the agent with ${what} does not start: exit 2, naming the package and the command`, async () => {
      const { code, stderr } = await outputOf(forewarn(['agent', '--config', file()], { NODE_NAME: 'vm0' }));
      assert.equal(code, 2, stderr);
      assert.match(stderr, /the agent config needs packages this install lacks:/);
      assert.match(stderr, message);
      assertNoStack(stderr);
    });
  }

  it('--check reports the Blob store and the identity, once each, and exits 1', async () => {
    const { code, stdout, stderr } = await outputOf(forewarn(['agent', '--check', '--config', blob()]));
    assert.equal(code, 1, stdout + stderr);
    const problems = stdout.split('\n').filter((l) => l.startsWith('problem'));
    assert.equal(problems.filter((l) => l.includes('@azure/storage-blob')).length, 1, stdout);
    assert.equal(problems.filter((l) => l.includes('@azure/identity')).length, 1, stdout);
    assert.match(stdout, /budget\.backend: azure-blob with a managed identity needs the package @azure\/identity/);
    assertNoStack(stdout + stderr);
  });
});
