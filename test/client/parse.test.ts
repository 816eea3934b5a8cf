import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ImdsProtocolError, parseCompute, parseEventsDocument, type EventsDocument } from '../../src/client/index.js';

const FIXTURES = new URL('./fixtures/', import.meta.url);

function fixture(name: string): unknown {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as unknown;
}

function parseFixture(name: string): EventsDocument {
  return parseEventsDocument(fixture(name), '"x"');
}

describe('parseEventsDocument: real-world shapes (fixtures)', () => {
  it('parses every fixture', () => {
    const names = readdirSync(FIXTURES).filter((n) => n.endsWith('.json'));
    assert.ok(names.length >= 8);
    for (const name of names) assert.doesNotThrow(() => parseFixture(name), name);
  });

  it('keeps a lowercase GUID as sent and reads the 2020-07-01 fields', () => {
    const doc = parseFixture('lowercase-guids.json');
    assert.equal(doc.incarnation, 3);
    assert.equal(doc.etag, '"x"');
    const [e] = doc.events;
    assert.equal(e?.id, 'f020ba2e-3bc0-4c40-a10b-86575a9eabd5');
    assert.equal(e?.status, 'Scheduled');
    assert.equal(e?.type, 'Freeze');
    assert.equal(e?.resourceType, 'VirtualMachine');
    assert.deepEqual(e?.resources, ['WestNO_0', 'WestNO_1']);
    assert.equal(e?.notBefore?.toISOString(), '2022-04-11T22:26:58.000Z');
    assert.equal(e?.source, 'Platform');
    assert.equal(e?.durationInSeconds, 5);
    assert.equal(e?.raw.EventId, 'f020ba2e-3bc0-4c40-a10b-86575a9eabd5');
  });

  it('reads the 2017-03-01 shape: underscored names kept, absent fields defaulted', () => {
    const [e] = parseFixture('api-2017-03-01.json').events;
    assert.deepEqual(e?.resources, ['_FrontEnd_IN_0', '_BackEnd_IN_0']);
    assert.equal(e?.description, '');
    assert.equal(e?.source, null);
    assert.equal(e?.durationInSeconds, -1);
    assert.equal(e?.notBefore?.toISOString(), '2016-09-19T18:29:47.000Z');
  });

  it('reads a 2019-01-01 Preempt without Description, EventSource or DurationInSeconds', () => {
    const [e] = parseFixture('api-2019-01-01.json').events;
    assert.equal(e?.type, 'Preempt');
    assert.equal(e?.description, '');
    assert.equal(e?.source, null);
    assert.equal(e?.durationInSeconds, -1);
  });

  it('reads an empty Description, blank EventSource and a Started event with NotBefore ""', () => {
    const [e] = parseFixture('empty-description.json').events;
    assert.equal(e?.status, 'Started');
    assert.equal(e?.notBefore, null);
    assert.equal(e?.description, '');
    assert.equal(e?.source, null);
  });

  it('reads DocumentIncarnation and DurationInSeconds sent as numeric strings', () => {
    const doc = parseFixture('incarnation-string.json');
    assert.equal(doc.incarnation, 7);
    assert.equal(doc.events[0]?.durationInSeconds, 30);
    assert.equal(doc.events[0]?.source, 'User');
  });

  it('keeps an unknown EventType, EventStatus and extra fields', () => {
    const [e] = parseFixture('unknown-event-type.json').events;
    assert.equal(e?.type, 'Hibernate');
    assert.equal(e?.status, 'Pending');
    assert.equal(e?.raw.ImpactLevel, 'High');
  });

  it('keeps two events in document order', () => {
    const doc = parseFixture('scale-set-two-events.json');
    assert.deepEqual(
      doc.events.map((e) => [e.id, e.status, e.type]),
      [
        ['C7061BAC-AFDC-4513-B24B-AA5F13A16123', 'Scheduled', 'Terminate'],
        ['e2c9d3a0-1f4b-4a7e-9b6c-8d5e4f3a2b10', 'Started', 'Freeze'],
      ],
    );
  });

  it('reads an empty document', () => {
    assert.deepEqual(parseFixture('empty.json'), { incarnation: 0, events: [], etag: '"x"' });
  });
});

