import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, beforeEach, describe, it } from 'node:test';
import { runAction } from '../../src/agent/actions.js';
import { EXEC_ENV_ALLOWLIST } from '../../src/agent/exec-env.js';
import type { ActionContext, ExecAction, HttpAction, LogAction } from '../../src/agent/types.js';
import type { ScheduledEvent } from '../../src/client/index.js';
import { groupMembers, isEnded, procStat } from '../../src/shared/proc.js';
import { SCHEDULED_EVENT_FIELDS, scheduledEvent } from '../support/fixtures.js';
import { tempDir } from '../support/temp.js';
import { waitFor } from '../support/wait.js';
import { daemonOnGroup, requirePidReuse } from './pid-reuse.js';

const dir = tempDir('actions');

let fileNo = 0;
const tmp = (name: string) => join(dir, `${fileNo++}-${name}`);

/** A node script to run as [process.execPath, script, ...args]. */
function script(name: string, body: string): string {
  const path = tmp(`${name}.mjs`);
  writeFileSync(path, body);
  return path;
}

const echoScript = script(
  'echo',
  `import { readFileSync, writeFileSync } from 'node:fs';
const stdin = readFileSync(0, 'utf8');
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('FOREWARN_') || k === 'EXTRA'));
writeFileSync(process.argv[2], JSON.stringify({ stdin, env, cwd: process.cwd() }));
`,
);
const failScript = script('fail', `process.stdout.write('some output\\n'); process.stderr.write('it went wrong\\n'); process.exit(3);`);
const loudScript = script('loud', `process.stderr.write('x'.repeat(20000) + 'THE END'); process.exit(1);`);
const sleepScript = script('sleep', `setTimeout(() => {}, 30000);`);
const touchScript = script('touch', `import { writeFileSync } from 'node:fs'; writeFileSync(process.argv[2], 'ran');`);
const flakyScript = script(
  'flaky',
  `import { existsSync, readFileSync, writeFileSync } from 'node:fs';
const [counter, failures] = process.argv.slice(2);
const n = existsSync(counter) ? Number(readFileSync(counter, 'utf8')) + 1 : 1;
writeFileSync(counter, String(n));
process.exit(n <= Number(failures) ? 1 : 0);
`,
);

const ev = (over: Partial<ScheduledEvent> = {}): ScheduledEvent => scheduledEvent({ id: 'EVT-1', durationInSeconds: 15, ...over });

interface LogLine {
  level: 'info' | 'warn' | 'error';
  obj: object;
  msg: string | undefined;
}

function context(over: Partial<ActionContext> = {}): ActionContext & { logs: LogLine[] } {
  const logs: LogLine[] = [];
  const log = (level: LogLine['level']) => (obj: object, msg?: string) => logs.push({ level, obj, msg });
  const event = over.event ?? ev();
  return {
    event,
    vmName: 'web-0',
    phase: 'prepare',
    idempotencyKey: event.id,
    signal: new AbortController().signal,
    dryRun: false,
    logger: { info: log('info'), warn: log('warn'), error: log('error') },
    ...over,
    logs,
  };
}

function exec(argv: string[], over: Partial<ExecAction> = {}): ExecAction {
  return { type: 'exec', name: 'test-exec', argv, timeoutSeconds: 20, retries: 0, cwd: null, env: {}, passEnv: [], ...over };
}

const node = (path: string, ...args: string[]) => [process.execPath, path, ...args];

/** What an action is handed about ev() (as stdin JSON, or as the HTTP body) in that phase. */
function payload(phase: string): Record<string, unknown> {
  return { eventId: 'EVT-1', ...SCHEDULED_EVENT_FIELDS, durationInSeconds: 15, vmName: 'web-0', phase, idempotencyKey: 'EVT-1' };
}

