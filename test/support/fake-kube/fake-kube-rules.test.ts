// The fake refuses what kube-apiserver refuses, with the status, reason and message it answers: one
// test per rule of README.md's table (decoding, validation, concurrency, patches), over plain HTTP so
// every byte sent is the test's own; and what the agent really sends, through its own client, is taken.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { agentApi } from './client.js';
import { MICRO_TIME } from './gotime.js';
import { startFakeKube, type FakeKube } from './server.js';

type Json = Record<string, unknown>;

let kube: FakeKube;
before(async () => {
  kube = await startFakeKube({ terminationDelayMs: 50, readyDelayMs: 50 });
  kube.addNamespace('forewarn');
  kube.addNode({ name: 'n1', providerID: 'azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-1' });
});
after(() => kube.close());

interface Answer {
  status: number;
  json: Json;
  warnings: string[];
}

async function send(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Answer> {
  const res = await fetch(`${kube.url}${path}`, {
    method,
    ...(body !== undefined
      ? { headers: { 'content-type': contentType }, body: typeof body === 'string' ? body : JSON.stringify(body) }
      : {}),
  });
  const text = await res.text();
  const warning = res.headers.get('warning');
  return {
    status: res.status,
    json: text ? (JSON.parse(text) as Json) : {},
    warnings: warning === null ? [] : warning.split(/,\s*(?=299 )/),
  };
}

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/forewarn/leases';
const EVENTS = '/api/v1/namespaces/default/events';
const micro = '2026-11-27T03:25:11.084000Z';

function lease(name: string, spec: Json = {}, metadata: Json = {}): Json {
  return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, ...metadata }, spec: { holderIdentity: 'n1', ...spec } };
}

/** The Status a refusal carries, for one assertion: [code, reason, message]. */
function status(answer: Answer): [number, unknown, unknown] {
  return [answer.status, answer.json.reason, answer.json.message];
}

