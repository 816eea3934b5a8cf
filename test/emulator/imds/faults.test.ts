// Injected faults and the per-VM rate limit, over real sockets.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { GONE, INTERNAL_ERROR, TOO_MANY_REQUESTS } from '../../../src/protocol/errors.js';
import { computePath, eventsPath, startImds, type ImdsHarness } from '../../support/imds-server.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const EMPTY = { DocumentIncarnation: 1, Events: [] };

describe('IMDS injected faults', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({ fleet: [{ name: 'a' }, { name: 'b' }] });
  });
  afterEach(() => h.faults.clear());
  after(() => h.close());

  const statuses: [410 | 429 | 500, string][] = [
    [410, GONE],
    [429, TOO_MANY_REQUESTS],
    [500, INTERNAL_ERROR],
  ];
  for (const [status, error] of statuses) {
    it(`status ${status} answers once in the IMDS shape, then normal service resumes`, async () => {
      h.faults.add({ status });
      const res = await h.client.get(eventsPath('2020-07-01', 'a'));
      assert.equal(res.status, status);
      assert.deepEqual(res.body, { error });
      assert.equal(res.headers.get('content-type'), JSON_TYPE);
      const next = await h.client.get(eventsPath('2020-07-01', 'a'));
      assert.equal(next.status, 200);
      assert.deepEqual(next.body, EMPTY);
    });
  }

  it('a count is consumed request by request', async () => {
    h.faults.add({ status: 500, count: 3 });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await h.client.get(eventsPath('2020-07-01', 'a'))).status);
    assert.deepEqual(statuses, [500, 500, 500, 200, 200]);
    assert.equal(h.faults.size, 0);
  });

  it('latency delays the answer by at least that long, then answers normally', async () => {
    h.faults.add({ latencyMs: 150 });
    const start = performance.now();
    const res = await h.client.get(eventsPath('2020-07-01', 'a'));
    const elapsed = performance.now() - start;
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, EMPTY);
    assert.ok(elapsed >= 149, `took ${elapsed} ms`);
  });

  it('latency combines with a status', async () => {
    h.faults.add({ latencyMs: 80, status: 410 });
    const start = performance.now();
    const res = await h.client.get(eventsPath('2020-07-01', 'a'));
    assert.ok(performance.now() - start >= 79);
    assert.equal(res.status, 410);
  });

  it('drop closes the connection without an answer', async () => {
    h.faults.add({ drop: true });
    await assert.rejects(h.client.get(eventsPath('2020-07-01', 'a')), TypeError);
    const next = await h.client.get(eventsPath('2020-07-01', 'a'));
    assert.equal(next.status, 200);
  });

  it('drop on a POST drops before the approval is read', async () => {
    const id = h.engine.createOperation({ type: 'freeze', vms: ['a'] }).events[0]!;
    h.faults.add({ drop: true });
    await assert.rejects(h.client.approve(eventsPath('2020-07-01', 'a'), [id]));
    assert.equal(h.engine.event(id).status, 'Scheduled');
    h.engine.cancel(id);
  });

  it('a fault scoped to one VM does not touch another', async () => {
    h.faults.add({ vm: 'a', status: 410 });
    const other = await h.client.get(eventsPath('2020-07-01', 'b'));
    assert.equal(other.status, 200);
    assert.equal(h.faults.size, 1);
    const mine = await h.client.get(eventsPath('2020-07-01', 'a'));
    assert.equal(mine.status, 410);
  });

  it('requests refused by the request rules do not consume a fault', async () => {
    h.faults.add({ status: 500 });
    const bad = await h.client.get(eventsPath('2020-07-01', 'a'), { metadata: false });
    assert.equal(bad.status, 400);
    const unknown = await h.client.get(eventsPath('2020-07-01', 'nope'));
    assert.equal(unknown.status, 404);
    assert.equal(h.faults.size, 1);
    assert.equal((await h.client.get(eventsPath('2020-07-01', 'a'))).status, 500);
  });

  it('faults apply to the compute endpoint too', async () => {
    h.faults.add({ status: 410 });
    const res = await h.client.get(computePath('2021-02-01', 'a'));
    assert.equal(res.status, 410);
    assert.deepEqual(res.body, { error: GONE });
  });

  it('a VM removed while its answer is delayed gets 404, not 500', async () => {
    h.engine.addVm({ name: 'gone' });
    h.faults.add({ vm: 'gone', latencyMs: 100 });
    const pending = h.client.get(eventsPath('2020-07-01', 'gone'));
    await new Promise((r) => setTimeout(r, 20));
    h.engine.removeVm('gone');
    const res = await pending;
    assert.equal(res.status, 404);
    assert.match((res.body as { error: string }).error, /gone/);
  });
});

describe('IMDS rate limit', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({ fleet: [{ name: 'a' }, { name: 'b' }], rateLimit: 3 });
  });
  after(() => h.close());

  it('answers 429 past N requests per VM, per VM', async () => {
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await h.client.get(eventsPath('2020-07-01', 'a'))).status);
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    const limited = await h.client.get(eventsPath('2020-07-01', 'a'));
    assert.deepEqual(limited.body, { error: TOO_MANY_REQUESTS });
    assert.equal(limited.headers.get('content-type'), JSON_TYPE);
    assert.equal((await h.client.get(eventsPath('2020-07-01', 'b'))).status, 200);
  });

  it('counts POSTs and compute requests against the same VM', async () => {
    assert.equal((await h.client.get(computePath('2021-02-01', 'b'))).status, 200);
    assert.equal((await h.client.post(eventsPath('2020-07-01', 'b'), '{}')).status, 400);
    assert.equal((await h.client.get(eventsPath('2020-07-01', 'b'))).status, 429);
  });

  it('requests refused by the request rules are not counted', async () => {
    h.rateLimiter.reset();
    for (let i = 0; i < 10; i++) {
      assert.equal((await h.client.get(eventsPath('2020-07-01', 'a'), { metadata: false })).status, 400);
    }
    assert.equal((await h.client.get(eventsPath('2020-07-01', 'a'))).status, 200);
  });
});

describe('IMDS rate limit 0', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({ rateLimit: 0 });
  });
  after(() => h.close());

  it('never answers 429', async () => {
    for (let i = 0; i < 50; i++) assert.equal((await h.client.get(eventsPath())).status, 200);
  });
});