describe('runAction: exec', () => {
  it('succeeds on exit code 0', async () => {
    const out = tmp('out.json');
    const result = await runAction(exec(node(echoScript, out)), context());
    assert.equal(result.ok, true);
    assert.equal(result.attempts, 1);
    assert.equal(result.error, null);
    assert.ok(result.durationMs >= 0);
  });

  it('hands the event over as stdin JSON and FOREWARN_* variables, with the action env and cwd', async () => {
    const out = tmp('out.json');
    const result = await runAction(exec(node(echoScript, out), { env: { EXTRA: 'yes' }, cwd: dir }), context({ phase: 'complete' }));
    assert.equal(result.ok, true, result.error ?? '');
    const got = JSON.parse(readFileSync(out, 'utf8'));
    assert.deepEqual(JSON.parse(got.stdin), payload('complete'));
    // POSIX: the run's marker, new each time, that proves its process group is the agent's.
    const { FOREWARN_ACTION_MARKER: marker, ...rest } = got.env as Record<string, string>;
    if (process.platform === 'win32') assert.equal(marker, undefined);
    else assert.match(marker ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // Only the event's FOREWARN_* variables: the agent's own (FOREWARN_ENDPOINT, say) are not passed on.
    assert.deepEqual(rest, {
      EXTRA: 'yes',
      FOREWARN_EVENT_ID: 'EVT-1',
      FOREWARN_EVENT_TYPE: 'Reboot',
      FOREWARN_EVENT_STATUS: 'Scheduled',
      FOREWARN_EVENT_SOURCE: 'Platform',
      FOREWARN_RESOURCES: 'web-0,web-1',
      FOREWARN_NOT_BEFORE: '2030-01-01T00:15:00.000Z',
      FOREWARN_DURATION_SECONDS: '15',
      FOREWARN_DESCRIPTION: 'Host server is undergoing maintenance.',
      FOREWARN_VM_NAME: 'web-0',
      FOREWARN_PHASE: 'complete',
      FOREWARN_IDEMPOTENCY_KEY: 'EVT-1',
    });
    assert.equal(got.cwd, dir);
  });

  it('gives the program a clean environment: the allowlist, passEnv, env and the event, never the rest', async () => {
    const out = tmp('env.json');
    const dump = script(
      'dump-env',
      `import { writeFileSync } from 'node:fs'; writeFileSync(process.argv[2], JSON.stringify(process.env));`,
    );
    const saved = { ...process.env };
    Object.assign(process.env, {
      FOREWARN_TEST_SECRET: 'hunter2',
      AGENT_API_TOKEN: 'sekrit',
      WANTED_BY_ACTION: 'passed',
      LANG: 'C.UTF-8',
      FOREWARN_ENDPOINT: 'http://x',
    });
    try {
      const result = await runAction(
        exec(node(dump, out), { passEnv: ['WANTED_BY_ACTION', 'NOT_SET_ANYWHERE'], env: { EXTRA: 'yes' } }),
        context(),
      );
      assert.equal(result.ok, true, result.error ?? '');
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
    const env = JSON.parse(readFileSync(out, 'utf8')) as Record<string, string>;
    assert.equal(env.AGENT_API_TOKEN, undefined, 'a secret of the agent does not reach the program');
    assert.equal(env.FOREWARN_TEST_SECRET, undefined);
    assert.equal(env.FOREWARN_ENDPOINT, undefined, "the agent's own FOREWARN_* settings are not passed on");
    assert.equal(env.WANTED_BY_ACTION, 'passed');
    assert.equal('NOT_SET_ANYWHERE' in env, false);
    assert.equal(env.EXTRA, 'yes');
    assert.equal(env.LANG, 'C.UTF-8');
    assert.equal(env.PATH, process.env.PATH);
    assert.equal(env.FOREWARN_EVENT_ID, 'EVT-1');
    // What the program sees beyond the allowlist is only what its runtime or the gate's shell adds.
    const allowed = new Set([...EXEC_ENV_ALLOWLIST, 'WANTED_BY_ACTION', 'EXTRA', 'PWD', 'SHLVL', '_', 'OLDPWD']);
    const extra = Object.keys(env).filter((k) => !allowed.has(k) && !k.startsWith('FOREWARN_'));
    assert.deepEqual(extra, []);
  });

  it('runs the program only once its process group is recorded, in that group', { skip: process.platform === 'win32' }, async () => {
    const out = tmp('pid');
    const pidScript = script('pid', `import { writeFileSync } from 'node:fs'; writeFileSync(process.argv[2], String(process.pid));`);
    let recorded: { pgid: number; startTime: string | null; marker?: string } | null = null;
    const result = await runAction(
      exec(node(pidScript, out)),
      context({
        recordProcess: async (group) => {
          recorded = group;
          await new Promise((r) => setTimeout(r, 300));
          assert.equal(existsSync(out), false, 'the program waits behind the gate');
        },
      }),
    );
    assert.equal(result.ok, true, result.error ?? '');
    assert.ok(recorded !== null);
    const { pgid, startTime } = recorded as { pgid: number; startTime: string | null };
    assert.equal(Number(readFileSync(out, 'utf8')), pgid, 'the program is the group leader the journal names');
    if (process.platform === 'linux') assert.match(startTime ?? '', /^\d+$/);
    assert.match((recorded as { marker?: string }).marker ?? '', /^[0-9a-f-]{36}$/, 'the run marker is journaled with the group');
  });

  it('never runs the program when its group cannot be recorded', { skip: process.platform === 'win32' }, async () => {
    const marker = tmp('never');
    const result = await runAction(
      exec(node(touchScript, marker), { retries: 2 }),
      context({ recordProcess: async () => Promise.reject(new Error('the agent is stopping')) }),
    );
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 1, 'not retried');
    assert.equal(result.error, 'not run: the agent is stopping');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(existsSync(marker), false);
  });

  it('reports a program that is not executable as spawn would', { skip: process.platform === 'win32' }, async () => {
    const file = tmp('not-executable.sh');
    writeFileSync(file, '#!/bin/sh\nexit 0\n', { mode: 0o644 });
    const result = await runAction(exec([file], { retries: 3 }), context());
    assert.equal(result.attempts, 1);
    assert.match(result.error!, /permission denied/);
  });

  it('gives a Started event an empty FOREWARN_NOT_BEFORE and a null notBefore', async () => {
    const out = tmp('out.json');
    await runAction(exec(node(echoScript, out)), context({ event: ev({ status: 'Started', notBefore: null, source: null }) }));
    const got = JSON.parse(readFileSync(out, 'utf8'));
    assert.equal(got.env.FOREWARN_NOT_BEFORE, '');
    assert.equal(got.env.FOREWARN_EVENT_SOURCE, '');
    assert.equal(JSON.parse(got.stdin).notBefore, null);
    assert.equal(JSON.parse(got.stdin).source, null);
  });

  it('passes event data full of shell metacharacters as plain data', async () => {
    const pwned = tmp('pwned');
    const victim = tmp('victim');
    writeFileSync(victim, 'still here');
    const nasty = `$(touch ${pwned}) ; rm -rf ${victim} \`touch ${pwned}\` | && "quotes" 'single' > ${pwned} \n newline`;
    const event = ev({
      id: `id-$(touch ${pwned})`,
      description: nasty,
      resources: [`$(touch ${pwned})`, 'web-0;touch x'],
      type: `Reboot;touch ${pwned}`,
    });
    const ctx = context({ event, vmName: `web-0 && touch ${pwned}`, idempotencyKey: event.id });

    const out = tmp('out.json');
    assert.equal((await runAction(exec(node(echoScript, out)), ctx)).ok, true);
    const got = JSON.parse(readFileSync(out, 'utf8'));
    assert.equal(got.env.FOREWARN_DESCRIPTION, nasty);
    assert.equal(JSON.parse(got.stdin).description, nasty);
    assert.deepEqual(JSON.parse(got.stdin).resources, event.resources);
    assert.equal(got.env.FOREWARN_VM_NAME, ctx.vmName);

    // Even a shell script sees only data, when it quotes its variables.
    const shOut = tmp('sh-out');
    const sh = await runAction(exec(['sh', '-c', 'printf "%s" "$FOREWARN_DESCRIPTION" > "$1"', 'sh', shOut]), ctx);
    assert.equal(sh.ok, true, sh.error ?? '');
    assert.equal(readFileSync(shOut, 'utf8'), nasty);

    assert.equal(existsSync(pwned), false);
    assert.equal(readFileSync(victim, 'utf8'), 'still here');
  });

  it('fails on a non-zero exit, with the output in the error', async () => {
    const result = await runAction(exec(node(failScript)), context());
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 1);
    assert.equal(result.error, 'exit code 3; stderr: it went wrong; stdout: some output');
  });

  it('keeps only the last 4 KiB of output', async () => {
    const result = await runAction(exec(node(loudScript)), context());
    assert.equal(result.ok, false);
    assert.match(result.error!, /^exit code 1; stderr: …x+THE END$/);
    assert.ok(result.error!.length < 4200, `error is ${result.error!.length} characters`);
  });

  it('retries: extra attempts until one succeeds', async () => {
    const counter = tmp('count');
    const ctx = context();
    const result = await runAction(exec(node(flakyScript, counter, '2'), { retries: 3 }), ctx);
    assert.equal(result.ok, true);
    assert.equal(result.attempts, 3);
    assert.equal(readFileSync(counter, 'utf8'), '3');
    assert.equal(ctx.logs.filter((l) => l.level === 'warn').length, 2);
  });

  it('gives up after its retries', async () => {
    const counter = tmp('count');
    const result = await runAction(exec(node(flakyScript, counter, '10'), { retries: 2 }), context());
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 3);
    assert.equal(result.error, 'exit code 1');
  });

  it('kills a program that runs past its timeout, and counts that as a failure', async () => {
    const started = performance.now();
    const result = await runAction(exec(node(sleepScript), { timeoutSeconds: 0.3, retries: 1 }), context());
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 2);
    assert.equal(result.error, 'timed out after 0.3 s');
    assert.ok(performance.now() - started < 5000);
  });

  it('sends SIGKILL when SIGTERM is ignored', { timeout: 15000 }, async () => {
    const stubborn = script('stubborn', `process.on('SIGTERM', () => {}); setTimeout(() => {}, 60000);`);
    const started = performance.now();
    const result = await runAction(exec(node(stubborn), { timeoutSeconds: 0.3 }), context());
    assert.equal(result.ok, false);
    assert.match(result.error!, /^timed out after 0\.3 s/);
    const took = performance.now() - started;
    assert.ok(took >= 5000 && took < 9000, `took ${took} ms`);
  });

  it(
    'after the leader exits, a timeout still stops the rest of its group: the marker proves it ours',
    { skip: process.platform !== 'linux' && 'the marker is read from Linux /proc' },
    async () => {
      const pidFile = tmp('bg-pid');
      // The leader exits at once; its background child keeps the output open, so the action runs on.
      const result = await runAction(
        exec(['/bin/sh', '-c', `sleep 30 & echo $! > ${pidFile}; exit 0`], { timeoutSeconds: 0.5 }),
        context(),
      );
      assert.match(result.error ?? '', /^timed out after 0\.5 s/);
      const pid = Number(readFileSync(pidFile, 'utf8'));
      await waitFor('the background child to be stopped', () => isEnded(procStat(pid)), 3000);
    },
  );

  it(
    'after the leader exits, a timeout never signals its group number once another group has it',
    { skip: process.platform !== 'linux' && 'pid reuse is forced through Linux /proc' },
    async () => {
      requirePidReuse();
      let pgid = 0;
      const ctx = context({
        recordProcess: async (group) => {
          pgid = group.pgid;
        },
      });
      // The leader exits at once; a child in a session of its own keeps the output open, so the
      // action still runs when its number is free, and an unrelated daemon takes it.
      const running = runAction(exec(['/bin/sh', '-c', 'setsid sleep 3 & exit 0'], { timeoutSeconds: 0.8 }), ctx);
      await waitFor('the group to end', () => pgid > 0 && procStat(pgid) === undefined && groupMembers(pgid).length === 0, 700, 5);
      const daemon = await daemonOnGroup(pgid);
      const result = await running;
      assert.match(result.error ?? '', /^timed out after 0\.8 s/, 'the timeout did fire');
      assert.ok(daemon.alive(), 'the daemon on the reused number lives on');
      assert.ok(ctx.logs.some((l) => l.level === 'warn' && /not signalling the process group/.test(l.msg ?? '')));
    },
  );

  it('kills the program when the signal aborts, and does not retry', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const started = performance.now();
    const result = await runAction(exec(node(sleepScript), { retries: 5 }), context({ signal: controller.signal }));
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 1);
    assert.equal(result.error, 'aborted');
    assert.ok(performance.now() - started < 5000);
  });

  it('runs nothing when already aborted', async () => {
    const marker = tmp('marker');
    const result = await runAction(exec(node(touchScript, marker)), context({ signal: AbortSignal.abort() }));
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 0);
    assert.equal(existsSync(marker), false);
  });

  it('reports a missing executable as a failure, not a throw', async () => {
    const result = await runAction(exec(['/nonexistent/forewarn-drain', '--now'], { retries: 3 }), context());
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 1, 'a missing program is not retried');
    assert.match(result.error!, /^cannot run \/nonexistent\/forewarn-drain: no such executable/);
  });

  it('reports a missing working directory', async () => {
    const result = await runAction(exec(node(echoScript, tmp('x')), { cwd: join(dir, 'no-such-dir') }), context());
    assert.equal(result.ok, false);
    assert.match(result.error!, /the working directory .*no-such-dir does not exist/);
  });

  it('runs nothing in a dry run', async () => {
    const marker = tmp('marker');
    const ctx = context({ dryRun: true });
    const result = await runAction(exec(node(touchScript, marker)), ctx);
    assert.deepEqual({ ...result, durationMs: 0 }, { ok: true, attempts: 0, error: null, durationMs: 0 });
    assert.equal(existsSync(marker), false);
    assert.equal(ctx.logs.length, 1);
    assert.match(ctx.logs[0]!.msg!, /dry run: would run exec action test-exec/);
    assert.deepEqual((ctx.logs[0]!.obj as { wouldRun: { argv: string[] } }).wouldRun.argv, node(touchScript, marker));
  });
});

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