describe('fake API server: decoding as kube-apiserver decodes (400)', () => {
  it('MicroTime: exactly six fractional digits (RFC3339Micro); other zones taken and written back in UTC; null is unset', async () => {
    for (const [value, why] of [
      ['2026-11-27T03:25:11.084Z', 'cannot parse ".084Z" as ".000000"'],
      ['2026-11-27T03:25:11Z', 'cannot parse "Z" as ".000000"'],
      // A real server's answer to nine digits, as reported in krustlet/krustlet#5.
      ['2020-02-28T20:11:41.636526400Z', 'cannot parse "400Z" as "Z07:00"'],
      ['2026-11-27 03:25:11.084000Z', 'cannot parse " 03:25:11.084000Z" as "T"'],
    ]) {
      const refused = await send('POST', LEASES, lease('micro', { renewTime: value }));
      assert.deepEqual(status(refused), [
        400,
        'BadRequest',
        `Lease in version "v1" cannot be handled as a Lease: parsing time "${value}" as "2006-01-02T15:04:05.000000Z07:00": ${why}`,
      ]);
    }
    const month = await send('POST', LEASES, lease('micro', { acquireTime: '2026-13-27T03:25:11.084000Z' }));
    assert.equal(
      month.json.message,
      'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-13-27T03:25:11.084000Z": month out of range',
    );
    const number = await send('POST', LEASES, lease('micro', { renewTime: 1764213911 }));
    assert.equal(
      number.json.message,
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number into Go value of type string',
    );

    const taken = await send('POST', LEASES, lease('micro', { renewTime: '2026-11-27T04:25:11.084000+01:00', acquireTime: null }));
    assert.equal(taken.status, 201, JSON.stringify(taken.json));
    const spec = taken.json.spec as Json;
    assert.equal(spec.renewTime, micro);
    assert.equal('acquireTime' in spec, false);
  });

  it('Time: RFC3339 with any fraction, or none; written back in whole seconds, UTC', async () => {
    const node = kube.node('n1');
    const event = (firstTimestamp: unknown) => ({
      metadata: { generateName: 'n1.time.' },
      involvedObject: { kind: 'Node', name: 'n1', uid: node.metadata.uid, apiVersion: 'v1' },
      reason: 'Tested',
      firstTimestamp,
    });
    const created = await send('POST', EVENTS, event('2026-11-27T03:25:11.084Z'));
    assert.equal(created.status, 201, JSON.stringify(created.json));
    assert.equal(created.json.firstTimestamp, '2026-11-27T03:25:11Z');
    assert.equal((await send('POST', EVENTS, event('2026-11-27T04:25:11.123456789+01:00'))).json.firstTimestamp, '2026-11-27T03:25:11Z');
    const dateOnly = await send('POST', EVENTS, event('2026-11-27'));
    assert.deepEqual(status(dateOnly), [
      400,
      'BadRequest',
      'Event in version "v1" cannot be handled as a Event: parsing time "2026-11-27" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"',
    ]);
  });

  it('a value of the wrong JSON type: the first type error, named by Go struct field and type', async () => {
    const text = await send('POST', LEASES, lease('typed', { leaseDurationSeconds: '60' }));
    assert.deepEqual(status(text), [
      400,
      'BadRequest',
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32',
    ]);
    const fraction = await send('POST', LEASES, lease('typed', { leaseTransitions: 1.5 }));
    assert.equal(
      fraction.json.message,
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number 1.5 into Go struct field LeaseSpec.spec.leaseTransitions of type int32',
    );
    const label = await send('POST', LEASES, lease('typed', {}, { labels: { a: 1 } }));
    assert.equal(
      label.json.message,
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string',
    );
  });

  it('unknown fields: a Warning by default (and dropped), 400 under fieldValidation=Strict, nothing under Ignore; other values 422', async () => {
    const body = lease('unknown', { renewTime: micro, holder: 'n1' }, { labelz: { a: 'b' } });
    const warned = await send('POST', LEASES, body);
    assert.equal(warned.status, 201);
    assert.deepEqual(warned.warnings, ['299 - "unknown field \\"metadata.labelz\\""', '299 - "unknown field \\"spec.holder\\""']);
    assert.equal('holder' in (warned.json.spec as Json), false, 'dropped, as a typed decode drops it');
    assert.deepEqual(kube.requests.at(-1)?.warnings, ['unknown field "metadata.labelz"', 'unknown field "spec.holder"']);

    const strict = await send('POST', `${LEASES}?fieldValidation=Strict`, lease('unknown-strict', { holder: 'n1' }));
    assert.deepEqual(status(strict), [
      400,
      'BadRequest',
      'Lease in version "v1" cannot be handled as a Lease: strict decoding error: unknown field "spec.holder"',
    ]);
    const ignored = await send('POST', `${LEASES}?fieldValidation=Ignore`, lease('unknown-ignored', { holder: 'n1' }));
    assert.deepEqual([ignored.status, ignored.warnings], [201, []]);
    const bad = await send('POST', `${LEASES}?fieldValidation=Loud`, lease('unknown-loud'));
    assert.deepEqual(status(bad), [
      422,
      'Invalid',
      'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"',
    ]);
  });

  it('a body that is no object of the kind: 400; a media type other than JSON: 415', async () => {
    const notJson = await send('POST', LEASES, '{"metadata":');
    assert.equal(notJson.status, 400);
    assert.match(
      String(notJson.json.message),
      /^the object provided is unrecognized \(must be of type Lease\): couldn't get version\/kind; json parse error: /,
    );
    const other = await send('POST', LEASES, lease('ct'), 'text/plain');
    assert.deepEqual(status(other), [
      415,
      'UnsupportedMediaType',
      'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf',
    ]);
  });
});

