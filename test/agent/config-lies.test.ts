// Config files that lie: an alias bomb is refused with its place, and map keys that are
// Object.prototype's names stay ordinary keys.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentConfigError, parseAgentConfig } from '../../src/agent/config.js';

const lines = (...l: string[]) => `${l.join('\n')}\n`;

describe('agent config that lies', () => {
  it('refuses a YAML alias bomb at once, at the alias, naming the field', () => {
    const bomb = ['l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let i = 1; i <= 8; i++)
      bomb.push(
        `l${i}: &l${i} [${Array(10)
          .fill(`*l${i - 1}`)
          .join(', ')}]`,
      );
    const started = performance.now();
    let error: unknown;
    try {
      parseAgentConfig(lines('rules: [{name: r}]', ...bomb), 'agent.yaml');
    } catch (err) {
      error = err;
    }
    assert.ok(performance.now() - started < 500, 'refused quickly');
    assert.ok(error instanceof AgentConfigError, `expected an AgentConfigError, got ${String(error)}`);
    assert.match(error.message, /^agent\.yaml:10:10: l8\[0\]: YAML aliases expand too far/);
  });

  it('keeps env and header names such as __proto__ and constructor as plain keys', () => {
    const config = parseAgentConfig(
      lines(
        'rules:',
        '  - name: r',
        '    actions:',
        '      - type: exec',
        '        argv: [/bin/true]',
        '        env: {__proto__: a, constructor: b, toString: c}',
        '      - type: http',
        '        url: http://lb/x',
        '        headers: {__proto__: d, hasOwnProperty: e}',
      ),
      'agent.yaml',
    );
    const [exec, http] = config.rules[0]!.actions;
    assert.equal(exec!.type, 'exec');
    assert.equal(http!.type, 'http');
    if (exec?.type !== 'exec' || http?.type !== 'http') return;
    assert.deepEqual(Object.entries(exec.env), [
      ['__proto__', 'a'],
      ['constructor', 'b'],
      ['toString', 'c'],
    ]);
    assert.deepEqual(Object.entries(http.headers), [
      ['__proto__', 'd'],
      ['hasOwnProperty', 'e'],
    ]);
  });
});