describe('runAction: http', () => {
  let handler: (req: Received, res: ServerResponse) => void = (_req, res) => res.end('ok');
  let received: Received[] = [];
  let base = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: performance.now(),
      };
      received.push(r);
      handler(r, res);
    });
  });
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    received = [];
    handler = (_req, res) => res.end('ok');
  });

  const http = (over: Partial<HttpAction> = {}): HttpAction => ({
    type: 'http',
    name: 'test-http',
    method: 'POST',
    url: `${base}/hook`,
    headers: {},
    body: undefined,
    timeoutSeconds: 5,
    retries: 0,
    backoffSeconds: 0.1,
    ...over,
  });

  it('posts the event as JSON with an Idempotency-Key, and succeeds on 2xx', async () => {
    handler = (_req, res) => {
      res.statusCode = 204;
      res.end();
    };
    const result = await runAction(http(), context());
    assert.equal(result.ok, true, result.error ?? '');
    assert.equal(result.attempts, 1);
    const [req] = received;
    assert.equal(req!.method, 'POST');
    assert.equal(req!.url, '/hook');
    assert.equal(req!.headers['idempotency-key'], 'EVT-1');
    assert.equal(req!.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(req!.body), payload('prepare'));
  });

  it('sends the configured body and method instead', async () => {
    const result = await runAction(http({ method: 'PUT', body: { drain: true, backend: 'web-0' } }), context());
    assert.equal(result.ok, true);
    assert.equal(received[0]!.method, 'PUT');
    assert.deepEqual(JSON.parse(received[0]!.body), { drain: true, backend: 'web-0' });
  });

  it('retries a 500 with doubling backoff, then succeeds', async () => {
    let calls = 0;
    handler = (_req, res) => {
      res.statusCode = ++calls <= 2 ? 500 : 200;
      res.end(calls <= 2 ? 'overloaded' : 'ok');
    };
    const ctx = context();
    const result = await runAction(http({ retries: 2, backoffSeconds: 0.1 }), ctx);
    assert.equal(result.ok, true, result.error ?? '');
    assert.equal(result.attempts, 3);
    assert.equal(received.length, 3);
    const gap1 = received[1]!.at - received[0]!.at;
    const gap2 = received[2]!.at - received[1]!.at;
    assert.ok(gap1 >= 95, `first backoff ${gap1} ms`);
    assert.ok(gap2 >= 195, `second backoff ${gap2} ms`);
    assert.ok(
      received.every((r) => r.headers['idempotency-key'] === 'EVT-1'),
      'the same key on every attempt',
    );
    assert.deepEqual(
      ctx.logs.map((l) => (l.obj as { error: string }).error),
      ['HTTP 500: overloaded', 'HTTP 500: overloaded'],
    );
  });

  it('fails with the status and body once retries are spent', async () => {
    handler = (_req, res) => {
      res.statusCode = 503;
      res.end('down');
    };
    const result = await runAction(http({ retries: 1, backoffSeconds: 0 }), context());
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 2);
    assert.equal(result.error, 'HTTP 503: down');
  });

  it('does not retry a 4xx that another attempt cannot fix', async () => {
    handler = (_req, res) => {
      res.statusCode = 401;
      res.end('who are you');
    };
    const result = await runAction(http({ retries: 3 }), context());
    assert.equal(result.attempts, 1);
    assert.equal(result.error, 'HTTP 401: who are you');
  });

  it('times out a call that does not answer, whatever the garbage collector does', { timeout: 10000 }, async () => {
    handler = () => {}; // never answers
    // Node 20 can lose an AbortSignal.timeout() to a GC; collect hard while the call waits.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const collecting = setInterval(gc, 10);
    const started = performance.now();
    const result = await runAction(http({ timeoutSeconds: 0.2, retries: 1, backoffSeconds: 0 }), context()).finally(() =>
      clearInterval(collecting),
    );
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 2);
    assert.equal(result.error, 'timed out after 0.2 s');
    assert.ok(performance.now() - started < 3000);
  });

  it('stops when the signal aborts, even while waiting to retry', async () => {
    handler = (_req, res) => {
      res.statusCode = 500;
      res.end();
    };
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = performance.now();
    const result = await runAction(http({ retries: 5, backoffSeconds: 10 }), context({ signal: controller.signal }));
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 1);
    assert.match(result.error!, /^aborted while waiting to retry \(last attempt: HTTP 500\)$/);
    assert.ok(performance.now() - started < 3000);
  });

  it('reports a refused connection as a failure', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const result = await runAction(http({ url: `http://127.0.0.1:${port}/`, retries: 1, backoffSeconds: 0 }), context());
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 2);
    assert.match(result.error!, /^request failed: .*ECONNREFUSED/);
  });

  it('resolves ${env:NAME} in headers and url when it runs', async () => {
    process.env.FOREWARN_TEST_TOKEN = 's3cret';
    process.env.FOREWARN_TEST_PATH = 'drain';
    try {
      const result = await runAction(
        http({
          url: `${base}/\${env:FOREWARN_TEST_PATH}?x=1`,
          headers: { Authorization: 'Bearer ${env:FOREWARN_TEST_TOKEN}', 'X-Static': 'plain' },
        }),
        context(),
      );
      assert.equal(result.ok, true, result.error ?? '');
      assert.equal(received[0]!.url, '/drain?x=1');
      assert.equal(received[0]!.headers.authorization, 'Bearer s3cret');
      assert.equal(received[0]!.headers['x-static'], 'plain');
    } finally {
      delete process.env.FOREWARN_TEST_TOKEN;
      delete process.env.FOREWARN_TEST_PATH;
    }
  });

  it('fails, naming the variable, when one is missing or empty, and sends nothing', async () => {
    delete process.env.FOREWARN_TEST_MISSING;
    const ctx = context();
    const result = await runAction(http({ headers: { Authorization: 'Bearer ${env:FOREWARN_TEST_MISSING}' }, retries: 3 }), ctx);
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 1);
    assert.equal(result.error, 'environment variable FOREWARN_TEST_MISSING is not set (needed by header Authorization)');
    process.env.FOREWARN_TEST_EMPTY = '';
    try {
      const empty = await runAction(http({ url: `${base}/\${env:FOREWARN_TEST_EMPTY}` }), ctx);
      assert.equal(empty.error, 'environment variable FOREWARN_TEST_EMPTY is not set (needed by url)');
    } finally {
      delete process.env.FOREWARN_TEST_EMPTY;
    }
    assert.equal(received.length, 0);
  });

  it('always sends the EventId as Idempotency-Key', async () => {
    await runAction(http({ headers: { 'idempotency-key': 'mine' } }), context({ idempotencyKey: 'key-123' }));
    assert.equal(received[0]!.headers['idempotency-key'], 'key-123');
  });

  it('calls nothing in a dry run, and logs no secrets', async () => {
    process.env.FOREWARN_TEST_TOKEN = 's3cret';
    try {
      const ctx = context({ dryRun: true });
      const result = await runAction(http({ headers: { Authorization: 'Bearer ${env:FOREWARN_TEST_TOKEN}' } }), ctx);
      assert.equal(result.ok, true);
      assert.equal(result.attempts, 0);
      assert.equal(received.length, 0);
      assert.doesNotMatch(JSON.stringify(ctx.logs), /s3cret/);
    } finally {
      delete process.env.FOREWARN_TEST_TOKEN;
    }
  });
});