describe('fake API server: validation as kube-apiserver validates (422)', () => {
  it('a Lease’s name is a DNS subdomain, and generateName one once 5 characters are added', async () => {
    const upper = await send('POST', LEASES, lease('Slot_0'));
    assert.deepEqual(status(upper), [
      422,
      'Invalid',
      'Lease.coordination.k8s.io "Slot_0" is invalid: metadata.name: Invalid value: "Slot_0": a lowercase RFC 1123 subdomain must consist of ' +
        "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', " +
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ]);
    assert.deepEqual(upper.json.details, {
      name: 'Slot_0',
      group: 'coordination.k8s.io',
      kind: 'Lease',
      causes: [
        {
          reason: 'FieldValueInvalid',
          message: String(upper.json.message).slice(String(upper.json.message).indexOf('Invalid value:')),
          field: 'metadata.name',
        },
      ],
    });
    const generated = await send('POST', LEASES, { metadata: { generateName: 'slot-' }, spec: {} });
    assert.equal(generated.status, 201);
    assert.match(String((generated.json.metadata as Json).name), /^slot-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    const badPrefix = await send('POST', LEASES, { metadata: { generateName: 'Slot-' }, spec: {} });
    assert.equal(badPrefix.status, 422);
    assert.match(
      String(badPrefix.json.message),
      /^Lease\.coordination\.k8s\.io "Slot-[a-z0-9]{5}" is invalid: \[metadata\.generateName: Invalid value: "Slot-": /,
    );
    const nameless = await send('POST', LEASES, { metadata: {}, spec: {} });
    assert.deepEqual(status(nameless), [
      422,
      'Invalid',
      'Lease.coordination.k8s.io "" is invalid: metadata.name: Required value: name or generateName is required',
    ]);
  });

  it('a core/v1 Event may be named anything that fits a URL path; a long generateName is cut to 58 characters', async () => {
    const node = kube.node('n1');
    const base = `${'a'.repeat(60)}.forewarn.`;
    const created = await send('POST', EVENTS, {
      metadata: { generateName: base },
      involvedObject: { kind: 'Node', name: 'n1', uid: node.metadata.uid },
      reason: 'Long',
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const name = String((created.json.metadata as Json).name);
    assert.equal(name.length, 63);
    assert.ok(name.startsWith(base.slice(0, 58)));
    const slash = await send('POST', EVENTS, { metadata: { name: 'a/b' }, involvedObject: { kind: 'Node', name: 'n1' }, reason: 'R' });
    assert.deepEqual(status(slash), [422, 'Invalid', `Event "a/b" is invalid: metadata.name: Invalid value: "a/b": may not contain '/'`]);
  });

  it('a Node’s event lives in default, as legacyValidateEvent demands', async () => {
    const misplaced = await send('POST', '/api/v1/namespaces/forewarn/events', {
      metadata: { name: 'x' },
      involvedObject: { kind: 'Node', name: 'n1' },
      reason: 'R',
    });
    assert.deepEqual(status(misplaced), [
      422,
      'Invalid',
      'Event "x" is invalid: involvedObject.namespace: Invalid value: "": does not match event.namespace',
    ]);
  });

  it('label keys and values: qualified names, 63-byte values', async () => {
    const bad = await send('POST', LEASES, lease('labels', {}, { labels: { 'a/b/c': 'ok', fine: 'x'.repeat(64) } }));
    assert.equal(bad.status, 422);
    assert.equal(
      bad.json.message,
      'Lease.coordination.k8s.io "labels" is invalid: [metadata.labels: Invalid value: "a/b/c": a valid label key must consist of ' +
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  " +
        "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' " +
        `(e.g. 'example.com/MyName'), metadata.labels: Invalid value: "${'x'.repeat(64)}": must be no more than 63 bytes]`,
    );
    assert.equal((await send('POST', LEASES, lease('labels', {}, { labels: { 'forewarn.io/node': 'node-a', empty: '' } }))).status, 201);
  });

  it('annotation keys are qualified names (case aside), and all of them at most 256 KiB', async () => {
    const prefix = await send('POST', LEASES, lease('annotations', {}, { annotations: { '/x': 'v' } }));
    assert.deepEqual(status(prefix), [
      422,
      'Invalid',
      'Lease.coordination.k8s.io "annotations" is invalid: metadata.annotations: Invalid value: "/x": prefix part must be non-empty',
    ]);
    const big = await send('POST', LEASES, lease('annotations', {}, { annotations: { 'forewarn.io/big': 'x'.repeat(256 * 1024) } }));
    assert.deepEqual(status(big), [
      422,
      'Invalid',
      'Lease.coordination.k8s.io "annotations" is invalid: metadata.annotations: Too long: must have at most 262144 bytes',
    ]);
    const fits = await send('POST', LEASES, lease('annotations', {}, { annotations: { 'Forewarn.IO/Cordoned-For': 'e1,e2' } }));
    assert.equal(fits.status, 201);
  });

  it('a Lease’s spec: a positive duration, transitions not negative', async () => {
    const zero = await send('POST', LEASES, lease('spec', { leaseDurationSeconds: 0, leaseTransitions: -1 }));
    assert.deepEqual(status(zero), [
      422,
      'Invalid',
      'Lease.coordination.k8s.io "spec" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, ' +
        'spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]',
    ]);
  });

  it('a Node’s taints (named metadata.taints, as the server names them) and its providerID once set', async () => {
    const rv = kube.node('n1').metadata.resourceVersion;
    const taints = await send(
      'PATCH',
      '/api/v1/nodes/n1',
      [
        { op: 'test', path: '/metadata/resourceVersion', value: rv },
        {
          op: 'add',
          path: '/spec/taints',
          value: [
            { key: 'forewarn.io/maintenance', value: 'Reboot', effect: 'NoSchedule' },
            { key: 'forewarn.io/maintenance', value: 'Again', effect: 'NoSchedule' },
            { key: 'bad key', effect: 'Sometimes' },
          ],
        },
      ],
      'application/json-patch+json',
    );
    assert.equal(taints.status, 422);
    const causes = (taints.json.details as { causes: { field: string; reason: string }[] }).causes;
    assert.deepEqual(
      causes.map((c) => [c.field, c.reason]),
      [
        ['metadata.taints[1]', 'FieldValueDuplicate'],
        ['metadata.taints[2].key', 'FieldValueInvalid'],
        ['metadata.taints[2].effect', 'FieldValueNotSupported'],
      ],
    );
    assert.match(
      String(taints.json.message),
      /metadata\.taints\[2\]\.effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"/,
    );
    const moved = await send('PATCH', '/api/v1/nodes/n1', { spec: { providerID: 'azure:///elsewhere' } }, 'application/merge-patch+json');
    assert.deepEqual(status(moved), [
      422,
      'Invalid',
      'Node "n1" is invalid: spec.providerID: Forbidden: node updates may not change providerID except from "" to valid',
    ]);
    assert.equal(kube.node('n1').metadata.resourceVersion, rv, 'nothing changed');
  });

  it('a Node’s status does not change through the node itself (only through /status)', async () => {
    const patched = await send(
      'PATCH',
      '/api/v1/nodes/n1',
      { status: { conditions: [] }, spec: { unschedulable: true } },
      'application/merge-patch+json',
    );
    assert.equal(patched.status, 200);
    assert.equal(kube.node('n1').spec.unschedulable, true);
    assert.equal(kube.node('n1').status.conditions?.[0]?.type, 'Ready', 'status kept');
    await send('PATCH', '/api/v1/nodes/n1', { spec: { unschedulable: null } }, 'application/merge-patch+json');
  });
});

describe('fake API server: concurrency as the generic registry keeps it (409, 422)', () => {
  it('a Lease update must name the resourceVersion it read: none 422, another 409', async () => {
    const created = await send('POST', LEASES, lease('rv', { renewTime: micro }));
    const meta = created.json.metadata as Json;
    const without = await send('PUT', `${LEASES}/rv`, lease('rv', { holderIdentity: 'n2' }));
    assert.deepEqual(status(without), [
      422,
      'Invalid',
      'leases.coordination.k8s.io "rv" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
    ]);
    assert.deepEqual((without.json.details as Json).kind, 'leases');
    const stale = await send('PUT', `${LEASES}/rv`, lease('rv', { holderIdentity: 'n2' }, { resourceVersion: '1' }));
    assert.deepEqual(status(stale), [
      409,
      'Conflict',
      'Operation cannot be fulfilled on leases.coordination.k8s.io "rv": the object has been modified; please apply your changes to the latest version and try again',
    ]);
    const fresh = await send('PUT', `${LEASES}/rv`, lease('rv', { holderIdentity: 'n2' }, { resourceVersion: meta.resourceVersion }));
    assert.equal(fresh.status, 200);
    const again = await send('POST', LEASES, lease('rv'));
    assert.deepEqual(status(again), [409, 'AlreadyExists', 'leases.coordination.k8s.io "rv" already exists']);
  });

  it('a Node update without a resourceVersion is unconditional; a PUT of a missing Node is 404, of a missing Lease a create', async () => {
    const node = kube.node('n1');
    const { resourceVersion: _rv, ...meta } = node.metadata;
    const unconditional = await send('PUT', '/api/v1/nodes/n1', { ...node, metadata: meta });
    assert.equal(unconditional.status, 200, JSON.stringify(unconditional.json));
    const missingNode = await send('PUT', '/api/v1/nodes/n9', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n9' } });
    assert.deepEqual(status(missingNode), [404, 'NotFound', 'nodes "n9" not found']);
    const createdByPut = await send('PUT', `${LEASES}/by-put`, lease('by-put', { renewTime: micro }, { resourceVersion: '12345' }));
    assert.equal(createdByPut.status, 201);
  });

  it('a create naming a resourceVersion: storage refuses it with 500 and no reason', async () => {
    const answer = await send('POST', LEASES, lease('with-rv', {}, { resourceVersion: '5' }));
    assert.deepEqual(answer.json, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'resourceVersion should not be set on objects to be created',
      code: 500,
    });
  });
});

describe('fake API server: patches as the patch handler applies them', () => {
  it('a JSON patch that does not apply, a failed test included: 422 with the generic message and no reason given', async () => {
    const rv = kube.node('n1').metadata.resourceVersion;
    for (const ops of [
      [{ op: 'test', path: '/metadata/resourceVersion', value: '1' }],
      [{ op: 'replace', path: '/spec/podCIDR', value: '10.0.0.0/24' }],
      [{ op: 'remove', path: '/metadata/annotations/nope' }],
    ]) {
      const answer = await send('PATCH', '/api/v1/nodes/n1', ops, 'application/json-patch+json');
      assert.deepEqual(answer.json, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'the server rejected our request due to an error in our request',
        reason: 'Invalid',
        details: {},
        code: 422,
      });
    }
    // evanphx/json-patch: a missing member tests equal to null.
    const nothing = await send(
      'PATCH',
      '/api/v1/nodes/n1',
      [{ op: 'test', path: '/spec/podCIDR', value: null }],
      'application/json-patch+json',
    );
    assert.equal(nothing.status, 200);
    assert.equal(kube.node('n1').metadata.resourceVersion, rv, 'nothing changed: no write, the same resourceVersion');
  });

  it('a patch content type the server does not serve: 415, naming those it does', async () => {
    const answer = await send('PATCH', '/api/v1/nodes/n1', { spec: {} }, 'application/json');
    assert.deepEqual(status(answer), [
      415,
      'UnsupportedMediaType',
      'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, ' +
        'application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml',
    ]);
  });

  it('a patch body of the wrong shape 400; too many operations 413', async () => {
    const object = await send('PATCH', '/api/v1/nodes/n1', { op: 'add' }, 'application/json-patch+json');
    assert.deepEqual(status(object), [
      400,
      'BadRequest',
      'error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp',
    ]);
    const many = Array.from({ length: 10_001 }, () => ({ op: 'test', path: '/kind', value: 'Node' }));
    const tooMany = await send('PATCH', '/api/v1/nodes/n1', many, 'application/json-patch+json');
    assert.deepEqual(status(tooMany), [
      413,
      'RequestEntityTooLarge',
      'Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001',
    ]);
  });

  it('the patched object is decoded again: a bad time 422 on the field "patch"; an unknown field a Warning, or 422 when Strict', async () => {
    const created = await send('POST', LEASES, lease('patched', { renewTime: micro }));
    assert.equal(created.status, 201);
    const badTime = await send(
      'PATCH',
      `${LEASES}/patched`,
      { spec: { renewTime: '2026-11-27T03:25:12.5Z' } },
      'application/merge-patch+json',
    );
    assert.equal(badTime.status, 422);
    assert.equal(badTime.json.reason, 'Invalid');
    assert.match(
      String(badTime.json.message),
      /^ "" is invalid: patch: Invalid value: ".*": parsing time "2026-11-27T03:25:12\.5Z" as "2006-01-02T15:04:05\.000000Z07:00": cannot parse "\.5Z" as "\.000000"$/,
    );
    const warned = await send(
      'PATCH',
      `${LEASES}/patched`,
      [{ op: 'add', path: '/spec/holder', value: 'x' }],
      'application/json-patch+json',
    );
    assert.deepEqual([warned.status, warned.warnings], [200, ['299 - "unknown field \\"spec.holder\\""']]);
    const strict = await send(
      'PATCH',
      `${LEASES}/patched?fieldValidation=Strict`,
      [{ op: 'add', path: '/spec/holder', value: 'x' }],
      'application/json-patch+json',
    );
    assert.equal(strict.status, 422);
    assert.match(String(strict.json.message), /: strict decoding error: unknown field "spec\.holder"$/);
  });

  it('a patch that renames the object 400, changes its uid 422, names a stale resourceVersion 409', async () => {
    const renamed = await send('PATCH', '/api/v1/nodes/n1', { metadata: { name: 'n2' } }, 'application/merge-patch+json');
    assert.deepEqual(status(renamed), [400, 'BadRequest', 'the name of the object (n2) does not match the name on the URL (n1)']);
    const uid = await send('PATCH', '/api/v1/nodes/n1', { metadata: { uid: 'other' } }, 'application/merge-patch+json');
    assert.deepEqual(status(uid), [422, 'Invalid', 'Node "n1" is invalid: metadata.uid: Invalid value: "other": field is immutable']);
    const stale = await send('PATCH', '/api/v1/nodes/n1', { metadata: { resourceVersion: '1' } }, 'application/merge-patch+json');
    assert.equal(stale.status, 409);
  });
});

describe('fake API server: what the agent sends is taken', () => {
  it('its cordon patch, its Event, its Eviction and its Leases, through its own client, without a warning', async () => {
    const api = agentApi(kube);
    const since = kube.requests.length;
    const node = await api.getNode('n1');
    await api.patchNode('n1', [
      { op: 'test', path: '/metadata/resourceVersion', value: node.resourceVersion },
      { op: 'add', path: '/metadata/annotations', value: { ...node.annotations, 'forewarn.io/cordoned-for': 'e1' } },
      { op: 'add', path: '/spec/unschedulable', value: true },
      { op: 'add', path: '/spec/taints', value: [{ key: 'forewarn.io/maintenance', value: 'Reboot', effect: 'NoSchedule' }] },
    ]);
    await api.createEvent({ node: { name: 'n1', uid: node.uid }, type: 'Normal', reason: 'Cordoned', message: 'cordoned', at: Date.now() });
    kube.addPod({ name: 'web-0', namespace: 'shop', nodeName: 'n1', graceSeconds: 0 });
    const [pod] = (await api.listPodsOnNode('n1')).filter((p) => p.name === 'web-0');
    assert.deepEqual(await api.evict(pod!, 0), { kind: 'evicted' });
    const created = await api.createLease({
      namespace: 'forewarn',
      name: 'agent-0',
      holder: 'n1',
      renewedAt: Date.now(),
      acquiredAt: Date.now(),
      durationSeconds: 60,
      transitions: 0,
    });
    assert.ok(created);
    assert.ok(
      await api.replaceLease({
        namespace: 'forewarn',
        name: 'agent-0',
        holder: null,
        renewedAt: Date.now(),
        durationSeconds: 60,
        resourceVersion: created.resourceVersion,
        transitions: 0,
      }),
    );
    const sent = kube.requests.slice(since);
    assert.deepEqual(
      sent.filter((r) => r.status >= 300 || r.warnings.length > 0).map((r) => `${r.method} ${r.path} ${r.status} ${r.warnings.join('; ')}`),
      [],
    );
    assert.match(String(kube.lease('forewarn', 'agent-0')?.spec?.renewTime), MICRO_TIME);
    assert.equal(kube.events({ node: 'n1', reason: 'Cordoned' }).length, 1);
  });
});
