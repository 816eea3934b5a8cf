import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { AgentConfigError, loadAgentConfig, parseAgentConfig } from '../../src/agent/config.js';
import { rule } from '../support/fixtures.js';
import { tempDir } from '../support/temp.js';

const dir = tempDir('agent-config');

const example = fileURLToPath(new URL('../../examples/agent.yaml', import.meta.url));

function problems(text: string, file = 'agent.yaml'): string[] {
  try {
    parseAgentConfig(text, file);
  } catch (err) {
    assert.ok(err instanceof AgentConfigError, `expected an AgentConfigError, got ${String(err)}`);
    assert.equal(err.message, err.problems.join('\n'));
    return err.problems;
  }
  assert.fail('expected the config to be rejected');
}

const lines = (...l: string[]) => `${l.join('\n')}\n`;

describe('parseAgentConfig', () => {
  it('fills in every default', () => {
    const config = parseAgentConfig(lines('rules:', '  - name: all'), 'agent.yaml');
    assert.deepEqual(config, {
      endpoint: null,
      apiVersion: '2020-07-01',
      pollIntervalSeconds: 1,
      vmName: null,
      journal: '/var/lib/forewarn/journal.json',
      journalUnwritable: { policy: 'prepare-before-notbefore', prepareWithinSeconds: 120 },
      listen: '127.0.0.1:9464',
      leader: { mode: 'first', standby: null },
      readyWithinSeconds: 10,
      shutdownGraceSeconds: 30,
      // One rule, all: every event, no actions, approved after them.
      rules: [rule({ name: 'all' })],
      kubernetes: {
        nodeName: null,
        policy: {},
        marginSeconds: 5,
        taint: null,
        localStorage: 'evict',
        readyTimeoutSeconds: 900,
        budget: null,
      },
      budget: null,
    });
  });

  it('fills in action defaults and names actions by type and position', () => {
    const config = parseAgentConfig(
      lines(
        'rules:',
        '  - name: r',
        '    actions:',
        '      - {type: log}',
        '      - {type: exec, argv: [/bin/true]}',
        '      - {type: http, url: "http://lb/x"}',
        '    onCancel:',
        '      - {type: exec, name: undo, argv: [/bin/false]}',
      ),
      'agent.yaml',
    );
    const rule = config.rules[0]!;
    assert.deepEqual(rule.actions, [
      { type: 'log', name: 'log-0', message: '', level: 'info' },
      { type: 'exec', name: 'exec-1', argv: ['/bin/true'], timeoutSeconds: 60, retries: 0, cwd: null, env: {}, passEnv: [] },
      {
        type: 'http',
        name: 'http-2',
        method: 'POST',
        url: 'http://lb/x',
        headers: {},
        body: undefined,
        timeoutSeconds: 10,
        retries: 2,
        backoffSeconds: 1,
      },
    ]);
    assert.equal(rule.onCancel[0]!.name, 'undo');
  });

  it('reads a full config, keeping ${env:...} references as written', () => {
    const config = parseAgentConfig(
      lines(
        'endpoint: http://127.0.0.1:8169/vms/web-0',
        'apiVersion: "2019-08-01"',
        'pollIntervalSeconds: 0.5',
        'vmName: web-0',
        'journal: /tmp/j.json',
        'journalUnwritable: {policy: hold, prepareWithinSeconds: 300}',
        'listen: "[::1]:9000"',
        'leader: {mode: self, standby: {afterSeconds: 5, events: all}}',
        'readyWithinSeconds: 3',
        'shutdownGraceSeconds: 0',
        'rules:',
        '  - name: r',
        '    match:',
        '      eventType: [reboot, REDEPLOY]',
        '      eventSource: User',
        '      status: Scheduled',
        '      durationInSeconds: {min: 1, max: 10}',
        '      affectsThisVm: false',
        '      description: "^host .*maintenance"',
        '    actions:',
        '      - type: http',
        '        method: PUT',
        '        url: "https://${env:LB_HOST}/drain"',
        '        headers: {Authorization: "Bearer ${env:LB_TOKEN}"}',
        '        body: {drain: true}',
        '        timeoutSeconds: 3',
        '        retries: 0',
        '        backoffSeconds: 0.5',
        '      - {type: exec, argv: [a, b], cwd: /srv, env: {MODE: fast}, passEnv: [HTTPS_PROXY], timeoutSeconds: 5, retries: 4}',
        '      - {type: log, message: hi, level: error}',
        '    approval: never',
        '    approvalMarginSeconds: 12',
      ),
      'agent.yaml',
    );
    assert.equal(config.endpoint, 'http://127.0.0.1:8169/vms/web-0');
    assert.equal(config.apiVersion, '2019-08-01');
    assert.equal(config.pollIntervalSeconds, 0.5);
    assert.equal(config.vmName, 'web-0');
    assert.equal(config.journal, '/tmp/j.json');
    assert.deepEqual(config.journalUnwritable, { policy: 'hold', prepareWithinSeconds: 300 });
    assert.equal(config.listen, '[::1]:9000');
    assert.deepEqual(config.leader, { mode: 'self', standby: { afterSeconds: 5, events: 'all' } });
    assert.equal(config.readyWithinSeconds, 3);
    assert.equal(config.shutdownGraceSeconds, 0);
    const rule = config.rules[0]!;
    assert.deepEqual(rule.match, {
      eventType: ['reboot', 'REDEPLOY'],
      eventSource: ['User'],
      status: ['Scheduled'],
      durationInSeconds: { min: 1, max: 10 },
      affectsThisVm: false,
      description: '^host .*maintenance',
    });
    assert.deepEqual(rule.actions[0], {
      type: 'http',
      name: 'http-0',
      method: 'PUT',
      url: 'https://${env:LB_HOST}/drain',
      headers: { Authorization: 'Bearer ${env:LB_TOKEN}' },
      body: { drain: true },
      timeoutSeconds: 3,
      retries: 0,
      backoffSeconds: 0.5,
    });
    assert.deepEqual(rule.actions[1], {
      type: 'exec',
      name: 'exec-1',
      argv: ['a', 'b'],
      timeoutSeconds: 5,
      retries: 4,
      cwd: '/srv',
      env: { MODE: 'fast' },
      passEnv: ['HTTPS_PROXY'],
    });
    assert.deepEqual(rule.actions[2], { type: 'log', name: 'log-2', message: 'hi', level: 'error' });
    assert.equal(rule.approval, 'never');
    assert.equal(rule.approvalMarginSeconds, 12);
  });

  it('checks journalUnwritable and passEnv, each problem at its line and column', () => {
    assert.throws(
      () =>
        parseAgentConfig(
          lines(
            'journalUnwritable:',
            '  policy: run-anyway',
            '  prepareWithinSeconds: -5',
            'rules:',
            '  - name: r',
            '    actions:',
            '      - {type: exec, argv: [a], passEnv: [OK_NAME, "BAD-NAME"]}',
          ),
          'agent.yaml',
        ),
      (err: Error) => {
        assert.deepEqual((err as AgentConfigError).problems, [
          'agent.yaml:2:11: journalUnwritable.policy: expected prepare-before-notbefore or hold',
          'agent.yaml:3:25: journalUnwritable.prepareWithinSeconds: must be at least 0 seconds',
          'agent.yaml:7:52: rules[0].actions[0].passEnv[1]: expected a variable name (letters, digits, _)',
        ]);
        return true;
      },
    );
  });

  it('turns the metrics server off with null or false', () => {
    assert.equal(parseAgentConfig(lines('listen: null', 'rules: [{name: r}]'), 'a.yaml').listen, null);
    assert.equal(parseAgentConfig(lines('listen: false', 'rules: [{name: r}]'), 'a.yaml').listen, null);
  });

  it('lists every bad field at once, each at its line and column, in file order', () => {
    const got = problems(
      lines(
        'endpoint: ftp://x', // 1
        'pollIntervalSeconds: 100', // 2
        'listen: nowhere', // 3
        'bogus: 1', // 4
        'leader:', // 5
        '  mode: boss', // 6
        '  standby: {afterSeconds: 0}', // 7
        'rules:', // 8
        '  - name: a', // 9
        '    match:', // 10
        '      eventType: [Reboot, Rebot]', // 11
        '      durationInSeconds: {min: 10, max: 5}', // 12
        '    actions:', // 13
        '      - type: exec', // 14
        '        argv: [sh]', // 15
        '        retries: -1', // 16
        '        timeout: 5', // 17
        '      - type: http', // 18
        '        url: "https://lb/${LB}"', // 19
        '        headers: {X-Count: 1}', // 20
        '      - type: teleport', // 21
        '  - approval: later', // 22
      ),
    );
    assert.deepEqual(got, [
      'agent.yaml:1:11: endpoint: expected an http:// or https:// URL',
      'agent.yaml:2:22: pollIntervalSeconds: must be between 0.2 and 60 seconds',
      'agent.yaml:3:9: listen: expected HOST:PORT (e.g. 127.0.0.1:9464), or null or false to turn the server off',
      'agent.yaml:4:1: bogus: unknown key "bogus"',
      'agent.yaml:6:9: leader.mode: expected first, self or any',
      'agent.yaml:7:27: leader.standby.afterSeconds: must be at least 1 second',
      'agent.yaml:11:27: rules[0].match.eventType[1]: unknown event type "Rebot"; expected one of Freeze, Reboot, Redeploy, Preempt, Terminate',
      'agent.yaml:12:41: rules[0].match.durationInSeconds.max: max (5) is below min (10)',
      'agent.yaml:16:18: rules[0].actions[0].retries: must be 0 or more',
      'agent.yaml:17:9: rules[0].actions[0].timeout: unknown key "timeout"',
      'agent.yaml:19:14: rules[0].actions[1].url: malformed variable reference; write ${env:NAME}',
      'agent.yaml:20:28: rules[0].actions[1].headers.X-Count: expected a string (quote numbers and booleans)',
      'agent.yaml:21:15: rules[0].actions[2].type: expected type exec, http, log or kubernetes',
      'agent.yaml:22:5: rules[1].name: missing (required)',
      'agent.yaml:22:15: rules[1].approval: expected never, immediately or after-actions',
    ]);
  });

  it('says argv must be an array when given a shell string', () => {
    assert.deepEqual(
      problems(lines('rules:', '  - name: r', '    actions:', '      - type: exec', '        argv: "systemctl stop web && echo done"')),
      ['agent.yaml:5:15: rules[0].actions[0].argv: argv must be an array, never a shell string'],
    );
    assert.deepEqual(problems(lines('rules:', '  - name: r', '    onComplete: [{type: exec, argv: []}]')), [
      'agent.yaml:3:37: rules[0].onComplete[0].argv: argv must name a program',
    ]);
  });

  it('reports a bad description pattern at its line', () => {
    assert.deepEqual(problems(lines('rules:', '  - name: r', '    match:', '      description: "(unclosed"')), [
      'agent.yaml:4:20: rules[0].match.description: not a valid regular expression: Unterminated group',
    ]);
  });

  it('rejects duplicate rule names where the second is written', () => {
    assert.deepEqual(problems(lines('rules:', '  - name: drain', '  - name: other', '  - name: drain')), [
      'agent.yaml:4:11: rules[2].name: duplicate rule name "drain" (first at rules[0])',
    ]);
  });

  it('needs at least one rule', () => {
    assert.deepEqual(problems(lines('pollIntervalSeconds: 1')), ['agent.yaml:1:1: rules: missing (required)']);
    assert.deepEqual(problems(lines('rules: []')), ['agent.yaml:1:8: rules: at least one rule is needed']);
  });

  it('rejects a body on a GET and a URL that is not http', () => {
    assert.deepEqual(
      problems(lines('rules:', '  - name: r', '    actions:', '      - {type: http, method: GET, url: "file:///etc/passwd", body: {}}')),
      [
        'agent.yaml:4:40: rules[0].actions[0].url: expected an http:// or https:// URL',
        'agent.yaml:4:62: rules[0].actions[0].body: a GET request carries no body',
      ],
    );
  });

  it('reports syntax errors, empty files and the wrong top level with positions', () => {
    assert.match(problems('rules: [\n')[0]!, /^agent\.yaml:2:1: syntax error: /);
    assert.match(problems('rules: [{name: a}]\nrules: []\n')[0]!, /^agent\.yaml:2:1: syntax error: Map keys must be unique/);
    assert.deepEqual(problems(''), ['agent.yaml:1:1: the file is empty; expected a mapping with "rules"']);
    assert.deepEqual(problems('- a\n'), ['agent.yaml:1:1: expected a mapping of settings']);
  });

  it('reads JSON, with positions and JSON syntax errors', () => {
    const json = JSON.stringify({ rules: [{ name: 'r', actions: [{ type: 'exec', argv: 'ls' }] }] }, null, 2);
    assert.deepEqual(problems(json, 'agent.json'), [
      'agent.json:8:19: rules[0].actions[0].argv: argv must be an array, never a shell string',
    ]);
    assert.match(problems('{"rules": [}', 'agent.json')[0]!, /^agent\.json:1:12: JSON syntax error: /);
    assert.equal(parseAgentConfig('{"rules": [{"name": "r"}]}', 'agent.json').rules[0]!.name, 'r');
  });
});

