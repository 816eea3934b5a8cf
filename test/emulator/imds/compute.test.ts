// /metadata/instance/compute: who the VM is, and its own api-versions.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { METADATA_HEADER_MISSING, PROXY_REJECTED } from '../../../src/protocol/errors.js';
import { API_VERSION_INVALID, API_VERSION_MISSING, INSTANCE_API_VERSIONS } from '../../../src/protocol/versions.js';
import { computePath, startImds, type ImdsHarness } from '../../support/imds-server.js';

const NEWEST = ['2023-07-01', '2021-12-13', '2021-11-15'];

describe('IMDS compute endpoint', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({
      fleet: [
        {
          name: 'ss_3',
          tenant: 'pool-pg0',
          tenantKind: 'scaleSet',
          scaleSet: 'pool',
          faultDomain: 2,
          updateDomain: 7,
          updateDomainCount: 10,
          priority: 'Spot',
          vmId: 'a-vm-id',
        },
        { name: 'web', tenant: 'web-as', tenantKind: 'availabilitySet', faultDomain: 1 },
      ],
    });
  });
  after(() => h.close());

  it('a scale-set VM shows its scale set (not its placement group), domains as strings and priority', async () => {
    const res = await h.client.get(computePath('2021-02-01', 'ss_3'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    const { name, vmId, vmScaleSetName, platformFaultDomain, platformUpdateDomain, priority } = res.body as Record<string, string>;
    assert.deepEqual(
      { name, vmId, vmScaleSetName, platformFaultDomain, platformUpdateDomain, priority },
      {
        name: 'ss_3',
        vmId: 'a-vm-id',
        vmScaleSetName: 'pool',
        platformFaultDomain: '2',
        platformUpdateDomain: '7',
        priority: 'Spot',
      },
    );
  });

  it('a VM outside a scale set has an empty vmScaleSetName', async () => {
    const res = await h.client.get(computePath('2021-02-01', 'web'));
    const body = res.body as Record<string, string>;
    assert.equal(body.vmScaleSetName, '');
    assert.equal(body.platformFaultDomain, '1');
    assert.equal(body.platformUpdateDomain, '0');
    assert.equal(body.priority, 'Regular');
    assert.match(body.vmId!, /^[0-9a-f-]{36}$/);
    assert.equal(body.vmId, h.engine.fleet.get('web').vmId);
  });

  it('accepts every instance api-version', async () => {
    for (const version of INSTANCE_API_VERSIONS) {
      assert.equal((await h.client.get(computePath(version, 'web'))).status, 200, version);
    }
  });

  const bad: [string, string, string][] = [
    ['missing', '/vms/web/metadata/instance/compute', API_VERSION_MISSING],
    ['a scheduled-events-only version', computePath('2020-07-01', 'web'), API_VERSION_INVALID],
    ['latest', computePath('latest', 'web'), API_VERSION_INVALID],
    ['repeated', `${computePath('2021-02-01', 'web')}&api-version=2021-02-01`, API_VERSION_INVALID],
  ];
  for (const [name, path, error] of bad) {
    it(`${name} api-version gets 400 with the instance newest-versions`, async () => {
      const res = await h.client.get(path);
      assert.equal(res.status, 400);
      assert.deepEqual(res.body, { error, 'newest-versions': NEWEST });
    });
  }

  it('always requires the Metadata header, even at 2017-03-01', async () => {
    const res = await h.client.get(computePath('2017-03-01', 'web'), { metadata: false });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body, { error: METADATA_HEADER_MISSING });
  });

  it('rejects X-Forwarded-For', async () => {
    const res = await h.client.get(computePath('2021-02-01', 'web'), { headers: { 'X-Forwarded-For': '1.2.3.4' } });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body, { error: PROXY_REJECTED });
  });
});
