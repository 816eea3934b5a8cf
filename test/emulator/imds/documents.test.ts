// GET documents over HTTP: contents per api-version, ETag / If-None-Match, incarnations.
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ScheduledEvent, ScheduledEventsDocument } from '../../../src/protocol/types.js';
import { eventsPath, startImds, T0, type ImdsHarness } from '../../support/imds-server.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const BASE_FIELDS = ['EventId', 'EventStatus', 'EventType', 'ResourceType', 'Resources', 'NotBefore'];

async function documentOf(h: ImdsHarness, version = '2020-07-01', vm?: string): Promise<ScheduledEventsDocument> {
  const res = await h.client.get(eventsPath(version, vm));
  assert.equal(res.status, 200, res.text);
  return res.body as ScheduledEventsDocument;
}

describe('IMDS documents per api-version', () => {
  let h: ImdsHarness;
  let freeze: string, preempt: string, terminate: string;
  before(async () => {
    h = await startImds({
      fleet: [
        { name: 'ss_0', tenant: 'ss', tenantKind: 'scaleSet', priority: 'Spot', terminateNotificationMinutes: 5 },
        { name: 'ss_1', tenant: 'ss', tenantKind: 'scaleSet', terminateNotificationMinutes: 5 },
      ],
    });
    freeze = h.engine.createOperation({ type: 'freeze', vms: ['ss_0', 'ss_1'] }).events[0]!;
    preempt = h.engine.createOperation({ type: 'spot-eviction', vms: ['ss_0'] }).events[0]!;
    terminate = h.engine.createOperation({ type: 'delete', vms: ['ss_1'] }).events[0]!;
  });
  after(() => h.close());

  const expected: [string, string[], string[]][] = [
    ['2017-03-01', ['Freeze'], BASE_FIELDS],
    ['2017-08-01', ['Freeze'], BASE_FIELDS],
    ['2017-11-01', ['Freeze', 'Preempt'], BASE_FIELDS],
    ['2019-01-01', ['Freeze', 'Preempt', 'Terminate'], BASE_FIELDS],
    ['2019-04-01', ['Freeze', 'Preempt', 'Terminate'], [...BASE_FIELDS, 'Description']],
    ['2019-08-01', ['Freeze', 'Preempt', 'Terminate'], [...BASE_FIELDS, 'Description', 'EventSource']],
    ['2020-07-01', ['Freeze', 'Preempt', 'Terminate'], [...BASE_FIELDS, 'Description', 'EventSource', 'DurationInSeconds']],
  ];
  for (const [version, types, fields] of expected) {
    it(`${version} shows ${types.join(', ')} with ${fields.length} fields`, async () => {
      const doc = await documentOf(h, version, 'ss_0');
      assert.deepEqual(Object.keys(doc), ['DocumentIncarnation', 'Events']);
      assert.equal(doc.DocumentIncarnation, 4);
      assert.deepEqual(
        doc.Events.map((e) => e.EventType),
        types,
      );
      for (const e of doc.Events) assert.deepEqual(Object.keys(e), fields, `${version} ${e.EventType}`);
    });
  }

  it('2017-03-01 shows resource names with a leading underscore; later versions do not', async () => {
    const preview = await documentOf(h, '2017-03-01', 'ss_1');
    assert.deepEqual(preview.Events[0]!.Resources, ['_ss_0', '_ss_1']);
    const ga = await documentOf(h, '2017-08-01', 'ss_1');
    assert.deepEqual(ga.Events[0]!.Resources, ['ss_0', 'ss_1']);
  });

  it('the full document at 2020-07-01 matches the seed example form', async () => {
    const doc = await documentOf(h, '2020-07-01', 'ss_1');
    const byType = new Map(doc.Events.map((e) => [e.EventType, e]));
    assert.deepEqual(byType.get('Freeze'), {
      EventId: freeze,
      EventStatus: 'Scheduled',
      EventType: 'Freeze',
      ResourceType: 'VirtualMachine',
      Resources: ['ss_0', 'ss_1'],
      NotBefore: 'Mon, 11 Apr 2022 22:26:58 GMT',
      Description: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
      EventSource: 'Platform',
      DurationInSeconds: 5,
    } satisfies ScheduledEvent);
    assert.equal(byType.get('Preempt')!.EventId, preempt);
    assert.equal(byType.get('Preempt')!.NotBefore, 'Mon, 11 Apr 2022 22:12:28 GMT');
    assert.equal(byType.get('Terminate')!.EventId, terminate);
    assert.deepEqual(byType.get('Terminate')!.Resources, ['ss_1']);
  });

  it('the same incarnation renders differently per version (cache keyed by both)', async () => {
    const a = await h.client.get(eventsPath('2017-03-01', 'ss_0'));
    const b = await h.client.get(eventsPath('2020-07-01', 'ss_0'));
    const c = await h.client.get(eventsPath('2017-03-01', 'ss_0'));
    assert.equal(a.headers.get('etag'), b.headers.get('etag'));
    assert.notEqual(a.text, b.text);
    assert.equal(a.text, c.text);
  });
});