describe('loadAgentConfig', () => {
  it('reads the annotated example', () => {
    const config = loadAgentConfig(example);
    assert.deepEqual(config.leader, { mode: 'first', standby: { afterSeconds: 60, events: 'user' } });
    assert.deepEqual(
      config.rules.map((r) => [r.name, r.approval]),
      [
        ['short-freeze', 'immediately'],
        ['user-initiated', 'immediately'],
        ['drain-before-maintenance', 'after-actions'],
        ['everything-else', 'never'],
      ],
    );
    const drain = config.rules[2]!;
    assert.deepEqual(drain.match.eventType, ['Reboot', 'Redeploy', 'Preempt', 'Terminate']);
    assert.equal(drain.match.affectsThisVm, true);
    assert.equal(drain.approvalMarginSeconds, 30);
    const [exec, http] = drain.actions;
    assert.ok(exec?.type === 'exec' && http?.type === 'http');
    assert.deepEqual(exec.argv, ['/usr/local/bin/drain', '--timeout', '120']);
    assert.equal(http.headers.Authorization, 'Bearer ${env:LB_TOKEN}');
    for (const list of [drain.onComplete, drain.onCancel]) {
      assert.ok(list[0]?.type === 'exec');
      assert.deepEqual(list[0].argv, ['/usr/local/bin/undrain']);
    }
    assert.deepEqual(config.rules[0]!.match.durationInSeconds, { min: null, max: 9 });
    assert.deepEqual(config.rules[1]!.match.eventSource, ['User']);
  });

  it('names the file when it cannot be read', () => {
    const path = join(dir, 'missing.yaml');
    assert.throws(
      () => loadAgentConfig(path),
      (err: unknown) => err instanceof AgentConfigError && err.message === `${path}: cannot read the agent config: no such file`,
    );
  });

  it('reports problems under the file name', () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, lines('rules:', '  - name: r', '    approval: soon'));
    assert.throws(() => loadAgentConfig(path), {
      message: `${path}:3:15: rules[0].approval: expected never, immediately or after-actions`,
    });
  });
});

