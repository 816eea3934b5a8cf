// The budget's Leases through the agent's real client (@kubernetes/client-node) against the fake API
// server, which decodes a Lease as kube-apiserver does: renewTime and acquireTime are MicroTimes,
// parsed with RFC3339Micro ("2006-01-02T15:04:05.000000Z07:00"), so exactly six fractional digits.
// A JavaScript Date serialises with three, which a real server refuses with 400 (SPEC §4).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeError } from '../../../src/agent/kubernetes/api.js';
import { Budget } from '../../../src/agent/kubernetes/budget.js';
import { agentApi } from '../../support/fake-kube/client.js';
import { MICRO_TIME } from '../../support/fake-kube/gotime.js';
import { startFakeKube, type FakeKube } from '../../support/fake-kube/server.js';

const NS = 'forewarn';
/** The agent's clock in these tests: a time with milliseconds, as Date.now() has. */
const T0 = Date.parse('2026-11-27T03:25:11.084Z');

let kube: FakeKube;
before(async () => {
  kube = await startFakeKube();
  kube.addNamespace(NS);
});
after(() => kube.close());

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${kube.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

function budget(name: string, now: () => number, leaseDurationSeconds = 60, holder = 'node-a'): Budget {
  return new Budget(agentApi(kube), { namespace: NS, name, slots: 1, leaseDurationSeconds, holder, now });
}

/** Every Lease body the client wrote (POST or PUT) for leases named `prefix…`. */
function leaseWrites(prefix: string): Record<string, unknown>[] {
  return kube.requests
    .filter((r) => (r.method === 'POST' || r.method === 'PUT') && r.path.startsWith(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`))
    .map((r) => JSON.parse(r.body) as { metadata?: { name?: string } })
    .filter((b) => b.metadata?.name?.startsWith(prefix) === true) as Record<string, unknown>[];
}

describe('budget Leases against a server that decodes MicroTime as kube-apiserver does', () => {
  it('the fake refuses a Lease whose renewTime has three fractional digits, with the real server’s 400', async () => {
    const { status, json } = await post(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'fw-maint-0', namespace: NS },
      spec: { holderIdentity: 'node-a', leaseDurationSeconds: 60, renewTime: '2026-11-27T03:25:11.084Z' },
    });
    assert.equal(status, 400);
    assert.deepEqual(json, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-11-27T03:25:11.084Z" as ' +
        '"2006-01-02T15:04:05.000000Z07:00": cannot parse ".084Z" as ".000000"',
      reason: 'BadRequest',
      code: 400,
    });
    assert.equal(kube.lease(NS, 'fw-maint-0'), undefined, 'nothing stored');
  });

  it('takes, renews and gives back a slot through the agent’s client, every time written with six digits', async () => {
    let now = T0;
    const b = budget('fw-slot', () => now);
    const slot = await b.tryAcquire();
    assert.deepEqual(slot, { namespace: NS, name: 'fw-slot-0' });
    const taken = kube.lease(NS, 'fw-slot-0')!;
    assert.equal(taken.spec?.holderIdentity, 'node-a');
    assert.equal(taken.spec?.renewTime, '2026-11-27T03:25:11.084000Z');
    assert.equal(taken.spec?.acquireTime, '2026-11-27T03:25:11.084000Z');

    now = T0 + 20_017;
    assert.equal(await b.renew(slot!), true);
    assert.equal(kube.lease(NS, 'fw-slot-0')?.spec?.renewTime, '2026-11-27T03:25:31.101000Z', 'renewed');
    // A PUT replaces the whole spec: the renewal keeps when the slot was taken, as client-go's leader election does.
    assert.equal(kube.lease(NS, 'fw-slot-0')?.spec?.acquireTime, '2026-11-27T03:25:11.084000Z', 'acquireTime kept');
    // Read back at any precision: the renewal is seen as the time it was written.
    const read = await agentApi(kube).getLease(NS, 'fw-slot-0');
    assert.equal(read?.renewedAt, now);
    assert.equal(b.isFree(read!, now + 59_000), false);

    await b.release(slot!);
    assert.equal(kube.lease(NS, 'fw-slot-0')?.spec?.holderIdentity, '', 'given back');

    const writes = leaseWrites('fw-slot');
    assert.equal(writes.length, 3, 'create, renew, release');
    for (const body of writes) {
      const spec = body.spec as Record<string, unknown>;
      for (const field of ['renewTime', 'acquireTime'] as const) {
        if (spec[field] !== undefined) assert.match(String(spec[field]), MICRO_TIME, `${field} as written: ${String(spec[field])}`);
      }
    }
  });

  it('a second node finds the slot held, and takes it once the holder stops renewing', async () => {
    let now = T0;
    const a = budget('fw-take', () => now, 30, 'node-a');
    const b = budget('fw-take', () => now, 30, 'node-b');
    assert.ok(await a.tryAcquire());
    now += 10_000;
    assert.equal(await b.tryAcquire(), null, 'held and fresh');
    now += 31_000;
    assert.deepEqual(await b.tryAcquire(), { namespace: NS, name: 'fw-take-0' }, 'expired: taken over');
    const lease = kube.lease(NS, 'fw-take-0')!;
    assert.deepEqual([lease.spec?.holderIdentity, lease.spec?.leaseTransitions], ['node-b', 1]);
    assert.equal(await a.renew({ namespace: NS, name: 'fw-take-0' }), false, 'the old holder sees it lost');
  });

  it('reads a Lease another client wrote, in another zone or without times', async () => {
    const created = await post(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, {
      metadata: { name: 'fw-other-0' },
      spec: { holderIdentity: 'kubectl', renewTime: '2026-11-27T04:25:11.123456+01:00', leaseDurationSeconds: 15 },
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    assert.equal((created.json.spec as Record<string, unknown>).renewTime, '2026-11-27T03:25:11.123456Z', 'the server writes UTC');
    const read = await agentApi(kube).getLease(NS, 'fw-other-0');
    assert.equal(read?.renewedAt, Date.parse('2026-11-27T03:25:11.123Z'));
    assert.equal(read?.holder, 'kubectl');
    assert.equal(read?.durationSeconds, 15);

    assert.equal(
      (await post(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, { metadata: { name: 'fw-bare-0' }, spec: {} })).status,
      201,
    );
    const bare = await agentApi(kube).getLease(NS, 'fw-bare-0');
    assert.deepEqual([bare?.holder, bare?.renewedAt, bare?.durationSeconds], [null, null, null]);
  });

  it('a lease duration that is no whole number of seconds still makes a Lease the server takes (int32)', async () => {
    const refused = await post(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, {
      metadata: { name: 'fw-frac-raw' },
      spec: { leaseDurationSeconds: 30.5 },
    });
    assert.equal(refused.status, 400);
    assert.equal(
      refused.json.message,
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number 30.5 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32',
    );
    const b = budget('fw-frac', () => T0, 30.5);
    try {
      assert.ok(await b.tryAcquire());
    } catch (err) {
      assert.fail(`the agent's Lease was refused: ${(err as Error).message}`);
    }
    assert.equal(kube.lease(NS, 'fw-frac-0')?.spec?.leaseDurationSeconds, 31, 'rounded up: the slot lasts at least as long');
  });

  it('an answer the budget cannot use is a KubeError naming the Lease and the server’s message', async () => {
    const remove = kube.onRequest((r) =>
      r.method === 'POST' && r.name === null ? { status: 500, message: 'etcdserver: request timed out' } : undefined,
    );
    try {
      await assert.rejects(budget('fw-err', () => T0).tryAcquire(), (err: unknown) => {
        assert.ok(err instanceof KubeError);
        assert.equal(err.status, 500);
        assert.equal(err.message, `cannot create lease ${NS}/fw-err-0: HTTP 500: etcdserver: request timed out`);
        return true;
      });
    } finally {
      remove();
    }
  });
});
