// `forewarn replay`'s control routes under the emulator's rules: other web pages and rebinding names
// are refused, an optional bearer token guards every route, and a clock advance is capped as the
// emulator's is, so no request can leave the replay answering 500.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startReplay } from '../../../src/emulator/replay/server.js';
import { MAX_ADVANCE_SECONDS } from '../../../src/emulator/control/schemas.js';
import { serializeRecording } from '../../../src/protocol/recording.js';
import { CliProcess } from '../../support/cli.js';
import { sampleRecording } from '../../support/recording.js';
import { tempDir } from '../../support/temp.js';

const dir = tempDir('replay-guard');
const TOKEN = 'replay-token-0123456789';
after(() => CliProcess.killAll());

function recordingFile(name: string): string {
  const file = join(dir, name);
  writeFileSync(file, serializeRecording(sampleRecording()));
  return file;
}

/** One HTTP exchange with the headers exactly as given (fetch will not send a foreign Host). */
function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function startCli(
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<{ proc: CliProcess; imds: string; control: string }> {
  const proc = new CliProcess(
    [
      'replay',
      recordingFile(`r-${Math.random()}.jsonl`),
      '--imds',
      '127.0.0.1:0',
      '--control',
      '127.0.0.1:0',
      '--clock',
      'manual',
      ...args,
    ],
    env,
  );
  const [, imds, control] = await proc.waitForOutput(/IMDS:\s+(\S+)\nControl:\s+(\S+)/);
  return { proc, imds: imds!, control: control! };
}

const advance = (seconds: number) => JSON.stringify({ seconds });

describe('forewarn replay: the control routes', () => {
  it('refuse other web pages and rebinding names with 403, as the emulator does', async () => {
    const { proc, control } = await startCli();
    try {
      const foreign = await send(
        control,
        'POST',
        '/v1/clock/advance',
        { host: 'rebind.example', origin: 'http://rebind.example' },
        advance(1),
      );
      assert.equal(foreign.status, 403, JSON.stringify(foreign.json));
      assert.match(String(foreign.json.error), /Host "rebind\.example" is not a loopback name/);
      const page = await send(control, 'POST', '/v1/clock/advance', { origin: 'http://attacker.example' }, advance(1));
      assert.equal(page.status, 403);
      assert.match(String(page.json.error), /Origin "http:\/\/attacker\.example"/);
      const crossSite = await send(control, 'POST', '/v1/clock/advance', { 'sec-fetch-site': 'cross-site' }, advance(1));
      assert.equal(crossSite.status, 403);
      const rebindRead = await send(control, 'GET', '/v1/replay', { host: 'rebind.example' });
      assert.equal(rebindRead.status, 403, 'reading the replay under a rebinding name');
      const plain = await send(control, 'POST', '/v1/clock/advance', {}, advance(1));
      assert.equal(plain.status, 200, JSON.stringify(plain.json));
      const own = await send(control, 'GET', '/v1/clock', { origin: control, 'sec-fetch-site': 'same-origin' });
      assert.equal(own.status, 200, 'its own origin');
    } finally {
      await proc.stop('SIGINT');
    }
  });

  it('cap a clock advance as the emulator does (400 naming seconds), and every route still answers after', async () => {
    const { proc, imds, control } = await startCli();
    try {
      for (const seconds of [1e13, MAX_ADVANCE_SECONDS + 1]) {
        const res = await send(control, 'POST', '/v1/clock/advance', {}, advance(seconds));
        assert.equal(res.status, 400, `${seconds}: ${JSON.stringify(res.json)}`);
        assert.match(String(res.json.error), /^seconds: /);
        assert.match(String(res.json.error), new RegExp(String(MAX_ADVANCE_SECONDS)));
      }
      assert.equal((await send(control, 'POST', '/v1/clock/advance', {}, '{"seconds":')).status, 400, 'bad JSON');
      assert.equal((await send(control, 'GET', '/v1/replay')).status, 200);
      assert.equal((await send(control, 'GET', '/v1/clock')).status, 200);
      const events = await send(imds, 'GET', '/metadata/scheduledevents?api-version=2020-07-01', { metadata: 'true' });
      assert.equal(events.status, 200);
      // The cap allowed, many times over: the clock stops short of what a replay can show, never at a 500.
      let last = 0;
      for (let i = 0; i < 1000 && last !== 400; i++) {
        last = (await send(control, 'POST', '/v1/clock/advance', {}, advance(MAX_ADVANCE_SECONDS))).status;
      }
      assert.equal(last, 400, 'the clock refuses to pass the year 9999');
      assert.equal((await send(control, 'GET', '/v1/replay')).status, 200);
      assert.equal((await send(imds, 'GET', '/metadata/scheduledevents?api-version=2020-07-01', { metadata: 'true' })).status, 200);
    } finally {
      await proc.stop('SIGINT');
    }
  });

  for (const [how, args, env] of [
    ['--token-file', ['--token-file', 'TOKEN_FILE'], {}],
    ['FOREWARN_TOKEN', [], { FOREWARN_TOKEN: TOKEN }],
  ] as const) {
    it(`need the bearer token given by ${how}`, async () => {
      const tokenFile = join(dir, `token-${Math.random()}`);
      writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
      const { proc, control, imds } = await startCli(
        args.map((a) => (a === 'TOKEN_FILE' ? tokenFile : a)),
        env,
      );
      try {
        const bearer = { authorization: `Bearer ${TOKEN}` };
        for (const [method, path, body] of [
          ['GET', '/v1/replay', undefined],
          ['GET', '/v1/clock', undefined],
          ['POST', '/v1/clock/advance', advance(1)],
        ] as const) {
          const without = await send(control, method, path, {}, body);
          assert.equal(without.status, 401, `${method} ${path} without the token`);
          const wrong = await send(control, method, path, { authorization: 'Bearer nope' }, body);
          assert.equal(wrong.status, 401, `${method} ${path} with a wrong token`);
          assert.equal((await send(control, method, path, bearer, body)).status, 200, `${method} ${path} with the token`);
        }
        // IMDS stays IMDS: a VM sends no token.
        assert.equal((await send(imds, 'GET', '/metadata/scheduledevents?api-version=2020-07-01', { metadata: 'true' })).status, 200);
      } finally {
        await proc.stop('SIGINT');
      }
    });
  }

  it('startReplay takes a token too', async () => {
    const replay = await startReplay({ recording: sampleRecording(), clock: 'manual', token: TOKEN });
    try {
      assert.equal((await send(replay.controlUrl!, 'GET', '/v1/replay')).status, 401);
      assert.equal((await send(replay.controlUrl!, 'GET', '/v1/replay', { authorization: `Bearer ${TOKEN}` })).status, 200);
    } finally {
      await replay.close();
    }
  });
});