describe('parseAgentConfig: kubernetes', () => {
  it('reads the kubernetes action and section, with the budget defaults', () => {
    const config = parseAgentConfig(
      lines(
        'rules:',
        '  - name: drain',
        '    actions: [{type: kubernetes}, {type: kubernetes, name: cordon-only, drain: false, timeoutSeconds: 20}]',
        'kubernetes:',
        '  nodeName: node-a',
        '  policy: {Freeze: cordon, reboot: drain}',
        '  taint: "forewarn.io/maintenance={type}:NoSchedule"',
        '  budget: {slots: 2}',
      ),
      'agent.yaml',
    );
    assert.deepEqual(config.rules[0]!.actions, [
      { type: 'kubernetes', name: 'kubernetes-0', drain: true, timeoutSeconds: 600 },
      { type: 'kubernetes', name: 'cordon-only', drain: false, timeoutSeconds: 20 },
    ]);
    assert.deepEqual(config.kubernetes, {
      nodeName: 'node-a',
      policy: { Freeze: 'cordon', reboot: 'drain' },
      marginSeconds: 5,
      taint: 'forewarn.io/maintenance={type}:NoSchedule',
      localStorage: 'evict',
      readyTimeoutSeconds: 900,
      budget: { slots: 2, namespace: 'forewarn', name: 'forewarn-maintenance', leaseDurationSeconds: 900, minPrepareSeconds: 60 },
    });
  });

  it('names each bad kubernetes setting at its line and column', () => {
    assert.deepEqual(
      problems(
        lines(
          'rules:',
          '  - name: r',
          '    actions: [{type: kubernetes, drain: yes please}]',
          'kubernetes:',
          '  policy: {Reboot: evict, Teleport: drain}',
          '  taint: "maintenance"',
          '  budget: {slots: 0, namespace: Forewarn}',
        ),
      ),
      [
        'agent.yaml:3:41: rules[0].actions[0].drain: expected true or false',
        'agent.yaml:5:20: kubernetes.policy.Reboot: expected none, cordon, drain',
        'agent.yaml:5:27: kubernetes.policy.Teleport: unknown event type "Teleport"; expected one of Freeze, Reboot, Redeploy, Preempt, Terminate',
        'agent.yaml:6:10: kubernetes.taint: expected key=value:Effect, Effect one of NoSchedule, PreferNoSchedule, NoExecute',
        'agent.yaml:7:19: kubernetes.budget.slots: must be at least 1',
        'agent.yaml:7:33: kubernetes.budget.namespace: expected a Kubernetes name: lowercase letters, digits, - and .',
      ],
    );
    // A real API server refuses a fractional leaseDurationSeconds (an int32) when it decodes the Lease.
    assert.deepEqual(
      problems(lines('rules:', '  - name: r', '    actions: []', 'kubernetes:', '  budget: {slots: 1, leaseDurationSeconds: 30.5}')),
      ['agent.yaml:5:44: kubernetes.budget.leaseDurationSeconds: expected a whole number of seconds'],
    );
  });
});

