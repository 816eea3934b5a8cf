// `forewarn events` and `approve` against an endpoint that never answers: a word on stderr, and --timeout.
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createServer as createHttpServer } from 'node:http';
import { run } from '../../src/cli/program.js';
import { parseEventsArgs, runEvents } from '../../src/cli/events.js';
import { parseApproveArgs } from '../../src/cli/approve.js';
import { assertNoStack, captureIo } from '../support/cli.js';

/** Accepts connections and never answers, as a wedged IMDS or a firewall that swallows packets does. */
const sockets = new Set<Socket>();
const silent = createServer((socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
});
let endpoint = '';
before(async () => {
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
});
after(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

describe('waiting for IMDS', () => {
  test('events says once what it waits for, then gives up at --timeout with exit 1', { timeout: 20_000 }, async () => {
    const io = captureIo();
    const started = performance.now();
    const code = await run(['events', '--endpoint', endpoint, '--timeout', '2.5'], io);
    const took = performance.now() - started;
    assert.equal(code, 1, io.err);
    assert.equal(io.out, '');
    const waiting = io.err.match(/waiting for IMDS/g) ?? [];
    assert.equal(waiting.length, 1, io.err);
    assert.match(
      io.err,
      new RegExp(
        `^forewarn: waiting for IMDS at ${endpoint} \\(reading the events; up to 2\\.5 s, --timeout to change\\); Ctrl-C to stop$`,
        'm',
      ),
    );
    assert.match(io.err, new RegExp(`^forewarn: reading the events: no answer from IMDS at ${endpoint} within 2\\.5 s$`, 'm'));
    assert.ok(took >= 2400 && took < 8000, `took ${took} ms`);
    assertNoStack(io.err);
  });

  test('approve takes --timeout too, and says what it waits for', { timeout: 20_000 }, async () => {
    const io = captureIo();
    const code = await run(['approve', 'A-B', '--endpoint', endpoint, '--timeout', '2'], io);
    assert.equal(code, 1, io.err);
    assert.match(io.err, /waiting for IMDS at \S+ \(approving A-B; up to 2 s/);
    assert.match(io.err, /approving A-B: no answer from IMDS at \S+ within 2 s/);
  });

  test('a slow answer is waited for with one notice; a quick one gets none', { timeout: 20_000 }, async () => {
    let delayMs = 0;
    const slow = createHttpServer((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        res.end('{"DocumentIncarnation":3,"Events":[]}');
      }, delayMs);
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(slow.address() as { port: number }).port}`;
    try {
      const quick = captureIo();
      await runEvents(parseEventsArgs({ endpoint: url }), quick, { noticeAfterMs: 300 });
      assert.equal(quick.out, 'Incarnation 3\nno events\n');
      assert.equal(quick.err, '');
      delayMs = 800;
      const late = captureIo();
      await runEvents(parseEventsArgs({ endpoint: url }), late, { noticeAfterMs: 300 });
      assert.equal(late.out, 'Incarnation 3\nno events\n');
      assert.equal(
        late.err,
        `forewarn: waiting for IMDS at ${url} (reading the events; up to 150 s, --timeout to change); Ctrl-C to stop\n`,
      );
    } finally {
      slow.closeAllConnections();
      await new Promise((resolve) => slow.close(resolve));
    }
  });

  test('--timeout is checked: a positive number of seconds up to a day', async () => {
    for (const bad of ['0', '-1', 'abc', '', '86401', 'Infinity']) {
      for (const command of [['events'], ['approve', 'X']]) {
        const io = captureIo();
        const code = await run([...command, '--endpoint', endpoint, '--timeout', bad], io);
        assert.equal(code, 2, `${command[0]} --timeout ${bad}: ${io.err}`);
        assert.equal(io.err, `forewarn: --timeout must be a number of seconds above 0 and up to 86400, got "${bad}"\n`);
      }
    }
    assert.equal(parseEventsArgs({ timeout: '0.5' }).timeoutMs, 500);
    assert.equal(parseApproveArgs(['x'], {}).timeoutMs, 150_000, 'the default stays 150 s');
  });
});
