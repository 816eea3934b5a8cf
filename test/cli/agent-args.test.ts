// `forewarn agent` checks what it can before it starts: a secret the config names through ${env:…}
// and the environment lacks fails at start, every one named with where it is needed, rather than at
// the first Reboot. A dry run sends nothing, so it only warns.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAgentArgs } from '../../src/cli/agent.js';
import { UsageError } from '../../src/cli/errors.js';
import { tempDir } from '../support/temp.js';

const dir = tempDir('agent-args');

const config = join(dir, 'agent.yaml');
writeFileSync(
  config,
  [
    'rules:',
    '  - name: drain',
    '    actions:',
    '      - type: http',
    '        name: deregister',
    '        method: POST',
    '        url: "https://lb.example/${env:LB_POOL}/members"',
    '        headers: { Authorization: "Bearer ${env:LB_TOKEN}" }',
    '    onComplete:',
    '      - { type: http, name: rejoin, method: POST, url: "https://lb.example/${env:LB_POOL}/join" }',
    '',
  ].join('\n'),
);

describe('forewarn agent: secrets checked at start', () => {
  it('names every missing ${env:…} with the rule, action and field that need it (exit 2)', () => {
    assert.throws(
      () => parseAgentArgs({ config }, { LB_POOL: '' }),
      (err: Error) => {
        assert.ok(err instanceof UsageError, String(err));
        assert.match(
          err.message,
          /environment variable LB_POOL is not set \(needed by rule 'drain' action 'deregister' url, rule 'drain' action 'rejoin' url\)/,
        );
        assert.match(
          err.message,
          /environment variable LB_TOKEN is not set \(needed by rule 'drain' action 'deregister' header Authorization\)/,
        );
        return true;
      },
    );
  });

  it('starts when every reference resolves; a dry run only warns', () => {
    assert.equal(parseAgentArgs({ config }, { LB_POOL: 'web', LB_TOKEN: 't' }).missingSecrets.length, 0);
    const dry = parseAgentArgs({ config, dryRun: true }, {});
    assert.equal(dry.missingSecrets.length, 2);
  });
});
