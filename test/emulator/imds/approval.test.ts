// POST approvals over HTTP: content types, tenant-wide effect, and the 400s.
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ScheduledEventsDocument } from '../../../src/protocol/types.js';
import { eventsPath, startImds, type ImdsHarness } from '../../support/imds-server.js';

const body = (...ids: string[]) => JSON.stringify({ StartRequests: ids.map((EventId) => ({ EventId })) });
const errorOf = (res: { body: unknown }) => (res.body as { error: string }).error;

describe('IMDS approval', () => {
  let h: ImdsHarness;
  let id: string;
  beforeEach(async () => {
    h = await startImds({
      fleet: [
        { name: 'a0', tenant: 'as', tenantKind: 'availabilitySet' },
        { name: 'a1', tenant: 'as', tenantKind: 'availabilitySet', faultDomain: 1 },
        { name: 'lone' },
      ],
    });
    id = h.engine.createOperation({ type: 'freeze', vms: ['a0'] }).events[0]!;
  });
  afterEach(() => h.close());

  it('a curl-style form-encoded body is accepted', async () => {
    const res = await h.client.post(eventsPath('2020-07-01', 'a0'), body(id), {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.text, '');
    assert.equal(h.engine.event(id).status, 'Started');
  });

  for (const type of [undefined, 'application/json', 'text/plain;charset=UTF-8', 'application/octet-stream', 'nonsense']) {
    it(`content type ${String(type)} is accepted`, async () => {
      const headers: Record<string, string> = type === undefined ? {} : { 'content-type': type };
      const res = await h.client.post(eventsPath('2020-07-01', 'a0'), Buffer.from(body(id)), { headers });
      assert.equal(res.status, 200, res.text);
    });
  }

  it('a VM in the same tenant approves for every VM in Resources', async () => {
    const seen = (await h.client.get(eventsPath('2020-07-01', 'a1'))).body as ScheduledEventsDocument;
    assert.deepEqual(seen.Events[0]!.Resources, ['a0']);
    const res = await h.client.approve(eventsPath('2020-07-01', 'a1'), [seen.Events[0]!.EventId]);
    assert.equal(res.status, 200);
    const doc = (await h.client.get(eventsPath('2020-07-01', 'a0'))).body as ScheduledEventsDocument;
    assert.equal(doc.Events[0]!.EventStatus, 'Started');
    assert.equal(doc.Events[0]!.NotBefore, '');
  });

  it('approval works at the 2017-03-01 preview without the header', async () => {
    const res = await h.client.approve(eventsPath('2017-03-01', 'a0'), [id], { metadata: false });
    assert.equal(res.status, 200);
  });

  it('an id is matched case-insensitively', async () => {
    assert.equal((await h.client.approve(eventsPath('2020-07-01', 'a0'), [id.toLowerCase()])).status, 200);
  });

  it('approving twice, or after another VM, still gets 200', async () => {
    assert.equal((await h.client.approve(eventsPath('2020-07-01', 'a1'), [id])).status, 200);
    assert.equal((await h.client.approve(eventsPath('2020-07-01', 'a0'), [id])).status, 200);
    assert.equal((await h.client.approve(eventsPath('2020-07-01', 'a0'), [id])).status, 200);
  });

  it('an ended event the VM saw still gets 200', async () => {
    await h.client.approve(eventsPath('2020-07-01', 'a0'), [id]);
    h.engine.complete(id);
    const before = (await h.client.get(eventsPath('2020-07-01', 'a0'))).body as ScheduledEventsDocument;
    const res = await h.client.approve(eventsPath('2020-07-01', 'a0'), [id]);
    assert.equal(res.status, 200);
    const after = (await h.client.get(eventsPath('2020-07-01', 'a0'))).body as ScheduledEventsDocument;
    assert.deepEqual(after, before);
  });

  it('several events in one request', async () => {
    const other = h.engine.createOperation({ type: 'restart', vms: ['a1'] }).events[0]!;
    const res = await h.client.approve(eventsPath('2020-07-01', 'a0'), [id, other]);
    assert.equal(res.status, 200);
    assert.equal(h.engine.event(id).status, 'Started');
    assert.equal(h.engine.event(other).status, 'Started');
  });

  it('an id never issued gets 400 naming it, and nothing changes', async () => {
    const res = await h.client.approve(eventsPath('2020-07-01', 'a0'), [id, 'DEADBEEF-0000-0000-0000-000000000000']);
    assert.equal(res.status, 400);
    assert.match(
      errorOf(res),
      /^unknown EventId \(never issued, or ended longer ago than the emulator keeps: --history-limit\): DEADBEEF-0000-0000-0000-000000000000$/,
    );
    assert.equal(h.engine.event(id).status, 'Scheduled');
  });

  it('an id of another tenant gets 400', async () => {
    const res = await h.client.approve(eventsPath('2020-07-01', 'lone'), [id]);
    assert.equal(res.status, 400);
    assert.match(errorOf(res), /lone/);
    assert.equal(h.engine.event(id).status, 'Scheduled');
  });

  const malformed: [string, string, RegExp][] = [
    ['an empty body', '', /empty/],
    ['whitespace only', '   \n', /empty/],
    ['malformed JSON', '{"StartRequests":[', /not valid JSON/],
    ['a form-encoded pair', 'EventId=abc', /not valid JSON/],
    ['a JSON array', '[]', /JSON object/],
    ['no StartRequests', '{}', /StartRequests is required/],
    ['StartRequests not an array', '{"StartRequests":{}}', /StartRequests must be an array, got object/],
    ['an empty StartRequests', '{"StartRequests":[]}', /at least one/],
    ['an entry not an object', '{"StartRequests":["x"]}', /StartRequests\[0\] must be an object/],
    ['a missing EventId', '{"StartRequests":[{}]}', /StartRequests\[0\]\.EventId is required/],
    ['a numeric EventId', '{"StartRequests":[{"EventId":42}]}', /EventId must be a string, got number/],
    ['an empty EventId', '{"StartRequests":[{"EventId":""}]}', /must not be empty/],
  ];
  for (const [name, text, message] of malformed) {
    it(`${name} gets 400 naming the problem`, async () => {
      const res = await h.client.post(eventsPath('2020-07-01', 'a0'), text, {
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 400);
      assert.deepEqual(Object.keys(res.body as object), ['error']);
      assert.match(errorOf(res), message);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    });
  }

  it('a POST with no body at all gets 400', async () => {
    const res = await h.client.request('POST', eventsPath('2020-07-01', 'a0'));
    assert.equal(res.status, 400);
    assert.match(errorOf(res), /empty/);
  });

  it('invalid UTF-8 gets 400', async () => {
    const res = await h.client.post(eventsPath('2020-07-01', 'a0'), new Uint8Array([0x7b, 0xff, 0x7d]));
    assert.equal(res.status, 400);
    assert.match(errorOf(res), /not valid JSON/);
  });
});

describe('IMDS approval and the document cache', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds();
  });
  after(() => h.close());

  it('an approval shows in the very next GET', async () => {
    const id = h.engine.createOperation({ type: 'freeze', vms: ['vm0'] }).events[0]!;
    const first = await h.client.get(eventsPath());
    assert.equal((first.body as ScheduledEventsDocument).Events[0]!.EventStatus, 'Scheduled');
    await h.client.approve(eventsPath(), [id]);
    const second = await h.client.get(eventsPath(), { headers: { 'If-None-Match': first.headers.get('etag')! } });
    assert.equal(second.status, 200);
    assert.equal((second.body as ScheduledEventsDocument).Events[0]!.EventStatus, 'Started');
  });
});
