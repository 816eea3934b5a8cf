// Backpressure on GET /v1/stream: a reader that stops reading is dropped once its backlog passes
// the limit, readers that keep up get every frame, the number of streams is capped, and a crowd of
// stuck readers neither grows the emulator's memory without bound nor slows IMDS.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseEmulatorOptions } from '../../../src/cli/emulator.js';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { StreamHub } from '../../../src/emulator/control/stream.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { countChangeListeners, openSse, type SseMessage, type SseReader } from '../../support/sse.js';

const T0 = Date.parse('2024-01-01T00:00:00.000Z');

// The page's modules are checked against the DOM's types (src/dashboard/tsconfig.json), not this
// project's, so they are loaded at run time by URL, as far as they are used here.
type LinkState = 'connecting' | 'live' | 'reconnecting' | 'unauthorized';
interface PageModules {
  ControlApi: new (storage: null) => object;
  keepLive(
    api: object,
    handlers: {
      onHello(now: string): void;
      onChanged(topics: readonly string[], now: string): void;
      onDocument(vm: string, incarnation?: number): void;
      onState(state: LinkState): void;
    },
    signal: AbortSignal,
  ): Promise<void>;
}
async function pageModules(): Promise<PageModules> {
  const load = (path: string) =>
    import(new URL(`../../../src/dashboard/${path}`, import.meta.url).href) as Promise<Record<string, unknown>>;
  const [api, live] = await Promise.all([load('api.ts'), load('live.ts')]);
  return { ControlApi: api.ControlApi, keepLive: live.keepLive } as PageModules;
}
const repo = new URL('../../../', import.meta.url).pathname;

/** One availability set: every VM sees every event, so each change sends a document frame per VM. */
function bigTenant(count: number): { name: string; tenant: string; tenantKind?: 'availabilitySet' }[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `vm-${i}`,
    tenant: 'big',
    ...(i === 0 ? { tenantKind: 'availabilitySet' as const } : {}),
  }));
}

/**
 * A client that opens a stream, reads its first bytes (the stream is open) and then never reads
 * again: the kernel's buffers fill, then the server's.
 */
function stuckReader(port: number, path = '/v1/stream'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('error', reject);
    socket.once('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`));
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.off('error', reject);
      // The drop resets the connection; a paused socket may still hear of it.
      socket.on('error', () => {});
      if (!chunk.toString('latin1').startsWith('HTTP/1.1 200'))
        reject(new Error(`not a stream: ${chunk.toString('latin1').split('\r\n')[0]}`));
      else resolve(socket);
    });
  });
}

/** Reads every frame in the background, as a live client does. */
function drain(sse: SseReader): { frames: SseMessage[]; stop: () => Promise<void> } {
  const frames: SseMessage[] = [];
  let reading = true;
  const pump = (async () => {
    while (reading) {
      try {
        frames.push(await sse.nextEvent(100));
      } catch (e) {
        if (!/^no SSE frame/.test((e as Error).message)) throw e;
      }
    }
  })();
  // Seen by stop(); until then a failure must not go unhandled.
  pump.catch(() => {});
  return {
    frames,
    stop: async () => {
      reading = false;
      await pump;
    },
  };
}

/** Freeze events on the tenant, at most `live` at once, each new one cancelling the oldest. */
function churner(engine: Engine, vms: number, live: number): () => void {
  const open: string[] = [];
  let i = 0;
  return () => {
    if (open.length >= live) engine.cancel(open.shift()!);
    else open.push(...engine.createOperation({ type: 'freeze', vms: [`vm-${i++ % vms}`] }).events);
  };
}

