// The client against a hand-written IMDS stand-in, for answers the emulator never gives:
// restarts, malformed JSON, changed fields, odd statuses and headers.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { ImdsProtocolError, ScheduledEventsClient, type ClientOptions, type WatchItem, type WatchOptions } from '../../src/client/index.js';
import { kinds, next, nextChanges } from './watch-items.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Handler = (req: Seen, res: ServerResponse) => void;

let handler: Handler;
const seen: Seen[] = [];
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() };
    seen.push(s);
    handler(s, res);
  });
});
let base: string;

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

afterEach(() => {
  seen.length = 0;
});

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(body);
}

/** A Scheduled Events service whose state the test edits; ETag and 304 as IMDS does them. */
function service(state: { incarnation: number; events: object[]; broken?: string | null }): Handler {
  return (req, res) => {
    if (state.broken) return send(res, 200, state.broken);
    const tag = `"${state.incarnation}"`;
    if (req.headers['if-none-match'] === tag) {
      res.writeHead(304, { etag: tag });
      res.end();
      return;
    }
    send(res, 200, JSON.stringify({ DocumentIncarnation: state.incarnation, Events: state.events }), { etag: tag });
  };
}

type ServiceState = Parameters<typeof service>[0];

/** Serves `state`, watches it every 5 ms (with `options`) through the test's `body`, then stops the watch. */
async function watching(
  state: ServiceState,
  options: WatchOptions,
  body: (items: AsyncGenerator<WatchItem>) => Promise<void>,
): Promise<void> {
  handler = service(state);
  const ac = new AbortController();
  try {
    await body(client().client.watch({ signal: ac.signal, intervalMs: 5, ...options }));
  } finally {
    ac.abort();
  }
}

function wire(id: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    EventId: id,
    EventStatus: 'Scheduled',
    EventType: 'Freeze',
    ResourceType: 'VirtualMachine',
    Resources: ['vm0'],
    NotBefore: 'Mon, 11 Apr 2022 22:26:58 GMT',
    Description: '',
    EventSource: 'Platform',
    DurationInSeconds: 5,
    ...over,
  };
}

function client(options: ClientOptions = {}): { client: ScheduledEventsClient; sleeps: number[] } {
  const sleeps: number[] = [];
  return {
    sleeps,
    client: new ScheduledEventsClient({
      endpoint: base,
      random: () => 0.5,
      sleep: async (ms, signal) => {
        sleeps.push(ms);
        // Real time passes a little, so the stub's state can change between polls.
        await delay(Math.min(ms, 5), undefined, { signal });
      },
      ...options,
    }),
  };
}

/** Waits until the stub has answered `n` more requests. */
async function polls(n: number): Promise<void> {
  const target = seen.length + n;
  const deadline = performance.now() + 5000;
  while (seen.length < target) {
    if (performance.now() > deadline) throw new Error(`the stub saw fewer than ${n} more requests within 5 s`);
    await delay(2);
  }
}