describe('parseEventsDocument: leniency and refusals', () => {
  const event = { EventId: 'A', EventStatus: 'Scheduled', EventType: 'Freeze', Resources: ['vm0'], NotBefore: '' };

  it('defaults everything but EventId', () => {
    const [e] = parseEventsDocument({ DocumentIncarnation: 1, Events: [{ EventId: 'a' }] }).events;
    assert.deepEqual(
      { ...e, raw: undefined },
      {
        id: 'a',
        status: 'Scheduled',
        type: '',
        resourceType: 'VirtualMachine',
        resources: [],
        notBefore: null,
        description: '',
        source: null,
        durationInSeconds: -1,
        raw: undefined,
      },
    );
  });

  it('takes an absent incarnation as 0 and an etag of null by default', () => {
    const doc = parseEventsDocument({ Events: [] });
    assert.equal(doc.incarnation, 0);
    assert.equal(doc.etag, null);
  });

  it('accepts keys in other cases, ISO times and a lone resource string', () => {
    const doc = parseEventsDocument({
      documentIncarnation: 2,
      events: [{ eventId: 'b', notBefore: '2022-04-11T22:26:58Z', resources: 'vm1', durationInSeconds: 0 }],
    });
    assert.equal(doc.incarnation, 2);
    assert.equal(doc.events[0]?.id, 'b');
    assert.equal(doc.events[0]?.notBefore?.toISOString(), '2022-04-11T22:26:58.000Z');
    assert.deepEqual(doc.events[0]?.resources, ['vm1']);
    assert.equal(doc.events[0]?.durationInSeconds, 0);
  });

  it('turns an unreadable NotBefore into null rather than failing the document', () => {
    const doc = parseEventsDocument({ DocumentIncarnation: 1, Events: [{ ...event, NotBefore: 'soon' }] });
    assert.equal(doc.events[0]?.notBefore, null);
    assert.equal(doc.events[0]?.raw.NotBefore, 'soon');
  });

  it('drops non-string Resources entries and treats null Description as empty', () => {
    const doc = parseEventsDocument({ DocumentIncarnation: 1, Events: [{ ...event, Resources: ['a', 3, null, ''], Description: null }] });
    assert.deepEqual(doc.events[0]?.resources, ['a']);
    assert.equal(doc.events[0]?.description, '');
  });

  for (const [label, json] of [
    ['an array', []],
    ['null', null],
    ['a string', 'Events'],
    ['no Events', { DocumentIncarnation: 1 }],
    ['Events not an array', { DocumentIncarnation: 1, Events: {} }],
    ['an event that is not an object', { DocumentIncarnation: 1, Events: ['x'] }],
    ['an event without EventId', { DocumentIncarnation: 1, Events: [{ EventStatus: 'Scheduled' }] }],
    ['a non-numeric incarnation', { DocumentIncarnation: 'seven', Events: [] }],
  ] as const) {
    it(`refuses ${label} with ImdsProtocolError`, () => {
      assert.throws(
        () => parseEventsDocument(json),
        (err: unknown) => err instanceof ImdsProtocolError && typeof err.body === 'string',
      );
    });
  }
});

describe('parseCompute', () => {
  it('reads IMDS string domains as numbers', () => {
    const c = parseCompute({
      name: 'myss_3',
      vmId: 'id',
      vmScaleSetName: 'myss',
      platformFaultDomain: '2',
      platformUpdateDomain: '4',
      priority: 'Spot',
      zone: '1',
      osProfile: { adminUsername: 'azureuser', computerName: 'myss000003' },
    });
    assert.deepEqual(
      { ...c, raw: undefined },
      {
        name: 'myss_3',
        vmId: 'id',
        vmScaleSetName: 'myss',
        computerName: 'myss000003',
        platformFaultDomain: 2,
        platformUpdateDomain: 4,
        priority: 'Spot',
        raw: undefined,
      },
    );
    assert.equal(c.raw.zone, '1');
  });

  it('defaults absent fields and refuses a body without a name', () => {
    const c = parseCompute({ name: 'vm0' });
    assert.equal(c.vmScaleSetName, '');
    assert.equal(c.computerName, '');
    assert.equal(parseCompute({ name: 'vm0', osProfile: 'x' }).computerName, '');
    assert.equal(c.platformFaultDomain, 0);
    assert.throws(() => parseCompute({ vmId: 'x' }), ImdsProtocolError);
    assert.throws(() => parseCompute('vm0'), ImdsProtocolError);
  });
});
