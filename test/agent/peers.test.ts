// The clients of outside systems are optional peers (package.json peerDependenciesMeta): which config
// needs which, and a missing one named with the command that installs it, never Node's bare
// "Cannot find package". The CLI's side, on an install without them, is test/cli/agent-lean-install.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { MissingPeerError, PEERS, installCommand, loadPeer, missingPeers, neededPeers } from '../../src/agent/peers.js';
import type { AgentConfig } from '../../src/agent/types.js';
import { agentConfig } from './support.js';

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};

const kubeRule = {
  name: 'drain',
  match: { eventType: ['Reboot'] },
  actions: [{ type: 'kubernetes' }],
  onComplete: [],
  onCancel: [],
  approval: 'after-actions',
} as unknown as AgentConfig['rules'][number];

const plain = (): AgentConfig => agentConfig('http://127.0.0.1:1', '/nonexistent/journal', []);

function withBudget(backend: 'etcd' | 'azure-blob'): AgentConfig {
  return { ...plain(), budget: { backend, group: 'g', slots: 1 } as unknown as AgentConfig['budget'] };
}

describe('optional peers', () => {
  it('every client of an outside system is an optional peer, not a dependency', () => {
    for (const { name } of Object.values(PEERS)) {
      assert.equal(manifest.dependencies[name], undefined, `${name} is not in dependencies`);
      assert.ok(manifest.peerDependencies[name], `${name} is a peer`);
      assert.equal(manifest.peerDependenciesMeta[name]?.optional, true, `${name} is optional`);
    }
  });

  it('the agent image installs each peer at the range package.json declares (deploy/agent-image copies them)', () => {
    const image = JSON.parse(readFileSync(new URL('../../deploy/agent-image/package.json', import.meta.url), 'utf8')) as {
      private?: boolean;
      optionalDependencies?: Record<string, string>;
    };
    assert.equal(image.private, true, 'never published');
    assert.deepEqual(image.optionalDependencies, manifest.peerDependencies);
  });

  it('a config names only what it uses: nothing by default, kubernetes, etcd, Blob with or without the identity', () => {
    assert.deepEqual(neededPeers(plain(), {}), []);
    assert.deepEqual(
      neededPeers({ ...plain(), rules: [kubeRule] }, {}).map((p) => p.name),
      ['@kubernetes/client-node'],
    );
    assert.deepEqual(
      neededPeers(withBudget('etcd'), {}).map((p) => p.name),
      ['etcd3'],
    );
    assert.deepEqual(
      neededPeers(withBudget('azure-blob'), {}).map((p) => p.name),
      ['@azure/storage-blob', '@azure/identity'],
    );
    assert.deepEqual(
      neededPeers(withBudget('azure-blob'), { AZURE_STORAGE_CONNECTION_STRING: 'UseDevelopmentStorage=true' }).map((p) => p.name),
      ['@azure/storage-blob'],
    );
  });

  it('here, where every peer is installed, none is missing', () => {
    assert.deepEqual(missingPeers({ ...withBudget('etcd'), rules: [kubeRule] }, {}), []);
  });

  it('the install command carries the range forewarn is tested with', () => {
    assert.equal(installCommand(['etcd3']), `npm install etcd3@${manifest.peerDependencies.etcd3}`);
  });

  it('an import that fails because the package is missing becomes an error naming it and how to install it', async () => {
    const peer = { name: 'forewarn-peer-that-is-not-installed', neededBy: 'budget.backend: test' };
    await assert.rejects(
      loadPeer(peer, () => import(peer.name)),
      (err: unknown) => {
        assert.ok(err instanceof MissingPeerError);
        assert.equal(
          err.message,
          'budget.backend: test needs the package forewarn-peer-that-is-not-installed, which is not installed: ' +
            'npm install forewarn-peer-that-is-not-installed@latest (beside forewarn; add -g for a global forewarn)',
        );
        return true;
      },
    );
  });

  it('any other failure passes through unchanged: another missing package, an error inside the module', async () => {
    const otherName: string = 'forewarn-some-other-missing-package';
    const other = import(otherName);
    await assert.rejects(
      loadPeer(PEERS.etcd, () => other),
      (err: unknown) => !(err instanceof MissingPeerError),
    );
    const inside = new Error('boom');
    await assert.rejects(
      loadPeer(PEERS.etcd, () => Promise.reject(inside)),
      (err: unknown) => err === inside,
    );
  });
});
