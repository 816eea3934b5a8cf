// `forewarn record` against endpoints that misbehave: a body past the document cap is refused as it
// streams in, never held whole; what an endpoint sends reaches the terminal escaped.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { run } from '../../src/cli/program.js';
import { DEFAULT_MAX_DOCUMENT_BYTES, parseRecordArgs } from '../../src/cli/record.js';
import { parseRecording } from '../../src/protocol/recording.js';
import { captureIo } from '../support/cli.js';
import { tempDir } from '../support/temp.js';
import { waitFor } from '../support/wait.js';

const dir = tempDir('record-limits');
let file = 0;
const output = () => join(dir, `rec-${++file}.jsonl`);
const servers: Server[] = [];
after(() => Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve)))));

/** An endpoint whose Scheduled Events answer is `answer`'s; compute answers 404. */
async function endpoint(answer: (res: ServerResponse, req: IncomingMessage) => void): Promise<string> {
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/metadata/scheduledevents')) return answer(res, req);
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not found"}');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A valid document of about `bytes` bytes, its Description padded; sent with backpressure, chunk by chunk. */
function bigDocument(bytes: number, seen: { closedEarly?: boolean; finished?: boolean }) {
  return (res: ServerResponse) => {
    const head = '{"DocumentIncarnation":1,"Events":[{"EventId":"A","EventStatus":"Scheduled","EventType":"Freeze","Description":"';
    const tail = '"}]}';
    let left = bytes;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.on('close', () => (seen.closedEarly = !res.writableFinished));
    res.on('finish', () => (seen.finished = true));
    res.write(head);
    const pump = () => {
      while (left > 0) {
        const size = Math.min(left, 64 * 1024);
        left -= size;
        if (!res.write('x'.repeat(size))) return void res.once('drain', pump);
      }
      res.end(tail);
    };
    pump();
  };
}

describe('forewarn record: the document cap', () => {
  it('stops at a body past 1 MiB as it streams in, naming the size and the flag, and writes none of it', async () => {
    const seen: { closedEarly?: boolean; finished?: boolean } = {};
    const url = await endpoint(bigDocument(32 * 1024 * 1024, seen));
    const path = output();
    const io = captureIo();
    const code = await run(['record', '--endpoint', url, '--output', path, '--interval', '0.2', '--duration', '5s'], io);
    assert.equal(code, 1, io.err);
    assert.match(io.err, /larger than 1048576 bytes/);
    assert.match(io.err, /--max-document-bytes/);
    await waitFor('the server to see the connection close', () => seen.closedEarly !== undefined, 10_000);
    assert.equal(seen.closedEarly, true, 'the recorder hung up before the body ended');
    assert.notEqual(seen.finished, true);
    assert.ok(!existsSync(path) || readFileSync(path, 'utf8') === '', 'no line of it written');
  });

  it('--max-document-bytes sets the cap; a document within it is recorded', async () => {
    const url = await endpoint(bigDocument(4096, {}));
    const io = captureIo();
    assert.equal(await run(['record', '--endpoint', url, '--output', output(), '--max-document-bytes', '2048', '--duration', '2s'], io), 1);
    assert.match(io.err, /larger than 2048 bytes\b.*--max-document-bytes/);
    const path = output();
    const ok = captureIo();
    assert.equal(
      await run(['record', '--endpoint', url, '--output', path, '--max-document-bytes', '8192', '--duration', '1s'], ok),
      0,
      ok.err,
    );
    assert.equal(parseRecording(readFileSync(path, 'utf8'), path).changes.length, 1);
  });

  it('checks the flag', () => {
    assert.equal(parseRecordArgs({ output: 'x' }).maxDocumentBytes, DEFAULT_MAX_DOCUMENT_BYTES);
    assert.equal(DEFAULT_MAX_DOCUMENT_BYTES, 1024 * 1024);
    for (const bad of ['abc', '0', '-5', '1.5', '100', `${64 * 1024 * 1024}`]) {
      assert.throws(() => parseRecordArgs({ output: 'x', maxDocumentBytes: bad }), /--max-document-bytes must be/, bad);
    }
  });

  it('a body declared too long is refused before it is read', async () => {
    const url = await endpoint((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(200 * 1024 * 1024) });
      res.write('{"DocumentIncarnation":1,');
      // Never sends the rest: the recorder must not wait for it.
    });
    const io = captureIo();
    assert.equal(await run(['record', '--endpoint', url, '--output', output(), '--duration', '10s'], io), 1);
    assert.match(io.err, /209715200 bytes.*larger than 1048576 bytes/);
  });

  it('refuses a document nested too deep for a replay before parsing it', async () => {
    const url = await endpoint((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"DocumentIncarnation":1,"Events":[{"EventId":"A","X":${'['.repeat(100_000)}${']'.repeat(100_000)}}]}`);
    });
    const path = output();
    const io = captureIo();
    assert.equal(await run(['record', '--endpoint', url, '--output', path, '--duration', '3s'], io), 1, io.err);
    assert.match(io.err, /nest/);
    assert.ok(!existsSync(path) || readFileSync(path, 'utf8') === '');
  });
});

describe('forewarn record: what it prints', () => {
  it('escapes control characters from an error body: no ESC, no CR, no fake line, no bidi override', async () => {
    const hostile = '\u001b[2J\u001b[H\r\nforewarn record: 9 changes of 1 event written to ok.jsonl\u009b31m\u202eevil\u0007\u007f';
    const url = await endpoint((res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: hostile }));
    });
    const io = captureIo();
    assert.equal(await run(['record', '--endpoint', url, '--output', output(), '--duration', '3s'], io), 1);
    assert.match(io.err, /\\x1b\[2J\\x1b\[H\\r\\nforewarn record: 9 changes/, 'the body is shown, escaped');
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    assert.doesNotMatch(io.err, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u, JSON.stringify(io.err));
    for (const line of io.err.split('\n').filter(Boolean)) assert.match(line, /^forewarn( record)?: /, JSON.stringify(line));
  });

  it('escapes what a --from-watch log holds when it refuses it', async () => {
    const { writeFileSync } = await import('node:fs');
    const log = join(dir, 'watch.jsonl');
    writeFileSync(
      log,
      `${JSON.stringify({ time: '2026-01-01T00:00:00Z', kind: 'x\u001b[2J', incarnation: 1, event: { EventId: 'A' } })}\n`,
    );
    const io = captureIo();
    assert.equal(await run(['record', '--from-watch', log, '--output', output()], io), 2);
    assert.match(io.err, /watch\.jsonl:1: kind "x\\u001b\[2J"/, 'quoted as JSON, escaped');
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    assert.doesNotMatch(io.err, /\u001b/);
  });
});
