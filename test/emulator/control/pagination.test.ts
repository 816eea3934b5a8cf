// GET /v1/history and GET /v1/operations a page at a time: newest first, cursors that stay put,
// limits enforced, and 400s that name the parameter.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildOpenApiDocument } from '../../../src/emulator/control/openapi.js';
import { History, OperationList } from '../../../src/emulator/control/schemas.js';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../../../src/emulator/engine/paging.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { caller, type Call } from '../../support/control.js';

const T0 = Date.parse('2024-01-01T00:00:00.000Z');

const servers: FastifyInstance[] = [];
after(async () => {
  await Promise.all(servers.map((app) => app.close()));
});

async function start(historyLimit?: number): Promise<{ engine: Engine; call: Call; base: string }> {
  const clock = new ManualClock(T0);
  const engine = new Engine({ clock, fleet: [{ name: 'vm0' }, { name: 'vm1' }], ...(historyLimit === undefined ? {} : { historyLimit }) });
  const app = buildControlServer(
    { engine, clock, faults: new FaultRegistry(), rateLimiter: new RateLimiter() },
    { dashboardDir: mkdtempSync(join(tmpdir(), 'forewarn-pages-')) },
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  servers.push(app);
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { engine, call: caller(base), base };
}

/** A freeze of vm0 cancelled at once, through the API. Returns the operation and event ids. */
async function churn(call: Call): Promise<{ operation: string; event: string }> {
  const created = await call('POST', '/v1/operations', { type: 'freeze', vms: ['vm0'] });
  assert.equal(created.status, 201, created.text);
  const event = created.json.events[0] as string;
  const cancelled = await call('POST', `/v1/events/${event}/cancel`);
  assert.equal(cancelled.status, 200, cancelled.text);
  return { operation: created.json.operation, event };
}

const ids = (list: { id: string }[]) => list.map((x) => x.id);

describe('GET /v1/history, paged', () => {
  test('newest first; a cursor keeps its place while newer events end; next is null at the end', async () => {
    const { call } = await start();
    const first3 = [await churn(call), await churn(call), await churn(call)].map((c) => c.event);
    const page1 = await call('GET', '/v1/history?limit=2');
    assert.equal(page1.status, 200, page1.text);
    History.parse(page1.json);
    assert.deepEqual(ids(page1.json.events), [first3[2], first3[1]]);
    assert.equal(typeof page1.json.next, 'string');
    const newer = (await churn(call)).event;
    const page2 = await call('GET', `/v1/history?limit=2&before=${encodeURIComponent(page1.json.next)}`);
    assert.deepEqual(page2.json, { events: page2.json.events, next: null });
    assert.deepEqual(ids(page2.json.events), [first3[0]]);
    const all = await call('GET', '/v1/history');
    assert.deepEqual(ids(all.json.events), [newer, ...[...first3].reverse()]);
    assert.equal(all.json.next, null);
  });

  test(`${DEFAULT_PAGE_LIMIT} by default, at most ${MAX_PAGE_LIMIT}`, async () => {
    const { engine, call } = await start();
    for (let i = 0; i < DEFAULT_PAGE_LIMIT + 5; i++) {
      const id = engine.createOperation({ type: 'freeze', vms: ['vm1'] }).events[0]!;
      engine.cancel(id);
    }
    const page = await call('GET', '/v1/history');
    assert.equal(page.json.events.length, DEFAULT_PAGE_LIMIT);
    const rest = await call('GET', `/v1/history?before=${page.json.next}`);
    assert.equal(rest.json.events.length, 5);
    assert.equal(rest.json.next, null);
    const whole = await call('GET', `/v1/history?limit=${MAX_PAGE_LIMIT}`);
    assert.equal(whole.json.events.length, DEFAULT_PAGE_LIMIT + 5);
    assert.equal(whole.json.next, null);
    const ops = await call('GET', '/v1/operations');
    OperationList.parse(ops.json);
    assert.equal(ops.json.operations.length, DEFAULT_PAGE_LIMIT);
    assert.notEqual(ops.json.next, null);
  });

  test('an event older than --history-limit is gone: its late approval is 400 as for an id never issued', async () => {
    const { call } = await start(2);
    const [oldest, ...kept] = [await churn(call), await churn(call), await churn(call)].map((c) => c.event);
    assert.deepEqual(ids((await call('GET', '/v1/history')).json.events), [...kept].reverse());
    const late = await call('POST', `/v1/events/${oldest}/approve`, { vm: 'vm0' });
    assert.equal(late.status, 400, late.text);
    assert.equal(
      late.json.error,
      `unknown EventId (never issued, or ended longer ago than the emulator keeps: --history-limit): ${oldest}`,
    );
    // One still kept has merely ended.
    assert.equal((await call('POST', `/v1/events/${kept[0]}/approve`, { vm: 'vm0' })).status, 409);
    assert.equal((await call('GET', '/v1/operations')).json.operations.length, 2);
  });
});

describe('GET /v1/operations, paged', () => {
  test('status picks running, completed or cancelled ones; pages like history', async () => {
    const { call } = await start();
    const cancelled = (await churn(call)).operation;
    const running: string[] = [];
    for (const vm of ['vm0', 'vm1']) running.push((await call('POST', '/v1/operations', { type: 'restart', vms: [vm] })).json.operation);
    const page1 = await call('GET', '/v1/operations?status=running&limit=1');
    assert.equal(page1.status, 200, page1.text);
    OperationList.parse(page1.json);
    assert.deepEqual(ids(page1.json.operations), [running[1]]);
    const page2 = await call('GET', `/v1/operations?status=running&limit=1&before=${page1.json.next}`);
    assert.deepEqual(ids(page2.json.operations), [running[0]]);
    assert.equal(page2.json.next, null);
    assert.deepEqual(ids((await call('GET', '/v1/operations?status=cancelled')).json.operations), [cancelled]);
    assert.deepEqual((await call('GET', '/v1/operations?status=completed')).json, { operations: [], next: null });
    assert.deepEqual(ids((await call('GET', '/v1/operations')).json.operations), [running[1], running[0], cancelled]);
  });
});

describe('bad paging parameters', () => {
  const cases: [string, RegExp][] = [
    ['limit=0', /^limit: must be an integer from 1 to 1000, got "0"$/],
    [`limit=${MAX_PAGE_LIMIT + 1}`, /^limit: must be an integer from 1 to 1000, got "1001"$/],
    ['limit=abc', /^limit: .*got "abc"$/],
    ['limit=1.5', /^limit: .*got "1.5"$/],
    ['limit=', /^limit: .*got ""$/],
    ['limit=-3', /^limit: .*got "-3"$/],
    ['limit=1&limit=2', /^limit: give it once/],
    ['before=abc', /^before: "abc" is not a cursor; pass the "next" of an earlier page$/],
    ['before=-1', /^before: /],
    ['before=', /^before: /],
  ];
  for (const path of ['/v1/history', '/v1/operations']) {
    test(`${path}: 400 naming the parameter`, async () => {
      const { call } = await start();
      for (const [query, message] of cases) {
        const res = await call('GET', `${path}?${query}`);
        assert.equal(res.status, 400, `${query}: ${res.text}`);
        assert.match(res.json.error, message, query);
      }
    });
  }

  test('/v1/operations: an unknown status is 400', async () => {
    const { call } = await start();
    const res = await call('GET', '/v1/operations?status=done');
    assert.equal(res.status, 400);
    assert.equal(res.json.error, 'status: must be one of running, completed, cancelled, got "done"');
  });
});

test('the OpenAPI document describes the paging parameters and the 400', () => {
  const doc = buildOpenApiDocument() as {
    paths: Record<string, { get: { parameters?: { name: string }[]; responses: Record<string, unknown> } }>;
  };
  const names = (path: string) => doc.paths[path]!.get.parameters!.map((p) => p.name);
  assert.deepEqual(names('/v1/history'), ['limit', 'before']);
  assert.deepEqual(names('/v1/operations'), ['limit', 'before', 'status']);
  for (const path of ['/v1/history', '/v1/operations']) assert.ok(doc.paths[path]!.get.responses['400'], path);
});

// The page's modules are checked against the DOM's types (src/dashboard/tsconfig.json), not this
// project's, so they are loaded at run time by URL, as far as they are used here.
interface PageApi {
  history(limit: number): Promise<{ id: string }[]>;
  operations(status: string): Promise<{ id: string }[]>;
}
async function pageModules(): Promise<{ ControlApi: new (storage: null) => PageApi; TIMELINE_HISTORY: number }> {
  const load = (path: string) =>
    import(new URL(`../../../src/dashboard/${path}`, import.meta.url).href) as Promise<Record<string, unknown>>;
  const [api, timeline] = await Promise.all([load('api.ts'), load('components/Timeline.tsx')]);
  return { ControlApi: api.ControlApi as new (storage: null) => PageApi, TIMELINE_HISTORY: timeline.TIMELINE_HISTORY as number };
}

describe("the dashboard's calls", () => {
  test('ask for the 200 latest ended events in one page, and for every running operation only', async () => {
    const { ControlApi, TIMELINE_HISTORY } = await pageModules();
    assert.equal(TIMELINE_HISTORY, 200);
    const { engine, base } = await start();
    for (let i = 0; i < TIMELINE_HISTORY + 50; i++) {
      const id = engine.createOperation({ type: 'freeze', vms: ['vm1'] }).events[0]!;
      engine.cancel(id);
    }
    const running = Array.from({ length: MAX_PAGE_LIMIT + 1 }, () => engine.createOperation({ type: 'freeze', vms: ['vm0'] }).id);
    const asked: string[] = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      asked.push(String(input));
      return realFetch(new URL(String(input), base), init);
    };
    try {
      const api = new ControlApi(null);
      const history = await api.history(TIMELINE_HISTORY);
      assert.equal(history.length, TIMELINE_HISTORY);
      assert.equal(history[0]!.id, engine.history({ limit: 1 }).items[0]!.id, 'the latest first');
      const operations = await api.operations('running');
      assert.deepEqual(ids(operations), [...running].reverse());
      assert.deepEqual(
        asked.map((u) => u.replace(/before=\d+/, 'before=C')),
        [
          `/v1/history?limit=${TIMELINE_HISTORY}`,
          `/v1/operations?status=running&limit=${MAX_PAGE_LIMIT}`,
          `/v1/operations?status=running&limit=${MAX_PAGE_LIMIT}&before=C`,
        ],
      );
    } finally {
      globalThis.fetch = realFetch;
    }
  });
});
