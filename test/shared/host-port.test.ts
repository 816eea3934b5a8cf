// The one HOST:PORT parser: every flag, config field and option that says where to listen reads through it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_HOST,
  HostPortError,
  PORT_RANGE,
  formatHostPort,
  hostProblem,
  parseHostPort,
  type HostPortProblemKind,
} from '../../src/shared/host-port.js';
import { parseHostPort as parseFlag } from '../../src/cli/address.js';
import { parseListen } from '../../src/agent/server.js';
import { parseAgentConfig } from '../../src/agent/config.js';
import { resolveStartOptions } from '../../src/emulator/library-options.js';

describe('parseHostPort', () => {
  const good: [string, string, number][] = [
    ['127.0.0.1:8169', '127.0.0.1', 8169],
    ['0.0.0.0:0', '0.0.0.0', 0],
    ['localhost:1', 'localhost', 1],
    ['my-host.example:65535', 'my-host.example', 65535],
    ['[::1]:80', '::1', 80],
    ['[fe80::1]:443', 'fe80::1', 443],
    ['[::]:0', '::', 0],
    ['9000', DEFAULT_HOST, 9000],
    [':9000', DEFAULT_HOST, 9000],
    ['  10.0.0.1:80  ', '10.0.0.1', 80],
  ];
  for (const [text, host, port] of good) {
    it(`reads ${JSON.stringify(text)}`, () => assert.deepEqual(parseHostPort(text, '--imds'), { host, port }));
  }

  const bad: [string, HostPortProblemKind, RegExp][] = [
    ['', 'form', /^--imds: expected HOST:PORT \(e\.g\. 127\.0\.0\.1:8169\), got ""$/],
    ['host', 'form', /expected HOST:PORT .*got "host"/],
    ['[::1]', 'form', /expected HOST:PORT/],
    ['::1', 'form', /expected HOST:PORT/],
    ['a:b:80', 'form', /expected HOST:PORT/],
    ['host:', 'port', /port must be a number from 0 to 65535, got ""/],
    ['host:65536', 'port', /^--imds: port must be a number from 0 to 65535, got "65536"$/],
    ['host:99999999999', 'port', /got "99999999999"/],
    ['host:-1', 'port', /got "-1"/],
    ['host:1.5', 'port', /got "1.5"/],
    ['host: 80', 'port', /got " 80"/],
    ['::1:80', 'host', /^--imds: write an IPv6 address in brackets, as \[::1\]:80$/],
    ['[nope]:80', 'host', /"nope" in brackets is not an IPv6 address/],
    ['[]:80', 'host', /"" in brackets is not an IPv6 address/],
    ['[127.0.0.1]:80', 'host', /in brackets is not an IPv6 address/],
    ['a b:80', 'host', /^--imds: "a b" is not a host name or address$/],
    ['h/x:80', 'host', /"h\/x" is not a host name or address/],
    ['user@h:80', 'host', /"user@h" is not a host name or address/],
  ];
  for (const [text, kind, message] of bad) {
    it(`refuses ${JSON.stringify(text)} (${kind}), naming the field`, () => {
      assert.throws(
        () => parseHostPort(text, '--imds'),
        (err: unknown) => {
          assert.ok(err instanceof HostPortError, String(err));
          assert.equal(err.kind, kind);
          assert.equal(err.field, '--imds');
          assert.ok(err.message.startsWith('--imds: '), err.message);
          assert.match(err.message, message);
          return true;
        },
      );
    });
  }

  it('shows the caller its own example', () => {
    assert.throws(
      () => parseHostPort('nowhere', 'listen', '127.0.0.1:9464'),
      /^HostPortError: listen: expected HOST:PORT \(e\.g\. 127\.0\.0\.1:9464\)/,
    );
  });

  it('has the port range every user checks against', () => assert.deepEqual(PORT_RANGE, { min: 0, max: 65535 }));
});

describe('hostProblem and formatHostPort', () => {
  it('accepts names and addresses, IPv6 bare, and refuses the rest', () => {
    for (const ok of ['localhost', '127.0.0.1', '::1', 'fe80::1', 'a.example']) assert.equal(hostProblem(ok), null, ok);
    for (const bad of ['', ' ', 'a b', '[::1]', 'x:y', 'a/b']) assert.match(hostProblem(bad) ?? '', /is not a host name or address/, bad);
  });

  it('brackets IPv6 only', () => {
    assert.equal(formatHostPort('127.0.0.1', 80), '127.0.0.1:80');
    assert.equal(formatHostPort('::1', 80), '[::1]:80');
    assert.equal(formatHostPort('localhost', 0), 'localhost:0');
  });
});

describe('every user reads HOST:PORT the same way', () => {
  const inputs = ['127.0.0.1:9464', '[::1]:0', ':9464', '9464', 'nowhere', 'h:65536', '::1:80', 'a b:80'];
  const outcome = (f: () => unknown) => {
    try {
      return f();
    } catch {
      return 'refused';
    }
  };

  it('the CLI flags, the agent status server and the agent config agree with the parser', () => {
    for (const text of inputs) {
      const expected = outcome(() => parseHostPort(text, 'x'));
      assert.deepEqual(
        outcome(() => parseFlag(text, '--imds')),
        expected,
        `--imds ${text}`,
      );
      assert.deepEqual(
        outcome(() => parseListen(text)),
        expected,
        `listen ${text}`,
      );
      const config = outcome(() => parseAgentConfig(`listen: ${JSON.stringify(text)}\nrules: [{ name: r }]\n`, 'agent.yaml'));
      assert.equal(config === 'refused', expected === 'refused', `config listen ${text}`);
    }
  });

  it('a CLI flag is a usage error naming the flag', () => {
    assert.throws(() => parseFlag('h:65536', '--control'), {
      name: 'UsageError',
      message: '--control: port must be a number from 0 to 65535, got "65536"',
    });
  });

  it('the agent config names the field and line; a value that is not HOST:PORT at all keeps its wording', () => {
    const problems = (listen: string) => {
      try {
        parseAgentConfig(`listen: "${listen}"\nrules: [{ name: r }]\n`, 'agent.yaml');
        return [];
      } catch (err) {
        return (err as { problems: string[] }).problems;
      }
    };
    assert.deepEqual(problems('h:70000'), ['agent.yaml:1:9: listen: port must be a number from 0 to 65535, got "70000"']);
    assert.deepEqual(problems('nowhere'), [
      'agent.yaml:1:9: listen: expected HOST:PORT (e.g. 127.0.0.1:9464), or null or false to turn the server off',
    ]);
  });

  it('library options check host and port with the same rules', () => {
    assert.throws(
      () => resolveStartOptions({ imds: { port: PORT_RANGE.max + 1 } }),
      /options\.imds\.port: must be a whole number from 0 to 65535/,
    );
    assert.throws(() => resolveStartOptions({ control: { host: 'a b' } }), /options\.control\.host: "a b" is not a host name or address/);
    assert.deepEqual(resolveStartOptions({ imds: { host: '::1' } }).listen.imds, { host: '::1', port: 0 });
    assert.deepEqual(resolveStartOptions({}).listen.control, { host: DEFAULT_HOST, port: 0 });
  });
});