describe('parseAgentConfig: budget (fleet budget outside Kubernetes)', () => {
  it('reads an etcd and an azure-blob budget, with the defaults', () => {
    const etcd = parseAgentConfig(
      lines(
        'rules:',
        '  - name: r',
        'budget:',
        '  backend: etcd',
        '  endpoints: [http://10.0.0.4:2379, http://10.0.0.5:2379]',
        '  slots: 2',
        '  group: kafka',
      ),
      'agent.yaml',
    );
    assert.deepEqual(etcd.budget, {
      backend: 'etcd',
      endpoints: ['http://10.0.0.4:2379', 'http://10.0.0.5:2379'],
      containerUrl: null,
      clientId: null,
      slots: 2,
      group: 'kafka',
      leaseSeconds: 900,
      minPrepareSeconds: 60,
      marginSeconds: 5,
    });
    const blob = parseAgentConfig(
      lines(
        'rules:',
        '  - name: r',
        'budget:',
        '  backend: azure-blob',
        '  containerUrl: https://fleet.blob.core.windows.net/forewarn',
        '  clientId: 00000000-0000-0000-0000-000000000001',
        '  slots: 1',
        '  group: es-hot',
        '  leaseSeconds: 600',
        '  minPrepareSeconds: 30',
        '  marginSeconds: 10',
      ),
      'agent.yaml',
    );
    assert.deepEqual(blob.budget, {
      backend: 'azure-blob',
      endpoints: [],
      containerUrl: 'https://fleet.blob.core.windows.net/forewarn',
      clientId: '00000000-0000-0000-0000-000000000001',
      slots: 1,
      group: 'es-hot',
      leaseSeconds: 600,
      minPrepareSeconds: 30,
      marginSeconds: 10,
    });
  });

  it('names each bad budget setting at its line and column', () => {
    assert.deepEqual(problems(lines('rules:', '  - name: r', 'budget:', '  backend: consul', '  slots: 1', '  group: g')), [
      'agent.yaml:4:12: budget.backend: expected backend etcd or azure-blob',
    ]);
    assert.deepEqual(
      problems(
        lines(
          'rules:',
          '  - name: r',
          'budget:',
          '  backend: etcd',
          '  endpoints: []',
          '  slots: 0',
          '  group: "a/b"',
          '  leaseSeconds: 1',
        ),
      ),
      [
        'agent.yaml:5:14: budget.endpoints: name at least one etcd endpoint',
        'agent.yaml:6:10: budget.slots: must be at least 1',
        'agent.yaml:7:10: budget.group: expected letters, digits, ., _ and -, starting and ending with a letter or digit',
        'agent.yaml:8:17: budget.leaseSeconds: must be at least 3 seconds',
      ],
    );
    assert.deepEqual(
      problems(
        lines(
          'rules:',
          '  - name: r',
          'budget:',
          '  backend: azure-blob',
          '  containerUrl: "https://a.blob.core.windows.net/c?sv=2024&sig=secret"',
          '  slots: 1',
          '  group: g',
          '  endpoints: [http://x:2379]',
        ),
      ),
      [
        'agent.yaml:5:17: budget.containerUrl: no query string: a SAS token does not belong in the config file',
        'agent.yaml:8:3: budget.endpoints: unknown key "endpoints"',
      ],
    );
    assert.deepEqual(
      problems(lines('rules:', '  - name: r', 'budget:', '  backend: etcd', '  endpoints: [https://e:2379]', '  slots: 1', '  group: g')),
      ['agent.yaml:5:15: budget.endpoints[0]: expected an http:// endpoint: TLS to etcd is not supported yet'],
    );
    assert.deepEqual(problems(lines('rules:', '  - name: r', 'budget:', '  backend: etcd', '  slots: 1', '  group: g')), [
      'agent.yaml:4:3: budget.endpoints: missing (required)',
    ]);
  });
});

describe('loadAgentConfig: the fleet budget examples', () => {
  for (const [file, backend] of [
    ['agent-budget-etcd.yaml', 'etcd'],
    ['agent-budget-azure-blob.yaml', 'azure-blob'],
  ] as const) {
    it(`reads examples/${file}`, () => {
      const config = loadAgentConfig(fileURLToPath(new URL(`../../examples/${file}`, import.meta.url)));
      assert.equal(config.budget?.backend, backend);
      assert.ok(
        config.rules.every((r) => r.approval === 'after-actions'),
        'the examples approve through the barrier',
      );
    });
  }
});