describe('client against a stub: requests on the wire', () => {
  it('sends Metadata: true, the api-version, no proxy header; appends routes to a path prefix', async () => {
    handler = service({ incarnation: 1, events: [] });
    const c = new ScheduledEventsClient({ endpoint: `${base}/vms/web0/` });
    assert.equal(c.endpoint, `${base}/vms/web0`);
    await c.getDocument();
    const [req] = seen;
    assert.equal(req?.url, '/vms/web0/metadata/scheduledevents?api-version=2020-07-01');
    assert.equal(req?.headers.metadata, 'true');
    assert.equal(req?.headers['x-forwarded-for'], undefined);
    assert.equal(req?.headers['if-none-match'], undefined);
  });

  it('posts StartRequests as JSON', async () => {
    handler = (_req, res) => send(res, 200, '');
    await new ScheduledEventsClient({ endpoint: base }).approve(['a', 'B']);
    assert.equal(seen[0]?.method, 'POST');
    assert.equal(seen[0]?.headers['content-type'], 'application/json');
    assert.equal(seen[0]?.headers.metadata, 'true');
    assert.deepEqual(JSON.parse(seen[0]!.body), { StartRequests: [{ EventId: 'a' }, { EventId: 'B' }] });
  });

  it('goes straight to the endpoint even with HTTP_PROXY/HTTPS_PROXY set', async () => {
    handler = service({ incarnation: 1, events: [] });
    const saved = { http: process.env.HTTP_PROXY, https: process.env.HTTPS_PROXY };
    process.env.HTTP_PROXY = 'http://127.0.0.1:9';
    process.env.HTTPS_PROXY = 'http://127.0.0.1:9';
    try {
      await new ScheduledEventsClient({ endpoint: base, retry: { maxAttempts: 1 } }).getDocument();
      assert.equal(seen.length, 1);
    } finally {
      for (const [key, value] of [
        ['HTTP_PROXY', saved.http],
        ['HTTPS_PROXY', saved.https],
      ] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it('takes FOREWARN_ENDPOINT when no endpoint is given, else the link-local address', () => {
    const saved = process.env.FOREWARN_ENDPOINT;
    try {
      process.env.FOREWARN_ENDPOINT = `${base}/vms/x`;
      assert.equal(new ScheduledEventsClient().endpoint, `${base}/vms/x`);
      delete process.env.FOREWARN_ENDPOINT;
      const c = new ScheduledEventsClient();
      assert.equal(c.endpoint, 'http://169.254.169.254');
      assert.equal(c.apiVersion, '2020-07-01');
    } finally {
      if (saved === undefined) delete process.env.FOREWARN_ENDPOINT;
      else process.env.FOREWARN_ENDPOINT = saved;
    }
  });

  it('refuses a bad endpoint or option up front', () => {
    assert.throws(() => new ScheduledEventsClient({ endpoint: 'not a url' }), TypeError);
    assert.throws(() => new ScheduledEventsClient({ endpoint: 'ftp://x' }), TypeError);
    assert.throws(() => new ScheduledEventsClient({ endpoint: 'http://x/?a=1' }), TypeError);
    assert.throws(() => new ScheduledEventsClient({ endpoint: base, timeoutMs: 0 }), RangeError);
    assert.throws(() => new ScheduledEventsClient({ endpoint: base, retry: { maxAttempts: 0 } }), RangeError);
    assert.throws(() => new ScheduledEventsClient({ endpoint: base, retry: { baseDelayMs: -1 } }), RangeError);
  });

  it('refuses an empty EventId before sending anything', async () => {
    await assert.rejects(new ScheduledEventsClient({ endpoint: base }).approve(['A', '']), TypeError);
    assert.equal(seen.length, 0);
  });
});

describe('client against a stub: statuses', () => {
  for (const status of [400, 403, 404, 405, 413]) {
    it(`${status}: raised at once as ImdsError with IMDS's message`, async () => {
      handler = (_req, res) => send(res, status, JSON.stringify({ error: `no (${status})` }));
      const { client: c, sleeps } = client();
      await assert.rejects(c.getDocument(), {
        name: 'ImdsError',
        status,
        imdsMessage: `no (${status})`,
        body: { error: `no (${status})` },
      });
      assert.equal(seen.length, 1);
      assert.deepEqual(sleeps, []);
    });
  }

  it('a non-JSON error body becomes the message', async () => {
    handler = (_req, res) => send(res, 404, 'Not Found', { 'content-type': 'text/plain' });
    await assert.rejects(client().client.getDocument(), { status: 404, imdsMessage: 'Not Found', body: 'Not Found' });
  });

  for (const status of [500, 502, 503]) {
    it(`${status}: retried with backoff`, async () => {
      let n = 0;
      handler = (req, res) => (n++ < 2 ? send(res, status, '{"error":"later"}') : service({ incarnation: 1, events: [] })(req, res));
      const { client: c, sleeps } = client();
      await c.getDocument();
      assert.deepEqual(sleeps, [250, 500]);
    });
  }

  it('429 honours Retry-After in seconds', async () => {
    let n = 0;
    handler = (req, res) =>
      n++ === 0
        ? send(res, 429, '{"error":"Too many requests"}', { 'retry-after': '2' })
        : service({ incarnation: 1, events: [] })(req, res);
    const { client: c, sleeps } = client();
    await c.getDocument();
    assert.deepEqual(sleeps, [2000]);
  });

  it('a redirect is not followed (it could lead through a proxy) and not retried', async () => {
    handler = (_req, res) => send(res, 302, '', { location: 'http://127.0.0.1:9/' });
    await assert.rejects(client().client.getDocument(), { name: 'ImdsError', status: 302 });
    assert.equal(seen.length, 1);
  });

  it('aborting a pending call rejects it with the abort reason', async () => {
    handler = () => {}; // never answers
    const ac = new AbortController();
    const pending = new ScheduledEventsClient({ endpoint: base }).getDocument({ signal: ac.signal });
    await polls(1);
    ac.abort();
    await assert.rejects(pending, { name: 'AbortError' });
  });
});

describe('client against a stub: documents the emulator never sends', () => {
  it('malformed JSON: ImdsProtocolError with the body, not retried', async () => {
    handler = (_req, res) => send(res, 200, '{"DocumentIncarnation": 1, "Events": [');
    const { client: c, sleeps } = client();
    await assert.rejects(c.getDocument(), (err: unknown) => {
      assert.ok(err instanceof ImdsProtocolError);
      assert.equal(err.body, '{"DocumentIncarnation": 1, "Events": [');
      return true;
    });
    assert.equal(seen.length, 1);
    assert.deepEqual(sleeps, []);
  });

  it('a body that is not a document, or is empty: ImdsProtocolError', async () => {
    for (const body of ['[]', '{"Events":null}', '']) {
      handler = (_req, res) => send(res, 200, body);
      await assert.rejects(client().client.getDocument(), ImdsProtocolError, body);
    }
  });

  it('a 304 to a request without If-None-Match: ImdsProtocolError', async () => {
    handler = (_req, res) => {
      res.writeHead(304);
      res.end();
    };
    await assert.rejects(client().client.getDocument(), ImdsProtocolError);
  });

  it('a server without ETags is polled plainly', async () => {
    handler = (_req, res) => send(res, 200, JSON.stringify({ DocumentIncarnation: '3', Events: [wire('A')] }));
    const c = client().client;
    const doc = await c.getDocument();
    assert.equal(doc.etag, null);
    assert.equal(doc.incarnation, 3);
    await c.getDocument();
    assert.equal(seen[1]?.headers['if-none-match'], undefined);
  });

  it('watch: malformed JSON is an error item, and the watch keeps going', async () => {
    const state = { incarnation: 1, events: [wire('A')], broken: 'not json' as string | null };
    const errors: Error[] = [];
    await watching(state, { jitter: 0, onError: (e) => errors.push(e) }, async (items) => {
      const item = await next(items);
      assert.equal(item.type, 'error');
      assert.ok(item.type === 'error' && item.error instanceof ImdsProtocolError);
      assert.equal(item.health.consecutiveFailures, 1);
      state.broken = null;
      assert.deepEqual(kinds(await nextChanges(items)), ['scheduled:A']);
      assert.equal(errors.length, 1);
    });
  });

  it('watch with emitErrors: false reports errors only through onError', async () => {
    const state = { incarnation: 1, events: [wire('A')], broken: 'nope' as string | null };
    const errors: Error[] = [];
    const options: WatchOptions = {
      emitErrors: false,
      onError: (e) => {
        errors.push(e);
        if (errors.length === 3) state.broken = null;
        throw new Error('a faulty callback');
      },
    };
    await watching(state, options, async (items) => {
      assert.deepEqual(kinds(await nextChanges(items)), ['scheduled:A']);
      assert.equal(errors.length, 3);
    });
  });

  it('watch: field changes are `updated`, with the previous version', async () => {
    const state = { incarnation: 1, events: [wire('A')] };
    await watching(state, {}, async (items) => {
      await nextChanges(items);
      state.incarnation = 2;
      state.events = [wire('A', { NotBefore: 'Mon, 11 Apr 2022 22:41:58 GMT', DurationInSeconds: 9 })];
      const [change] = await nextChanges(items);
      assert.equal(change?.kind, 'updated');
      assert.equal(change?.incarnation, 2);
      assert.equal(change?.previous?.durationInSeconds, 5);
      assert.equal(change?.event.durationInSeconds, 9);
      assert.equal(change!.event.notBefore!.getTime() - change!.previous!.notBefore!.getTime(), 15 * 60_000);
    });
  });

  it('watch: a restarted service (incarnation back to 1, same events) yields no duplicates; a new event yields one scheduled', async () => {
    const state = { incarnation: 5, events: [wire('A'), wire('B', { EventStatus: 'Started', NotBefore: '' })] };
    await watching(state, {}, async (items) => {
      assert.deepEqual(kinds(await nextChanges(items)), ['scheduled:A', 'started:B']);
      const pending = nextChanges(items);
      // The service restarts: incarnation 1, same events, ids now lowercase.
      state.incarnation = 1;
      state.events = [wire('a'), wire('b', { EventStatus: 'Started', NotBefore: '' })];
      await polls(3);
      state.incarnation = 2;
      state.events = [...state.events, wire('C')];
      assert.deepEqual(kinds(await pending), ['scheduled:C']);
    });
  });

  it('watch: a service that restarts empty and then shows the events again does not announce them twice', async () => {
    const state = { incarnation: 9, events: [wire('A')] };
    await watching(state, {}, async (items) => {
      assert.deepEqual(kinds(await nextChanges(items)), ['scheduled:A']);
      state.incarnation = 1;
      state.events = [];
      assert.deepEqual(kinds(await nextChanges(items)), ['cancelled:A']);
      const pending = nextChanges(items);
      state.incarnation = 2;
      state.events = [wire('A')];
      await polls(3);
      state.incarnation = 3;
      state.events = [wire('A', { EventStatus: 'Started', NotBefore: '' })];
      assert.deepEqual(kinds(await pending), ['started:A']);
    });
  });

  it('watch: several events in one document come in one item, removals first', async () => {
    const state = { incarnation: 1, events: [wire('A'), wire('B')] };
    await watching(state, {}, async (items) => {
      assert.deepEqual(kinds(await nextChanges(items)), ['scheduled:A', 'scheduled:B']);
      state.incarnation = 2;
      state.events = [
        wire('B', { EventStatus: 'Started', NotBefore: '' }),
        wire('D'),
        wire('C', { EventStatus: 'Started', NotBefore: '' }),
      ];
      assert.deepEqual(kinds(await nextChanges(items)), ['cancelled:A', 'scheduled:D', 'started:C', 'started:B']);
    });
  });

  it('watch: jitter spreads the poll interval ±10% by default', async () => {
    handler = service({ incarnation: 1, events: [] });
    const sleeps: number[] = [];
    let r = 0;
    const randoms = [0, 1, 0.5];
    const ac = new AbortController();
    const c = new ScheduledEventsClient({
      endpoint: base,
      random: () => randoms[r++ % 3]!,
      sleep: async (ms) => {
        sleeps.push(ms);
        if (sleeps.length === 3) ac.abort();
      },
    });
    for await (const _ of c.watch({ signal: ac.signal })) assert.fail('no changes expected');
    assert.deepEqual(sleeps, [900, 1100, 1000]);
  });

  it('watch: after failures the interval backs off, then returns to normal', async () => {
    let failing = 3;
    handler = (req, res) => (failing-- > 0 ? send(res, 400, '{"error":"bad"}') : service({ incarnation: 1, events: [] })(req, res));
    const sleeps: number[] = [];
    const ac = new AbortController();
    const c = new ScheduledEventsClient({
      endpoint: base,
      sleep: async (ms) => {
        sleeps.push(ms);
        if (sleeps.length === 5) ac.abort();
      },
    });
    let errors = 0;
    for await (const item of c.watch({ signal: ac.signal, jitter: 0 })) if (item.type === 'error') errors++;
    assert.equal(errors, 3);
    assert.deepEqual(sleeps, [1000, 2000, 4000, 1000, 1000]);
  });
});