/** A control API over a tenant of `vms` VMs with these stream limits, its warnings handed to `log`. */
async function limitedControlServer(
  vms: number,
  limits: { maxStreams: number; streamBufferBytes: number },
  log: (text: string) => void,
): Promise<{ engine: Engine; app: ReturnType<typeof buildControlServer>; port: number }> {
  const engine = new Engine({ clock: new ManualClock(T0), fleet: bigTenant(vms) });
  const logStream = new Writable({
    write(chunk: Buffer, _enc, done) {
      log(chunk.toString());
      done();
    },
  });
  const app = buildControlServer(
    { engine, clock: engine.clock, faults: new FaultRegistry(), rateLimiter: new RateLimiter() },
    { ...limits, logger: { level: 'warn', stream: logStream } },
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { engine, app, port: (app.server.address() as AddressInfo).port };
}

/** Every VM's document frames come in incarnation order with none missing, up to the engine's own. */
function assertEveryFrame(frames: SseMessage[], engine: Engine, vms: number): void {
  const seen = new Map<string, number>();
  for (const m of frames) {
    if (m.event !== 'document') continue;
    const { vm, incarnation } = m.data as { vm: string; incarnation: number };
    const last = seen.get(vm);
    if (last !== undefined) assert.equal(incarnation, last + 1, `${vm}: incarnation ${incarnation} came after ${last}`);
    seen.set(vm, incarnation);
  }
  assert.equal(seen.size, vms, 'a document frame for every VM');
  for (const [vm, incarnation] of seen) assert.equal(incarnation, engine.incarnationOf(vm), `${vm} is up to date`);
}

async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('a stream hub whose reader stops reading', () => {
  const VMS = 40;
  const LIMIT = 256 * 1024;
  let engine: Engine;
  let hub: StreamHub;
  let server: Server;
  let port: number;
  const responses: ServerResponse[] = [];
  let listeners: () => number;

  before(async () => {
    engine = new Engine({ clock: new ManualClock(T0), fleet: bigTenant(VMS) });
    listeners = countChangeListeners(engine);
    hub = new StreamHub(engine, { bufferLimitBytes: LIMIT, keepAliveMs: 60_000 });
    server = createServer((_req, res) => {
      responses.push(res);
      hub.open(res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  after(async () => {
    hub.closeAll();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test('is dropped once its backlog passes the limit, and costs nothing more; a reader that keeps up gets every frame', async (t) => {
    const reader = await openSse(`http://127.0.0.1:${port}/v1/stream`);
    const live = drain(reader.sse);
    t.after(() => live.stop().finally(reader.abort));
    const stuck = await Promise.all([stuckReader(port), stuckReader(port)]);
    t.after(() => stuck.forEach((s) => s.destroy()));
    await until(() => listeners() === 3 && responses.length === 3, 'three streams to subscribe');
    const stuckResponses = responses.slice(1);

    const step = churner(engine, VMS, 8);
    let peak = 0;
    for (let round = 0; round < 3000 && !stuckResponses.every((r) => r.destroyed); round++) {
      step();
      // Measured before the event loop runs: the most any stream holds.
      for (const r of stuckResponses) if (!r.destroyed) peak = Math.max(peak, r.writableLength);
      // Changes come no faster than a reader that reads can take them; the stuck ones fall behind.
      await until(() => responses[0]!.writableLength === 0, 'the reader to take the frames');
    }
    assert.ok(
      stuckResponses.every((r) => r.destroyed),
      `stuck readers still open; their backlog reached ${peak} bytes`,
    );
    // Checked after every write: at most the limit plus one frame (a document of 8 events is ~4 KiB).
    assert.ok(peak <= LIMIT + 16 * 1024, `backlog peaked at ${peak} bytes, limit ${LIMIT}`);
    assert.equal(hub.dropped, 2);
    assert.equal(hub.size, 1);
    // Dropped streams unsubscribe: no document is rendered for them any more.
    assert.equal(listeners(), 1);

    // A few more changes, then the reader must have every frame of every VM.
    for (let i = 0; i < 20; i++) {
      step();
      await until(() => responses[0]!.writableLength === 0, 'the reader to take the frames');
    }
    await until(
      () =>
        [...live.frames].filter((m) => m.event === 'document' && m.data.vm === 'vm-0').at(-1)?.data.incarnation ===
        engine.incarnationOf('vm-0'),
      'the reader to catch up',
    );
    await sleep(100);
    await live.stop();
    assert.equal(live.frames[0]?.event, 'hello');
    assertEveryFrame(live.frames, engine, VMS);
    assert.equal(responses[0]!.destroyed, false, 'the reader was not dropped');

    // The stuck clients see their connection reset once they read again.
    const ended = await Promise.all(
      stuck.map(
        (s) =>
          new Promise<string>((resolve) => {
            s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
            s.on('close', () => resolve('close'));
            s.resume();
          }),
      ),
    );
    for (const how of ended) assert.match(how, /ECONNRESET|close/);
  });
});

describe('the control API stream limits', () => {
  const VMS = 30;
  let engine: Engine;
  let app: ReturnType<typeof buildControlServer>;
  let base: string;
  let port: number;
  let log = '';

  before(async () => {
    ({ engine, app, port } = await limitedControlServer(VMS, { maxStreams: 2, streamBufferBytes: 256 * 1024 }, (text) => (log += text)));
    base = `http://127.0.0.1:${port}`;
  });

  after(async () => {
    await app.close();
  });

  test('past --max-streams a stream gets 503 with Retry-After; a dropped reader frees its place and is logged with its address', async (t) => {
    const reader = await openSse(`${base}/v1/stream?include=changes`);
    const live = drain(reader.sse);
    t.after(() => live.stop().finally(reader.abort));
    const stuck = await stuckReader(port);
    t.after(() => stuck.destroy());
    await until(() => live.frames.length > 0, 'the hello');

    const refused = await fetch(`${base}/v1/stream`);
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '5');
    assert.match(refused.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await refused.json()) as { error: string };
    assert.match(body.error, /2 streams are open, the most allowed/);
    assert.match(body.error, /--max-streams/);

    const step = churner(engine, VMS, 6);
    const documents = () => live.frames.filter((m) => m.event === 'document').length;
    for (let round = 0; round < 3000 && !/dropped/.test(log); round++) {
      const before = documents();
      step();
      // Each change reaches every VM of the tenant; the reader takes them all before the next.
      await until(() => documents() === before + VMS, 'the reader to take the frames');
    }
    const lines = log
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    const drops = lines.filter((l) => /dropped/.test(l.msg));
    assert.equal(drops.length, 1, log);
    assert.equal(drops[0]!.level, 40, 'a warning');
    assert.match(
      drops[0]!.msg,
      new RegExp(`^stream to 127\\.0\\.0\\.1:${stuck.localPort} dropped: it stopped reading and its backlog passed 256 KiB`),
    );

    // The dropped stream's place is free again; the reader is still live.
    const again = await openSse(`${base}/v1/stream`);
    again.abort();
    await live.stop();
    assert.ok(live.frames.some((m) => m.event === 'changed'));
    assertEveryFrame(live.frames, engine, VMS);
  });
});

describe("the dashboard's stream reader", () => {
  const VMS = 4;
  let engine: Engine;
  let app: ReturnType<typeof buildControlServer>;
  let port: number;
  let log = '';
  const realFetch = globalThis.fetch;

  before(async () => {
    ({ engine, app, port } = await limitedControlServer(VMS, { maxStreams: 1, streamBufferBytes: 16 * 1024 }, (text) => (log += text)));
    // The page fetches relative URLs; here they go to this server.
    globalThis.fetch = (input, init) => realFetch(new URL(String(input), `http://127.0.0.1:${port}`), init);
  });

  after(async () => {
    globalThis.fetch = realFetch;
    await app.close();
  });

  test('waits out a 503, and after a drop reconnects and is told to load everything afresh', async (t) => {
    const { ControlApi, keepLive } = await pageModules();
    const stuck = await stuckReader(port);
    t.after(() => stuck.destroy());
    const states: LinkState[] = [];
    let hellos = 0;
    let documents = 0;
    const controller = new AbortController();
    const running = keepLive(
      new ControlApi(null),
      {
        onHello: () => void (hellos += 1),
        onChanged: () => {},
        onDocument: () => void (documents += 1),
        onState: (state) => void states.push(state),
      },
      controller.signal,
    );
    t.after(async () => {
      controller.abort();
      await running;
    });

    // The only place is taken: the page is refused and keeps trying.
    await until(() => states.filter((s) => s === 'reconnecting').length >= 2, 'the page to retry');
    assert.equal(hellos, 0);
    assert.ok(!states.includes('live'));

    // Changes at the pace of a reader that reads: the stuck one falls behind and is dropped, which frees the place.
    const step = churner(engine, VMS, 2);
    for (let round = 0; round < 20_000 && !/dropped/.test(log); round++) {
      step();
      await sleep(0);
    }
    assert.match(log, /dropped/);
    await until(() => hellos === 1, 'the page to connect', 15_000);
    assert.equal(states.at(-1), 'live');
    step();
    await until(() => documents >= VMS, 'the page to hear of a change');

    // A burst far past the limit in one go: even a reader that reads is dropped, and comes back.
    for (let i = 0; i < 2000; i++) step();
    await until(() => hellos === 2, 'the page to reconnect after the drop', 15_000);
    assert.equal(log.trim().split('\n').length, 2, log);
    const after = states.slice(states.indexOf('live'));
    assert.deepEqual(after.slice(0, 2), ['live', 'reconnecting']);
    assert.equal(states.at(-1), 'live');
  });
});

test('--max-streams and --stream-buffer-kib: defaults, and clear errors for bad values', () => {
  const defaults = parseEmulatorOptions({});
  assert.equal(defaults.maxStreams, 64);
  assert.equal(defaults.streamBufferKiB, 1024);
  const set = parseEmulatorOptions({ maxStreams: '2', streamBufferKib: '64' });
  assert.equal(set.maxStreams, 2);
  assert.equal(set.streamBufferKiB, 64);
  for (const bad of ['0', '-1', '1.5', 'many', '', '10001']) {
    assert.throws(() => parseEmulatorOptions({ maxStreams: bad }), {
      name: 'UsageError',
      message: `--max-streams must be a whole number from 1 to 10000, got "${bad}"`,
    });
  }
  for (const bad of ['15', '1e3', '1048577']) {
    assert.throws(() => parseEmulatorOptions({ streamBufferKib: bad }), {
      name: 'UsageError',
      message: `--stream-buffer-kib must be a whole number from 16 to 1048576, got "${bad}"`,
    });
  }
});

// ---- end to end: the emulator as its own process ------------------------------------------

interface Child {
  proc: ChildProcessWithoutNullStreams;
  stdout: string;
  stderr: string;
}

function rssMiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(m, `no VmRSS for ${pid}`);
  return Number(m[1]) / 1024;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe('thirty stuck readers against the emulator process', () => {
  const VMS = 60;
  const READERS = 30;
  const CHURN_MS = 10_000;
  /**
   * The most the emulator's RSS may grow over its resting size. The streams may hold 30 × 1 MiB;
   * the rest is room for V8's heap to grow with the garbage that rendering leaves, which on a
   * busy machine is collected later rather than sooner. Without the limit the same load passes
   * this within a second or two and keeps going.
   */
  const RSS_GROWTH_BOUND_MIB = 200;
  const P99_BOUND_MS = 200;
  let dir: string;
  let child: Child;
  let imdsUrl: string;
  let controlUrl: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'forewarn-backpressure-'));
    const fleet = join(dir, 'fleet.json');
    writeFileSync(
      fleet,
      JSON.stringify({
        tenants: [{ name: 'big', kind: 'availabilitySet' }],
        vms: bigTenant(VMS).map(({ name }) => ({ name, tenant: 'big' })),
      }),
    );
    const proc = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/main.ts',
        'emulator',
        '--imds',
        '127.0.0.1:0',
        '--control',
        '127.0.0.1:0',
        '--clock',
        'manual',
        '--rate-limit',
        '0',
        '--log-level',
        'warn',
        '--fleet',
        fleet,
        '--max-streams',
        String(READERS),
        '--stream-buffer-kib',
        '512',
      ],
      { cwd: repo },
    );
    child = { proc, stdout: '', stderr: '' };
    proc.stdout.on('data', (d: Buffer) => (child.stdout += d));
    proc.stderr.on('data', (d: Buffer) => (child.stderr += d));
    await until(() => /IMDS:\s+\S+\nControl:\s+\S+/.test(child.stdout) || proc.exitCode !== null, "the emulator's URLs", 30_000);
    const m = /IMDS:\s+(\S+)\nControl:\s+(\S+)/.exec(child.stdout);
    assert.ok(m, `the emulator did not start: ${child.stderr}`);
    [, imdsUrl, controlUrl] = m as unknown as [string, string, string];
  });

  after(async () => {
    if (child.proc.exitCode === null) {
      const exited = new Promise((resolve) => child.proc.once('exit', resolve));
      child.proc.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  async function post(path: string, body?: unknown): Promise<Record<string, unknown>> {
    const res = await fetch(`${controlUrl}${path}`, {
      method: 'POST',
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    assert.ok(res.ok, `POST ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  }

  test('RSS stays bounded, every stuck reader is dropped, and IMDS stays fast while changes churn', async (t) => {
    const pid = child.proc.pid!;
    const imdsGet = `${imdsUrl}/vms/vm-0/metadata/scheduledevents?api-version=2020-07-01`;
    // Warm up (JIT, first allocations) before taking the resting size.
    for (let i = 0; i < 20; i++) await (await fetch(imdsGet, { headers: { Metadata: 'true' } })).text();
    const opened: string[] = [];
    for (let i = 0; i < 10; i++) opened.push(...((await post('/v1/operations', { type: 'freeze', vms: [`vm-${i}`] })).events as string[]));
    for (const id of opened.splice(0)) await post(`/v1/events/${id}/cancel`);
    await sleep(500);
    const baseline = rssMiB(pid);

    const controlPort = Number(new URL(controlUrl).port);
    const stuck = await Promise.all(Array.from({ length: READERS }, () => stuckReader(controlPort)));
    t.after(() => stuck.forEach((s) => s.destroy()));
    // --max-streams reached the server: every place is taken.
    const refused = await fetch(`${controlUrl}/v1/stream`);
    assert.equal(refused.status, 503, 'one stream past --max-streams');
    await refused.body?.cancel();

    let peak = baseline;
    let running = true;
    let overBound = false;
    const sampler = (async () => {
      while (running) {
        peak = Math.max(peak, rssMiB(pid));
        // Stop early rather than let a regression eat the machine.
        if (peak - baseline > RSS_GROWTH_BOUND_MIB) overBound = true;
        await sleep(100);
      }
    })();
    const latencies: number[] = [];
    const prober = (async () => {
      while (running) {
        const start = performance.now();
        const res = await fetch(imdsGet, { headers: { Metadata: 'true' } });
        await res.text();
        latencies.push(performance.now() - start);
        assert.equal(res.status, 200);
        await sleep(20);
      }
    })();

    let changes = 0;
    const start = performance.now();
    const end = start + CHURN_MS;
    while (performance.now() < end && !overBound) {
      if (opened.length >= 10) await post(`/v1/events/${opened.shift()!}/cancel`);
      else opened.push(...((await post('/v1/operations', { type: 'freeze', vms: [`vm-${changes % VMS}`] })).events as string[]));
      changes += 1;
    }
    const elapsed = (performance.now() - start) / 1000;
    running = false;
    await Promise.all([sampler, prober]);

    latencies.sort((a, b) => a - b);
    const p99 = percentile(latencies, 99);
    const drops = child.stderr.split('\n').filter((l) => /dropped: it stopped reading and its backlog passed 512 KiB/.test(l)).length;
    t.diagnostic(
      `${changes} changes in ${elapsed.toFixed(1)} s; RSS ${baseline.toFixed(0)} MiB at rest, peak ${peak.toFixed(0)} MiB; ` +
        `IMDS GETs ${latencies.length}, p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(1)} ms; ${drops} drops`,
    );
    assert.ok(!overBound && peak - baseline <= RSS_GROWTH_BOUND_MIB, `RSS grew from ${baseline.toFixed(0)} to ${peak.toFixed(0)} MiB`);
    assert.equal(drops, READERS, `every stuck reader is dropped:\n${child.stderr}`);
    assert.ok(p99 < P99_BOUND_MS, `IMDS p99 ${p99.toFixed(1)} ms`);
    assert.ok(changes > 100, `only ${changes} changes were made`);
  });
});
