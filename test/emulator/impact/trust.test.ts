// Real impact as an attacker on the same machine would try it: the emulator runs as root (as in CI and many
// containers) and the attacker is `nobody`. Each test is a fault a review reproduced; the comment names its row.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertNoStack, runCli } from '../../support/cli.js';
import { tempDir } from '../../support/temp.js';
import { waitFor } from '../../support/wait.js';
import { spawnEmulator, type SpawnedEmulator } from '../../cli/spawn-emulator.js';

const NOBODY = 65534;
const TOKEN = 'impact-trust-test-token';
const dir = tempDir('impact-trust');
const tokenFile = join(dir, 'token');
writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });

before(() => {
  // These tests act as another user for real: they need root, and CI runs as root.
  assert.equal(process.getuid?.(), 0, 'the impact trust tests run as root (CI does): they act as nobody with setpriv');
});

/** Processes the tests start themselves, killed at the end whatever happened. */
const started: ChildProcess[] = [];
after(() => {
  for (const child of started) child.kill('SIGKILL');
});

function alive(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** A `sleep` of the test's own (root's, or `nobody`'s with `asNobody`), to be bound and watched. */
async function sleeper(asNobody = false): Promise<number> {
  const argv = asNobody ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', 'sleep', '300'] : ['sleep', '300'];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' });
  started.push(child);
  await new Promise((resolve) => child.once('spawn', resolve));
  await waitFor('the sleeper to exec', () => readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').startsWith('sleep'));
  return child.pid!;
}

interface Answer {
  status: number;
  body: { error?: string; [key: string]: unknown };
}

/** A control API request from the test (root), with the token unless told otherwise. */
async function call(emu: SpawnedEmulator, method: string, path: string, body?: object, token: string | null = TOKEN): Promise<Answer> {
  const res = await fetch(`${emu.ready.controlUrl}${path}`, {
    method,
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(5_000),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Answer['body']) };
}

/** The same request sent by `nobody`, without any token: what any local user can do. */
function callAsNobody(emu: SpawnedEmulator, method: string, path: string, body?: object): Answer {
  const script = `
    const [url, method, body] = process.argv.slice(1);
    const res = await fetch(url, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body || undefined });
    console.log(JSON.stringify({ status: res.status, body: await res.json().catch(() => ({})) }));`;
  const run = spawnSync(
    'setpriv',
    [
      `--reuid=${NOBODY}`,
      `--regid=${NOBODY}`,
      '--clear-groups',
      process.execPath,
      '--input-type=module',
      '-e',
      script,
      `${emu.ready.controlUrl}${path}`,
      method,
      body ? JSON.stringify(body) : '',
    ],
    { cwd: '/', encoding: 'utf8', timeout: 10_000 },
  );
  assert.equal(run.status, 0, `the request as nobody ran: ${run.stderr}`);
  return JSON.parse(run.stdout) as Answer;
}

/** The emulator as a process, on a manual clock, with real impact on and a token. */
function impactEmulator(env: Record<string, string> = {}): Promise<SpawnedEmulator> {
  return spawnEmulator(['--clock', 'manual', '--impact', '--token-file', tokenFile, '--log-level', 'silent'], env);
}

/** Triggers a user restart of vm0, approves it and lets its whole impact pass. */
async function rebootVm0(emu: SpawnedEmulator): Promise<void> {
  const created = await call(emu, 'POST', '/v1/operations', { type: 'restart', vms: ['vm0'] });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const [id] = created.body.events as string[];
  const approve = await fetch(`${emu.ready.imdsUrl}/metadata/scheduledevents?api-version=2020-07-01`, {
    method: 'POST',
    headers: { metadata: 'true', 'content-type': 'application/json' },
    body: JSON.stringify({ StartRequests: [{ EventId: id }] }),
  });
  assert.equal(approve.status, 200);
  assert.equal((await call(emu, 'POST', '/v1/clock/advance', { seconds: 181 })).status, 200);
}