describe('IMDS NotBefore and lifecycle over HTTP', () => {
  let h: ImdsHarness;
  beforeEach(async () => {
    h = await startImds();
  });
  afterEach(() => h.close());

  it('NotBefore is RFC 1123 while Scheduled and "" once Started', async () => {
    const id = h.engine.createOperation({ type: 'freeze', vms: ['vm0'] }).events[0]!;
    let doc = await documentOf(h);
    assert.equal(doc.Events[0]!.NotBefore, new Date(T0 + 15 * 60_000).toUTCString());
    assert.match(doc.Events[0]!.NotBefore, /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    h.clock.advance(15 * 60_000);
    doc = await documentOf(h);
    assert.deepEqual(
      doc.Events.map((e) => [e.EventId, e.EventStatus, e.NotBefore]),
      [[id, 'Started', '']],
    );
  });

  it('incarnation moves create → approve → complete, each seen over HTTP', async () => {
    const seen: [number, string | null, string[]][] = [];
    const look = async () => {
      const res = await h.client.get(eventsPath());
      const doc = res.body as ScheduledEventsDocument;
      seen.push([doc.DocumentIncarnation, res.headers.get('etag'), doc.Events.map((e) => e.EventStatus)]);
    };
    await look();
    const id = h.engine.createOperation({ type: 'freeze', vms: ['vm0'] }).events[0]!;
    await look();
    await look(); // no change, no new incarnation
    const approved = await h.client.approve(eventsPath(), [id]);
    assert.equal(approved.status, 200);
    await look();
    h.engine.complete(id);
    await look();
    assert.deepEqual(seen, [
      [1, '"1"', []],
      [2, '"2"', ['Scheduled']],
      [2, '"2"', ['Scheduled']],
      [3, '"3"', ['Started']],
      [4, '"4"', []],
    ]);
  });

  it('an event ends on its own 10 minutes after it Starts, whatever its duration', async () => {
    const id = h.engine.createOperation({ type: 'freeze', vms: ['vm0'] }).events[0]!;
    await h.client.approve(eventsPath(), [id]);
    // The Freeze's 5 s impact is over, yet the event stays Started: "Durée de l'impact : 7 secondes •
    // EventStatus: « Started » à complété (événement supprimé du tableau d'événements) : 10 minutes".
    h.clock.advance(5_000);
    assert.deepEqual(
      (await documentOf(h)).Events.map((e) => [e.EventId, e.EventStatus, e.DurationInSeconds]),
      [[id, 'Started', 5]],
    );
    h.clock.advance(10 * 60_000 - 5_001);
    assert.equal((await documentOf(h)).Events.length, 1);
    h.clock.advance(1);
    const doc = await documentOf(h);
    assert.deepEqual(doc, { DocumentIncarnation: 4, Events: [] });
  });
});

describe('IMDS ETag and If-None-Match', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds();
  });
  after(() => h.close());

  it('every document carries its incarnation as a quoted ETag', async () => {
    const res = await h.client.get(eventsPath());
    assert.equal(res.headers.get('etag'), '"1"');
    assert.equal(res.headers.get('content-type'), JSON_TYPE);
  });

  for (const tag of ['"1"', '1', 'W/"1"', 'w/"1"', '"0", "1"', '"7",W/"1"', '*']) {
    it(`If-None-Match ${tag} gets 304 with no body`, async () => {
      const res = await h.client.get(eventsPath(), { headers: { 'If-None-Match': tag } });
      assert.equal(res.status, 304);
      assert.equal(res.text, '');
      assert.equal(res.headers.get('etag'), '"1"');
    });
  }

  for (const tag of ['"2"', '2', 'W/"11"', '"1', '""']) {
    it(`If-None-Match ${tag} gets the document`, async () => {
      const res = await h.client.get(eventsPath(), { headers: { 'If-None-Match': tag } });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { DocumentIncarnation: 1, Events: [] });
    });
  }

  it('once the document changes the old tag gets 200 and the new one 304', async () => {
    h.engine.createOperation({ type: 'freeze', vms: ['vm0'] });
    const res = await h.client.get(eventsPath(), { headers: { 'If-None-Match': '"1"' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('etag'), '"2"');
    assert.equal((res.body as ScheduledEventsDocument).Events.length, 1);
    const again = await h.client.get(eventsPath(), { headers: { 'If-None-Match': '"2"' } });
    assert.equal(again.status, 304);
  });

  it('works at every version, including the preview', async () => {
    const res = await h.client.get(eventsPath('2017-03-01'), { metadata: false, headers: { 'If-None-Match': '2' } });
    assert.equal(res.status, 304);
  });
});