describe('runAction: log', () => {
  it('logs the message and the event at its level', async () => {
    const ctx = context();
    const action: LogAction = { type: 'log', name: 'note', message: 'draining soon', level: 'warn' };
    const result = await runAction(action, ctx);
    assert.equal(result.ok, true);
    assert.equal(result.attempts, 1);
    assert.equal(ctx.logs.length, 1);
    assert.equal(ctx.logs[0]!.level, 'warn');
    assert.equal(ctx.logs[0]!.msg, 'draining soon');
    assert.equal((ctx.logs[0]!.obj as { event: { eventId: string } }).event.eventId, 'EVT-1');
  });

  it('says something useful when the message is empty', async () => {
    const ctx = context();
    await runAction({ type: 'log', name: 'note', message: '', level: 'info' }, ctx);
    assert.equal(ctx.logs[0]!.msg, 'event EVT-1: Reboot Scheduled');
  });
});

describe('runAction: log lines', () => {
  it('carry each key once when the agent’s logger already binds the event, phase and action', async () => {
    const { Writable } = await import('node:stream');
    const { createLogger } = await import('../../src/agent/logger.js');
    const raw: string[] = [];
    const sink = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        raw.push(...chunk.toString().split('\n').filter(Boolean));
        cb();
      },
    });
    // As the agent builds it: the event's child, then the action's.
    const logger = createLogger({ level: 'debug', destination: sink })
      .child({ eventId: 'EVT-1', eventType: 'Freeze' })
      .child({ phase: 'prepare', action: 'deregister', key: 'prepare:0' });
    const failing: HttpAction = {
      type: 'http',
      name: 'deregister',
      method: 'POST',
      url: 'http://127.0.0.1:9/deregister',
      headers: {},
      body: undefined,
      timeoutSeconds: 2,
      retries: 0,
      backoffSeconds: 0,
    };
    const result = await runAction(failing, context({ logger }));
    assert.equal(result.ok, false);
    const line = raw.find((l) => l.includes('http action deregister failed'));
    assert.ok(line, raw.join('\n'));
    for (const key of ['action', 'eventId', 'phase', 'type']) {
      assert.equal(line.split(`"${key}":`).length - 1, 1, `"${key}" once in ${line}`);
    }
  });
});