/** Pids of live processes whose command line is exactly `argv`. */
function processesRunning(argv: string[]): number[] {
  const wanted = `${argv.join('\0')}\0`;
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8') === wanted && alive(Number(name))) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

describe('real impact is opt-in and needs the token (row 1)', () => {
  test('without --impact the process routes answer 403 naming --impact, and nobody’s command never runs', async () => {
    const emu = await spawnEmulator(['--clock', 'manual', '--log-level', 'silent']);
    try {
      const mark = join(dir, 'ran-as-root');
      for (const [method, body] of [
        ['PUT', { command: ['/bin/sh', '-c', `id >&2; touch ${mark}`] }],
        ['GET', undefined],
        ['DELETE', undefined],
      ] as const) {
        const answer = callAsNobody(emu, method, '/v1/vms/vm0/process', body);
        assert.equal(answer.status, 403, `${method}: ${JSON.stringify(answer)}`);
        assert.match(answer.body.error ?? '', /--impact/);
      }
      // Even from root on loopback: the routes are off, not merely guarded.
      const asRoot = await call(emu, 'PUT', '/v1/vms/vm0/process', { command: ['/bin/sh', '-c', `touch ${mark}`] }, null);
      assert.equal(asRoot.status, 403);
      assert.match(asRoot.body.error ?? '', /--impact/);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(existsSync(mark), false, 'no command ran');
    } finally {
      await emu.stop();
    }
  });

  test('--impact without a token exits 2 naming the token options', async () => {
    const run = await runCli(['emulator', '--impact', '--imds', '127.0.0.1:0', '--control', '127.0.0.1:0']);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /--impact/);
    assert.match(run.stderr, /--token-file/);
    assert.match(run.stderr, /FOREWARN_TOKEN/);
    assertNoStack(run.stderr);
  });

  test('with --impact, nobody without the token binds nothing: a root process bound by pid is never signalled', async () => {
    const emu = await impactEmulator();
    try {
      const victim = await sleeper();
      const mark = join(dir, 'ran-as-root-2');
      for (const body of [{ pid: victim }, { command: ['/bin/sh', '-c', `touch ${mark}`] }]) {
        const answer = callAsNobody(emu, 'PUT', '/v1/vms/vm0/process', body);
        assert.equal(answer.status, 401, JSON.stringify(answer));
      }
      await rebootVm0(emu);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.ok(alive(victim), 'the root process was not signalled');
      assert.equal(existsSync(mark), false, 'no command ran');
      assert.equal((await call(emu, 'GET', '/v1/vms/vm0/process')).status, 404, 'nothing is bound');
    } finally {
      await emu.stop();
    }
  });
});

