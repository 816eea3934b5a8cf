import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { renderDocument, serializeDocument } from '../../src/protocol/render.js';
import { API_VERSIONS, type ApiVersion } from '../../src/protocol/versions.js';
import type { EventType, EventView } from '../../src/protocol/types.js';

const NB = Date.UTC(2022, 3, 11, 22, 26, 58);

function ev(over: Partial<EventView> = {}): EventView {
  return {
    id: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
    status: 'Scheduled',
    type: 'Freeze',
    resources: ['WestNO_0', 'WestNO_1'],
    notBefore: NB,
    description: 'Host server is undergoing maintenance.',
    source: 'Platform',
    durationInSeconds: 5,
    ...over,
  };
}

function idx(v: ApiVersion): number {
  return API_VERSIONS.indexOf(v);
}

describe('renderDocument', () => {
  it('prefixes Resources with _ for 2017-03-01 only', () => {
    for (const v of API_VERSIONS) {
      const [e] = renderDocument(1, [ev()], v).Events;
      const want = v === '2017-03-01' ? ['_WestNO_0', '_WestNO_1'] : ['WestNO_0', 'WestNO_1'];
      assert.deepEqual(e?.Resources, want, v);
    }
  });

  // Seed 002 (api-version notes, 2017-08-01): "Se quitó el guion bajo antepuesto de los nombres
  // de recursos en las máquinas virtuales de IaaS". The underscore was on IaaS VM names only.
  it('leaves cloud-service role instances without the 2017-03-01 underscore', () => {
    const roles = ev({ resources: ['FrontEnd_IN_0', 'FrontEnd_IN_1'] });
    const roleInstance = (name: string) => name.startsWith('FrontEnd_IN_');
    for (const v of API_VERSIONS) {
      const [e] = renderDocument(1, [roles], v, roleInstance).Events;
      assert.deepEqual(e?.Resources, ['FrontEnd_IN_0', 'FrontEnd_IN_1'], v);
    }
    // The predicate is asked per name: an IaaS VM beside them still gets its underscore.
    const mixed = ev({ resources: ['FrontEnd_IN_0', 'web0'] });
    assert.deepEqual(renderDocument(1, [mixed], '2017-03-01', roleInstance).Events[0]?.Resources, ['FrontEnd_IN_0', '_web0']);
    assert.deepEqual(renderDocument(1, [mixed], '2017-08-01', roleInstance).Events[0]?.Resources, ['FrontEnd_IN_0', 'web0']);
  });

  it('leaves out event types a version cannot show', () => {
    const firstOf: Record<EventType, ApiVersion> = {
      Freeze: '2017-03-01',
      Reboot: '2017-03-01',
      Redeploy: '2017-03-01',
      Preempt: '2017-11-01',
      Terminate: '2019-01-01',
    };
    for (const v of API_VERSIONS) {
      for (const [type, first] of Object.entries(firstOf) as [EventType, ApiVersion][]) {
        const doc = renderDocument(3, [ev({ type })], v);
        assert.equal(doc.Events.length, idx(v) >= idx(first) ? 1 : 0, `${type} @ ${v}`);
        assert.equal(doc.DocumentIncarnation, 3);
      }
    }
  });

  it('Preempt is absent before 2017-11-01 and Terminate before 2019-01-01', () => {
    const events = [ev({ id: 'a', type: 'Preempt' }), ev({ id: 'b', type: 'Terminate' })];
    assert.deepEqual(renderDocument(1, events, '2017-08-01').Events, []);
    assert.deepEqual(
      renderDocument(1, events, '2017-11-01').Events.map((e) => e.EventId),
      ['a'],
    );
    assert.deepEqual(
      renderDocument(1, events, '2019-01-01').Events.map((e) => e.EventId),
      ['a', 'b'],
    );
  });

  it('each optional field appears from exactly its first version', () => {
    const first = { Description: '2019-04-01', EventSource: '2019-08-01', DurationInSeconds: '2020-07-01' } as const;
    for (const v of API_VERSIONS) {
      const [e] = renderDocument(1, [ev()], v).Events;
      assert.ok(e);
      for (const [field, from] of Object.entries(first)) {
        assert.equal(Object.hasOwn(e, field), idx(v) >= idx(from), `${field} @ ${v}`);
      }
    }
    const [latest] = renderDocument(1, [ev({ source: 'User', durationInSeconds: -1 })], '2020-07-01').Events;
    assert.equal(latest?.Description, 'Host server is undergoing maintenance.');
    assert.equal(latest?.EventSource, 'User');
    assert.equal(latest?.DurationInSeconds, -1);
  });

  it('formats NotBefore as RFC 1123, and "" once Started', () => {
    const [s] = renderDocument(1, [ev()], '2020-07-01').Events;
    assert.equal(s?.NotBefore, 'Mon, 11 Apr 2022 22:26:58 GMT');
    const [started] = renderDocument(2, [ev({ status: 'Started', notBefore: null })], '2020-07-01').Events;
    assert.equal(started?.NotBefore, '');
    assert.equal(started?.EventStatus, 'Started');
  });

  it('always says ResourceType VirtualMachine', () => {
    for (const v of API_VERSIONS) assert.equal(renderDocument(1, [ev()], v).Events[0]?.ResourceType, 'VirtualMachine');
  });

  it('emits keys in wire order', () => {
    const [e] = renderDocument(1, [ev()], '2020-07-01').Events;
    assert.deepEqual(Object.keys(e ?? {}), [
      'EventId',
      'EventStatus',
      'EventType',
      'ResourceType',
      'Resources',
      'NotBefore',
      'Description',
      'EventSource',
      'DurationInSeconds',
    ]);
    const [old] = renderDocument(1, [ev()], '2017-08-01').Events;
    assert.deepEqual(Object.keys(old ?? {}), ['EventId', 'EventStatus', 'EventType', 'ResourceType', 'Resources', 'NotBefore']);
  });

  it('does not share the caller resources array', () => {
    const resources = ['vm1'];
    const [e] = renderDocument(1, [ev({ resources })], '2020-07-01').Events;
    e?.Resources.push('x');
    assert.deepEqual(resources, ['vm1']);
  });

  it('renders and serializes a document with two events', () => {
    const doc = renderDocument(
      2,
      [
        ev(),
        ev({
          id: '8A9C5B2E-0000-4A1D-9F3E-123456789ABC',
          status: 'Started',
          type: 'Reboot',
          resources: ['WestNO_2'],
          notBefore: null,
          description: 'Reboot requested by user.',
          source: 'User',
          durationInSeconds: -1,
        }),
      ],
      '2020-07-01',
    );
    assert.equal(
      serializeDocument(doc),
      '{"DocumentIncarnation":2,"Events":[' +
        '{"EventId":"C7061BAC-AFDC-4513-B24B-AA5F13A16123","EventStatus":"Scheduled","EventType":"Freeze",' +
        '"ResourceType":"VirtualMachine","Resources":["WestNO_0","WestNO_1"],"NotBefore":"Mon, 11 Apr 2022 22:26:58 GMT",' +
        '"Description":"Host server is undergoing maintenance.","EventSource":"Platform","DurationInSeconds":5},' +
        '{"EventId":"8A9C5B2E-0000-4A1D-9F3E-123456789ABC","EventStatus":"Started","EventType":"Reboot",' +
        '"ResourceType":"VirtualMachine","Resources":["WestNO_2"],"NotBefore":"",' +
        '"Description":"Reboot requested by user.","EventSource":"User","DurationInSeconds":-1}]}',
    );
  });

  it('renders an empty document', () => {
    assert.equal(serializeDocument(renderDocument(0, [], '2019-01-01')), '{"DocumentIncarnation":0,"Events":[]}');
  });
});
