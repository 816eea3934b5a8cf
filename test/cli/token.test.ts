// The control token from a file or the environment, never only from argv where `ps` shows it; and --allow-host.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseEmulatorOptions, startEmulator } from '../../src/cli/emulator.js';
import { run } from '../../src/cli/program.js';
import { CliProcess, assertNoStack, captureIo } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

const dir = tempDir('token');

const TOKEN = 'file-token-4f2c9e';

/** The emulator's options on free loopback ports with a manual clock, quiet, and `over`. */
const loopbackOptions = (over: Parameters<typeof parseEmulatorOptions>[0]) =>
  parseEmulatorOptions({ imds: '127.0.0.1:0', control: '127.0.0.1:0', clock: 'manual', logLevel: 'silent', ...over });

/** The control API at `controlUrl` refuses a call without TOKEN and takes one with it. */
async function assertTokenRequired(controlUrl: string): Promise<void> {
  assert.equal((await fetch(`${controlUrl}/v1/fleet`)).status, 401);
  assert.equal((await fetch(`${controlUrl}/v1/fleet`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 200);
}

function tokenFile(name: string, text: string, mode = 0o600): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

describe('--token-file', () => {
  it('reads the token, trimmed; a private file gives no warning, a readable one does', () => {
    const path = tokenFile('private', `  ${TOKEN}\n`);
    const options = parseEmulatorOptions({ tokenFile: path }, { FOREWARN_TOKEN: 'env-loses' });
    assert.equal(options.token, TOKEN);
    assert.deepEqual(options.warnings, []);

    const shared = tokenFile('shared', TOKEN, 0o644);
    const loose = parseEmulatorOptions({ tokenFile: shared });
    assert.equal(loose.token, TOKEN);
    assert.equal(loose.warnings?.length, 1);
    assert.match(loose.warnings![0]!, new RegExp(`${shared} is readable by its group and other users \\(mode 0644\\).*chmod 600`));
  });

  it('refuses --token with --token-file, and tokens that cannot travel in a header', () => {
    const path = tokenFile('both', TOKEN);
    assert.throws(() => parseEmulatorOptions({ token: 'x', tokenFile: path }), {
      name: 'UsageError',
      message: /--token or with --token-file, not both/,
    });
    assert.throws(() => parseEmulatorOptions({ tokenFile: tokenFile('two-words', 'abc def\n') }), /two-words: the token must be one word/);
    assert.throws(() => parseEmulatorOptions({}, { FOREWARN_TOKEN: 'a b' }), /FOREWARN_TOKEN: the token must be one word/);
    assert.throws(() => parseEmulatorOptions({ token: ' ' }), /--token must not be empty/);
  });

  it('exits 2 naming the file when it is empty, missing, a directory or too big', async () => {
    const folder = join(dir, 'a-directory');
    mkdirSync(folder);
    const cases: [string, RegExp][] = [
      [tokenFile('empty', ' \n\n'), /the file is empty/],
      [join(dir, 'missing'), /cannot read it: no such file/],
      [folder, /is a directory/],
      [tokenFile('big', 'x'.repeat(70_000)), /larger than 64 KiB/],
    ];
    for (const [path, why] of cases) {
      const io = captureIo();
      assert.equal(await run(['emulator', '--token-file', path, '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0'], io), 2, path);
      assert.ok(io.err.startsWith(`forewarn: --token-file ${path}: `), io.err);
      assert.match(io.err, why);
      assertNoStack(io.err);
    }
  });

  it('works against a live emulator, and the banner reads the token from the file', async () => {
    const path = tokenFile('live', `${TOKEN}\n`);
    const options = loopbackOptions({ tokenFile: path });
    const io = captureIo();
    const { emulator, controlUrl } = await startEmulator(options, io);
    try {
      assert.equal(io.err, '');
      assert.ok(io.out.includes(`-H "Authorization: Bearer $(cat ${path})"`), io.out);
      assert.ok(!io.out.includes(TOKEN));
      await assertTokenRequired(controlUrl);
    } finally {
      await emulator.close();
    }
  });
});

describe('--token on argv', () => {
  it('still works, with a warning that ps shows it', async () => {
    const options = loopbackOptions({ token: TOKEN });
    const io = captureIo();
    const { emulator, controlUrl } = await startEmulator(options, io);
    try {
      assert.match(
        io.err,
        /^forewarn: warning: --token puts the token on the command line, where `ps` shows it .* FOREWARN_TOKEN or --token-file/,
      );
      assert.equal((await fetch(`${controlUrl}/v1/fleet`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 200);
    } finally {
      await emulator.close();
    }
    const quiet = parseEmulatorOptions({}, { FOREWARN_TOKEN: TOKEN });
    assert.equal(quiet.token, TOKEN);
    assert.deepEqual(quiet.warnings, []);
  });
});

describe('the emulator process', () => {
  /** Starts `forewarn emulator` and waits for its Control URL. */
  async function start(args: string[], env: Record<string, string>) {
    const emulator = new CliProcess(['emulator', '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0', '--clock', 'manual', ...args], env);
    const [, control] = await emulator.waitForOutput(/^Control:\s+(http:\/\/\S+)$/m);
    return { pid: emulator.child.pid!, control: control!, stop: () => emulator.stop(), stderr: () => emulator.stderr };
  }

  for (const [how, args, env] of [
    ['--token-file', ['--token-file', 'TOKEN_FILE'], {}],
    ['FOREWARN_TOKEN', [], { FOREWARN_TOKEN: TOKEN }],
  ] as const) {
    it(`given by ${how}, the token is in force and not on the process's command line`, async (t) => {
      if (!existsSync('/proc/self/cmdline')) return t.skip('no /proc here to read a command line from');
      const path = tokenFile(`proc-${how}`, TOKEN);
      const emulator = await start(
        args.map((a) => (a === 'TOKEN_FILE' ? path : a)),
        env,
      );
      try {
        const cmdline = readFileSync(`/proc/${emulator.pid}/cmdline`, 'utf8').split('\0');
        assert.ok(cmdline.includes('emulator'), cmdline.join(' '));
        assert.ok(!cmdline.some((arg) => arg.includes(TOKEN)), `the token is on the command line: ${cmdline.join(' ')}`);
        await assertTokenRequired(emulator.control);
        assert.doesNotMatch(emulator.stderr(), /warning/);
      } finally {
        await emulator.stop();
      }
    });
  }
});

describe('--allow-host', () => {
  it('lets a named Host reach the control API without a token; a bad name exits 2', async () => {
    const options = loopbackOptions({ allowHost: ['Lab.Example', 'fd00::5'] });
    assert.deepEqual(options.allowHosts, ['lab.example', '[fd00::5]']);
    const { emulator } = await startEmulator(options, captureIo());
    try {
      const fleet = (host: string) => emulator.control.inject({ method: 'GET', url: '/v1/fleet', headers: { host } });
      assert.equal((await fleet('lab.example:8170')).statusCode, 200);
      assert.equal((await fleet('[fd00::5]:8170')).statusCode, 200);
      assert.equal((await fleet('other.example:8170')).statusCode, 403);
    } finally {
      await emulator.close();
    }
    const io = captureIo();
    assert.equal(await run(['emulator', '--allow-host', 'lab.example:8170'], io), 2);
    assert.match(io.err, /^forewarn: --allow-host: "lab\.example:8170" has a port; give the name or address without a port/);
    assertNoStack(io.err);
  });
});

describe('--token-file for the commands that call the control API', () => {
  it('trigger and scenario run read it, and refuse it together with --token', async () => {
    const { parseTriggerArgs } = await import('../../src/cli/trigger.js');
    const { parseScenarioRunArgs } = await import('../../src/cli/scenario.js');
    const path = tokenFile('client', `${TOKEN}\n`);
    assert.equal(parseTriggerArgs('freeze', { vm: ['a'], tokenFile: path }, { FOREWARN_TOKEN: 'env-loses' }).token, TOKEN);
    assert.equal(parseScenarioRunArgs('hardware-failure', { control: 'http://127.0.0.1:1', tokenFile: path }).token, TOKEN);
    assert.throws(() => parseTriggerArgs('freeze', { vm: ['a'], token: 'x', tokenFile: path }), /not both/);
    assert.equal(parseTriggerArgs('freeze', { vm: ['a'] }, { FOREWARN_TOKEN: 'from-env' }).token, 'from-env');
  });
});