describe('pidfiles are read safely and trusted only when they cannot be planted (rows 2, 3, 4)', () => {
  let emu: SpawnedEmulator;
  before(async () => {
    emu = await impactEmulator();
  });
  after(async () => {
    await emu.stop();
  });

  const bind = (body: object) => call(emu, 'PUT', '/v1/vms/vm0/process', body);

  test('a FIFO is refused at once and IMDS keeps answering; /dev/zero and a symlink are refused (row 2)', async () => {
    const fifo = join(dir, 'pid.fifo');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    const started = process.hrtime.bigint();
    const answer = await bind({ pidfile: fifo });
    assert.equal(answer.status, 400, JSON.stringify(answer));
    assert.match(answer.body.error ?? '', /not a regular file/);
    assert.ok(process.hrtime.bigint() - started < 2_000_000_000n, 'answered without waiting for a writer');
    const imds = await fetch(`${emu.ready.imdsUrl}/metadata/scheduledevents?api-version=2020-07-01`, {
      headers: { metadata: 'true' },
      signal: AbortSignal.timeout(2_000),
    });
    assert.equal(imds.status, 200);

    const zero = await bind({ pidfile: '/dev/zero' });
    assert.equal(zero.status, 400);
    assert.match(zero.body.error ?? '', /not a regular file/);

    const pidfile = join(dir, 'real.pid');
    writeFileSync(pidfile, `${await sleeper()}\n`, { mode: 0o644 });
    const link = join(dir, 'link.pid');
    symlinkSync(pidfile, link);
    const linked = await bind({ pidfile: link });
    assert.equal(linked.status, 400);
    assert.match(linked.body.error ?? '', /symbolic link/);
    assert.equal((await call(emu, 'GET', '/v1/fleet')).status, 200, 'the emulator lives on');
  });

  test('no error quotes what a file holds (row 3)', async () => {
    const secret = join(dir, 'secret');
    writeFileSync(secret, 'S3cr3t-root-only-pw\n', { mode: 0o600 });
    const machineId = join(dir, 'machine-id');
    writeFileSync(machineId, '0123456789abcdef0123456789abcdef\n', { mode: 0o444 });
    const big = join(dir, 'big');
    writeFileSync(big, `${'x'.repeat(60)}${'y'.repeat(4000)}`, { mode: 0o600 });
    for (const [file, content] of [
      [secret, 'S3cr3t'],
      [machineId, '0123456789'],
      [big, 'xxxxxxxx'],
    ] as const) {
      const answer = await bind({ pidfile: file });
      assert.equal(answer.status, 400, JSON.stringify(answer));
      assert.ok(!JSON.stringify(answer.body).includes(content), `the error does not quote ${file}: ${answer.body.error}`);
      assert.match(answer.body.error ?? '', /pidfile/);
    }
  });

  test('a pidfile another user owns or may write is refused (row 4)', async () => {
    const victim = await sleeper();
    const planted = join(dir, 'nobody-owns.pid');
    writeFileSync(planted, `${victim}\n`, { mode: 0o644 });
    chownSync(planted, NOBODY, NOBODY);
    let answer = await bind({ pidfile: planted });
    assert.equal(answer.status, 400, JSON.stringify(answer));
    assert.match(answer.body.error ?? '', /owned by user 65534/);

    const open = join(dir, 'world-writable.pid');
    writeFileSync(open, `${victim}\n`);
    chmodSync(open, 0o666);
    answer = await bind({ pidfile: open });
    assert.equal(answer.status, 400, JSON.stringify(answer));
    assert.match(answer.body.error ?? '', /writable by/);
    assert.ok(alive(victim));
  });

  test('a pid read from the pidfile later must belong to the user of the first (row 4)', async () => {
    const theirs = await sleeper(true);
    const rootProcess = await sleeper();
    const pidfile = join(dir, 'followed.pid');
    writeFileSync(pidfile, `${theirs}\n`, { mode: 0o644 });
    const bound = await bind({ pidfile, graceSeconds: 1 });
    assert.equal(bound.status, 200, JSON.stringify(bound));
    // The bound service "restarts" and the file now names a root process.
    writeFileSync(pidfile, `${rootProcess}\n`);
    await rebootVm0(emu);
    const binding = await waitFor('the reboot to be acted on', async () => {
      const b = await call(emu, 'GET', '/v1/vms/vm0/process');
      const log = b.body.log as { detail: string; action: string }[];
      return log.some((e) => e.action === 'terminate' || /refused|belongs/.test(e.detail)) && b;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.ok(alive(rootProcess), `the root process the file names now was not signalled: ${JSON.stringify(binding.body.log)}`);
    assert.match(JSON.stringify(binding.body.log), /belongs to user 0, not 65534/);
    await call(emu, 'DELETE', '/v1/vms/vm0/process');
  });
});

describe('owned commands: every process they start is tracked, and they get a clean environment (rows 6, 11)', () => {
  test('a command whose shell exits leaves children: a Reboot ends them before the next copy, and closing leaves none (row 6)', async () => {
    const emu = await impactEmulator();
    const inGroup = ['sleep', '302.25'];
    const ownSession = ['sleep', '303.25'];
    try {
      const bound = await call(emu, 'PUT', '/v1/vms/vm0/process', {
        command: ['/bin/sh', '-c', `${inGroup.join(' ')} & setsid ${ownSession.join(' ')} & exit 0`],
        graceSeconds: 1,
      });
      assert.equal(bound.status, 200, JSON.stringify(bound));
      const first = await waitFor('both children to run', () => {
        const a = processesRunning(inGroup);
        const b = processesRunning(ownSession);
        return a.length === 1 && b.length === 1 && [...a, ...b];
      });
      await rebootVm0(emu);
      await waitFor('the first copies to end and new ones to start', () => {
        const now = [...processesRunning(inGroup), ...processesRunning(ownSession)];
        return now.length === 2 && now.every((pid) => !first.includes(pid));
      });
      assert.ok(
        first.every((pid) => !alive(pid)),
        'the first copy’s children were ended, not left beside the second',
      );
      const log = JSON.stringify((await call(emu, 'GET', '/v1/vms/vm0/process')).body.log);
      assert.doesNotMatch(log, /nothing to terminate/);
    } finally {
      assert.equal(await emu.stop(), 0);
    }
    await waitFor(
      'no process the emulator started to outlive it',
      () => [...processesRunning(inGroup), ...processesRunning(ownSession)].length === 0,
    );
  });

  test('an owned command never sees the token or other variables outside the allowlist (row 11)', async () => {
    const emu = await impactEmulator({ FOREWARN_TOKEN: 'env-token-leak', SOME_SECRET: 'not-for-children' });
    try {
      const bound = await call(emu, 'PUT', '/v1/vms/vm0/process', { command: ['/bin/sh', '-c', 'env >&2; exec sleep 300'] });
      assert.equal(bound.status, 200, JSON.stringify(bound));
      const seen = await waitFor('the command to print its environment', async () => {
        const b = await call(emu, 'GET', '/v1/vms/vm0/process');
        return typeof b.body.stderr === 'string' && b.body.stderr.includes('PATH=') && b.body.stderr;
      });
      assert.doesNotMatch(seen, /FOREWARN_TOKEN|env-token-leak/);
      assert.doesNotMatch(seen, /SOME_SECRET|not-for-children/);
    } finally {
      await emu.stop();
    }
  });

  test('the emulator’s parent and other ancestors cannot be bound (row 11)', async () => {
    const emu = await impactEmulator();
    try {
      // The test process started the emulator: it is its parent.
      const answer = await call(emu, 'PUT', '/v1/vms/vm0/process', { pid: process.pid });
      assert.equal(answer.status, 400, JSON.stringify(answer));
      assert.match(answer.body.error ?? '', /ancestor of the emulator/);
    } finally {
      await emu.stop();
    }
  });
});
