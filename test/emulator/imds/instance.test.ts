// /metadata/instance and /metadata/versions: the whole instance metadata, as Azure's IMDS answers it.
//
// What this relies on, from Azure's IMDS documentation (learn.microsoft.com/azure/virtual-machines/instance-metadata-service)
// as summarised, not quoted: the page itself could not be checked from here, only public samples that use it
// (e.g. `.../metadata/instance/network/interface/0/ipv4/ipAddress/0/publicIpAddress?api-version=2017-04-02&format=text`
// and `.../metadata/instance/compute/vmId?api-version=2017-04-02&format=text`) and Azure's REST API spec (imds.json,
// 2021-02-01) for the compute and network fields. So:
// - Responses are JSON by default; path segments after /metadata/instance walk the JSON (array items by index).
// - A leaf is read with format=text (every sample does so); without it, 400. An unknown element, 404.
// - GET /metadata/versions lists the api-versions; a field appears from the api-version that introduced it.
// Where a rule above is not in the spec or a sample, docs/behaviour.md marks it [choice].
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScheduledEventsClient } from '../../../src/client/client.js';
import { METADATA_HEADER_MISSING, NOT_FOUND, PROXY_REJECTED, TOO_MANY_REQUESTS } from '../../../src/protocol/errors.js';
import { FORMAT_INVALID, LEAF_NEEDS_TEXT, TEXT_NEEDS_LEAF } from '../../../src/protocol/instance-metadata.js';
import { API_VERSION_INVALID, API_VERSION_MISSING, INSTANCE_API_VERSIONS } from '../../../src/protocol/versions.js';
import { Fleet, vmToSpec } from '../../../src/emulator/engine/fleet.js';
import { loadFleetFile, parseFleet } from '../../../src/emulator/fleet/file.js';
import { VmSpecSchema } from '../../../src/emulator/fleet/vm-spec.js';
import { startImds, type ImdsHarness } from '../../support/imds-server.js';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { caller } from '../../support/control.js';

const SUB = '11111111-2222-3333-4444-555555555555';
type Json = Record<string, unknown>;

describe('IMDS /metadata/instance', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({
      fleet: [
        {
          name: 'pool_3',
          tenant: 'pool',
          tenantKind: 'scaleSet',
          faultDomain: 1,
          updateDomain: 2,
          priority: 'Spot',
          vmId: '0b1c2d3e-0000-4000-8000-00000000abcd',
          location: 'westeurope',
          zone: '2',
          vmSize: 'Standard_D4s_v5',
          resourceGroup: 'rg-app',
          subscriptionId: SUB,
          tags: { team: 'sre', env: 'test' },
          privateIp: '10.1.2.3',
          publicIp: '20.30.40.50',
          macAddress: '00-0d-3a-12-34-56',
        },
        { name: 'web', tenant: 'web-as', tenantKind: 'availabilitySet', osType: 'Windows' },
        { name: 'db' },
      ],
    });
  });
  after(() => h.close());
  afterEach(() => h.faults.clear());

  const path = (rest: string, query = 'api-version=2021-02-01', vm = 'pool_3') => `/vms/${vm}/metadata/instance${rest}?${query}`;

  it('a consumer reading /metadata/instance at start (as scheduled-events operators do) gets compute and network', async () => {
    const res = await h.client.get(path(''));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    const { compute, network } = res.body as { compute: Json; network: { interface: Json[] } };
    // What such a consumer reads to learn who it is and where.
    assert.equal(compute.name, 'pool_3');
    assert.equal(compute.vmId, '0b1c2d3e-0000-4000-8000-00000000abcd');
    assert.equal(compute.vmScaleSetName, 'pool');
    assert.equal(
      compute.resourceId,
      `/subscriptions/${SUB}/resourceGroups/rg-app/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/3`,
    );
    assert.equal(compute.location, 'westeurope');
    assert.equal(compute.zone, '2');
    assert.equal(compute.vmSize, 'Standard_D4s_v5');
    assert.equal(compute.resourceGroupName, 'rg-app');
    assert.equal(compute.subscriptionId, SUB);
    assert.equal(compute.platformFaultDomain, '1');
    assert.equal(compute.platformUpdateDomain, '2');
    assert.equal(compute.priority, 'Spot');
    assert.equal(compute.evictionPolicy, 'Deallocate');
    assert.equal(compute.osType, 'Linux');
    assert.equal(compute.azEnvironment, 'AzurePublicCloud');
    assert.equal(compute.tags, 'team:sre;env:test');
    assert.deepEqual(compute.tagsList, [
      { name: 'team', value: 'sre' },
      { name: 'env', value: 'test' },
    ]);
    // virtualMachineScaleSet came in 2021-03-01.
    assert.ok(!('virtualMachineScaleSet' in compute));
    assert.match(compute.placementGroupId as string, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.deepEqual(network, {
      interface: [
        {
          ipv4: {
            ipAddress: [{ privateIpAddress: '10.1.2.3', publicIpAddress: '20.30.40.50' }],
            subnet: [{ address: '10.1.2.0', prefix: '24' }],
          },
          ipv6: { ipAddress: [] },
          macAddress: '000D3A123456',
        },
      ],
    });
    // IMDS sends every leaf as a string.
    const leaves: unknown[] = [];
    const walk = (n: unknown): void => {
      if (n !== null && typeof n === 'object') Object.values(n).forEach(walk);
      else leaves.push(n);
    };
    walk(res.body);
    assert.ok(leaves.every((v) => typeof v === 'string'));
  });

  it('/compute and /network answer their subtree; the client SDK still reads compute', async () => {
    const whole = (await h.client.get(path(''))).body as Json;
    assert.deepEqual((await h.client.get(path('/compute'))).body, whole.compute);
    assert.deepEqual((await h.client.get(path('/network'))).body, whole.network);
    const client = new ScheduledEventsClient({ endpoint: `${h.client.baseUrl}/vms/pool_3` });
    const info = await client.getCompute();
    assert.equal(info.name, 'pool_3');
    assert.equal(info.vmScaleSetName, 'pool');
    assert.equal(info.platformFaultDomain, 1);
    assert.equal(info.priority, 'Spot');
  });

  it('leaf paths answer plain text with format=text, through arrays by index', async () => {
    const leaf = async (rest: string) => {
      const res = await h.client.get(path(rest, 'api-version=2021-02-01&format=text'));
      assert.equal(res.status, 200, rest);
      assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
      return res.text;
    };
    assert.equal(await leaf('/compute/name'), 'pool_3');
    assert.equal(await leaf('/compute/vmScaleSetName'), 'pool');
    assert.equal(await leaf('/network/interface/0/ipv4/ipAddress/0/privateIpAddress'), '10.1.2.3');
    assert.equal(await leaf('/network/interface/0/macAddress'), '000D3A123456');
    assert.equal(await leaf('/compute/tagsList/1/value'), 'test');
    assert.equal(await leaf('/compute/storageProfile/osDisk/osType'), 'Linux');
    // An empty leaf is still a leaf.
    assert.equal(await leaf('/compute/customData'), '');
  });

  it('a leaf without format=text, or with format=json, gets 400', async () => {
    for (const query of ['api-version=2021-02-01', 'api-version=2021-02-01&format=json']) {
      const res = await h.client.get(path('/compute/name', query));
      assert.equal(res.status, 400, query);
      assert.deepEqual(res.body, { error: LEAF_NEEDS_TEXT });
    }
  });

  it('format=text on a node with children, or an unknown format, gets 400', async () => {
    const text = await h.client.get(path('/compute', 'api-version=2021-02-01&format=text'));
    assert.equal(text.status, 400);
    assert.deepEqual(text.body, { error: TEXT_NEEDS_LEAF });
    const xml = await h.client.get(path('/compute', 'api-version=2021-02-01&format=xml'));
    assert.equal(xml.status, 400);
    assert.deepEqual(xml.body, { error: FORMAT_INVALID });
  });

  it('an element that does not exist gets 404', async () => {
    for (const rest of [
      '/compute/nope',
      '/network/interface/1',
      '/network/interface/00',
      '/compute/name/more',
      '/nope',
      '/compute/toString',
    ]) {
      const res = await h.client.get(path(rest, 'api-version=2021-02-01&format=text'));
      assert.equal(res.status, 404, rest);
      assert.deepEqual(res.body, { error: NOT_FOUND });
    }
  });

  it('fields appear from the api-version that introduced them', async () => {
    const at = async (version: string) => (await h.client.get(path('/compute', `api-version=${version}`))).body as Json;
    const old = await at('2017-08-01');
    assert.equal(old.name, 'pool_3');
    assert.equal(old.resourceGroupName, 'rg-app');
    for (const later of ['vmScaleSetName', 'vmSize', 'zone', 'resourceId', 'tagsList', 'priority', 'evictionPolicy']) {
      assert.ok(!(later in old), later);
    }
    const v2019 = await at('2019-06-04');
    assert.equal(v2019.resourceId, (await at('2021-02-01')).resourceId);
    assert.ok('tagsList' in v2019 && !('priority' in v2019));
    assert.ok(!('resourceDisk' in ((await at('2021-01-01')).storageProfile as Json)));
    assert.ok('resourceDisk' in ((await at('2021-02-01')).storageProfile as Json));
    assert.deepEqual((await at('2021-03-01')).virtualMachineScaleSet, {
      id: `/subscriptions/${SUB}/resourceGroups/rg-app/providers/Microsoft.Compute/virtualMachineScaleSets/pool`,
    });
    const newest = await at('2023-07-01');
    assert.equal((newest.securityProfile as Json).securityType, '');
    assert.deepEqual(newest.host, { id: '' });
    // The preview version shows the network only.
    assert.deepEqual(await at('2017-03-01'), {});
    // A leaf that this version does not have is not found.
    const res = await h.client.get(path('/compute/priority', 'api-version=2020-09-01&format=text'));
    assert.equal(res.status, 404);
  });

  it('VMs that declare nothing get the documented defaults', async () => {
    const web = (await h.client.get(path('', 'api-version=2021-02-01', 'web'))).body as { compute: Json; network: { interface: Json[] } };
    const c = web.compute;
    assert.equal(c.location, 'eastus');
    assert.equal(c.vmSize, 'Standard_D2s_v3');
    assert.equal(c.osType, 'Windows');
    assert.equal(c.publisher, 'MicrosoftWindowsServer');
    assert.equal(c.resourceGroupName, 'forewarn');
    assert.equal(c.subscriptionId, '00000000-0000-0000-0000-000000000000');
    assert.equal(
      c.resourceId,
      '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/forewarn/providers/Microsoft.Compute/virtualMachines/web',
    );
    assert.equal(c.vmScaleSetName, '');
    assert.equal(c.placementGroupId, '');
    assert.equal(c.priority, 'Regular');
    assert.equal(c.evictionPolicy, '');
    assert.equal(c.zone, '');
    assert.equal(c.tags, '');
    assert.deepEqual(c.tagsList, []);
    const nic = web.network.interface[0]!;
    const vmId = h.engine.fleet.get('web').vmId;
    assert.equal(c.vmId, vmId);
    // The first VM without a declared address gets 10.0.0.4, the next 10.0.0.5.
    assert.deepEqual((nic.ipv4 as Json).ipAddress, [{ privateIpAddress: '10.0.0.4', publicIpAddress: '' }]);
    assert.match(nic.macAddress as string, /^000D3A[0-9A-F]{6}$/);
    const db = (
      await h.client.get(path('/network/interface/0/ipv4/ipAddress/0/privateIpAddress', 'api-version=2021-02-01&format=text', 'db'))
    ).text;
    assert.equal(db, '10.0.0.5');
    // The MAC is derived from the vmId, so it survives a restart: same vmId, same MAC.
    const dbMac = (await h.client.get(path('/network/interface/0/macAddress', 'api-version=2021-02-01&format=text', 'db'))).text;
    assert.notEqual(dbMac, nic.macAddress);
  });

  it('a removed VM frees its default address for the next one', async () => {
    h.engine.addVm({ name: 'tmp' });
    assert.equal(h.engine.fleet.get('tmp').privateIp, '10.0.0.6');
    h.engine.removeVm('tmp');
    h.engine.addVm({ name: 'tmp2' });
    assert.equal(h.engine.fleet.get('tmp2').privateIp, '10.0.0.6');
    h.engine.removeVm('tmp2');
  });

  it('a declared private IP that is taken is refused, naming the owner', () => {
    assert.throws(
      () => h.engine.addVm({ name: 'dup', privateIp: '10.0.0.4' }),
      /privateIp 10\.0\.0\.4 already belongs to VM 'web' \(a default address\)/,
    );
    assert.throws(() => h.engine.addVm({ name: 'bad', macAddress: 'zz' }), /macAddress "zz" is not a MAC address/);
  });

  it('/metadata/versions lists the instance api-versions and needs no api-version', async () => {
    const res = await h.client.get('/vms/web/metadata/versions');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { apiVersions: [...INSTANCE_API_VERSIONS] });
    assert.ok(INSTANCE_API_VERSIONS.includes('2021-02-01') && INSTANCE_API_VERSIONS.length > 7);
    const noHeader = await h.client.get('/vms/web/metadata/versions', { metadata: false });
    assert.equal(noHeader.status, 400);
    assert.deepEqual(noHeader.body, { error: METADATA_HEADER_MISSING });
  });

  describe('request rules shared with Scheduled Events', () => {
    it('api-version: missing, unknown or a Scheduled-Events-only one gets 400 with the newest instance versions', async () => {
      const newest = [...INSTANCE_API_VERSIONS].reverse().slice(0, 3);
      for (const [query, error] of [
        ['', API_VERSION_MISSING],
        ['api-version=2020-07-01', API_VERSION_INVALID],
        ['api-version=latest', API_VERSION_INVALID],
      ] as const) {
        const res = await h.client.get(path('/compute/name', `${query}&format=text`));
        assert.equal(res.status, 400, query);
        assert.deepEqual(res.body, { error, 'newest-versions': newest });
      }
    });

    it('Metadata header and X-Forwarded-For', async () => {
      const noHeader = await h.client.get(path('/network'), { metadata: false });
      assert.equal(noHeader.status, 400);
      assert.deepEqual(noHeader.body, { error: METADATA_HEADER_MISSING });
      const proxied = await h.client.get(path(''), { headers: { 'X-Forwarded-For': '1.2.3.4' } });
      assert.equal(proxied.status, 400);
      assert.deepEqual(proxied.body, { error: PROXY_REJECTED });
    });

    it('identity: several VMs need a prefix or address; an unknown name is 404', async () => {
      const bare = await h.client.get('/metadata/instance?api-version=2021-02-01');
      assert.equal(bare.status, 404);
      assert.match((bare.body as { error: string }).error, /\/vms\/NAME\/metadata\/instance/);
      const unknown = await h.client.get(path('', 'api-version=2021-02-01', 'ghost'));
      assert.equal(unknown.status, 404);
      assert.deepEqual(unknown.body, { error: "No VM named 'ghost' in the fleet" });
      h.engine.addVm({ name: 'local', address: '127.0.0.1' });
      try {
        const byAddress = await h.client.get('/metadata/instance/compute/name?api-version=2021-02-01&format=text');
        assert.equal(byAddress.text, 'local');
      } finally {
        h.engine.removeVm('local');
      }
    });

    it('faults apply to instance metadata and versions', async () => {
      h.faults.add({ vm: 'pool_3', status: 429, count: 1 });
      const res = await h.client.get(path(''));
      assert.equal(res.status, 429);
      assert.deepEqual(res.body, { error: TOO_MANY_REQUESTS });
      assert.equal((await h.client.get(path(''))).status, 200);
      h.faults.add({ vm: 'web', status: 500, count: 1 });
      assert.equal((await h.client.get('/vms/web/metadata/versions')).status, 500);
    });

    it('only GET: other methods get 405 with Allow', async () => {
      for (const p of [path('/compute/name'), '/vms/web/metadata/versions', '/metadata/instance']) {
        const res = await h.client.request('POST', p, { body: '{}' });
        assert.equal(res.status, 405, p);
        assert.equal(res.headers.get('allow'), 'GET');
      }
    });
  });
});

describe('IMDS instance metadata: rate limit', () => {
  it('counts instance requests against the VM like Scheduled Events requests', async () => {
    const h = await startImds({ fleet: [{ name: 'a' }], rateLimit: 2 });
    try {
      const statuses: number[] = [];
      for (const p of [
        '/metadata/instance?api-version=2021-02-01',
        '/metadata/versions',
        '/metadata/scheduledevents?api-version=2020-07-01',
      ]) {
        statuses.push((await h.client.get(p)).status);
      }
      assert.deepEqual(statuses, [200, 200, 429]);
    } finally {
      await h.close();
    }
  });
});

describe('fleet files: instance metadata fields', () => {
  it("tenants and scale sets give their VMs settings; a VM's own win and tags add up", () => {
    const specs = parseFleet(
      [
        'tenants:',
        '  - { name: web-as, kind: availabilitySet, location: westus2, vmSize: Standard_B2s, tags: { team: web, env: prod } }',
        'scaleSets:',
        '  - { name: pool, instances: 2, location: northeurope, zone: "3", resourceGroup: rg-pool }',
        'vms:',
        '  - { name: web-0, tenant: web-as, location: eastus2, tags: { env: test }, privateIp: 10.9.0.4, macAddress: "00:0d:3a:aa:bb:cc" }',
      ].join('\n'),
      'fleet.yaml',
    );
    const byName = new Map(specs.map((s) => [s.name, s]));
    const web = byName.get('web-0')!;
    assert.equal(web.location, 'eastus2');
    assert.equal(web.vmSize, 'Standard_B2s');
    assert.deepEqual(web.tags, { team: 'web', env: 'test' });
    assert.equal(web.privateIp, '10.9.0.4');
    assert.equal(web.macAddress, '00:0d:3a:aa:bb:cc');
    const pool1 = byName.get('pool_1')!;
    assert.equal(pool1.location, 'northeurope');
    assert.equal(pool1.zone, '3');
    assert.equal(pool1.resourceGroup, 'rg-pool');
  });

  it('bad values are reported at file:line:col with the field', () => {
    const cases: [string, RegExp][] = [
      ['vms:\n  - { name: a, location: "East US" }', /^f\.yaml:2:26: vms\[0\]\.location: expected an Azure region name/],
      ['vms:\n  - { name: a, privateIp: "::1" }', /^f\.yaml:2:\d+: vms\[0\]\.privateIp: expected an IPv4 address/],
      ['vms:\n  - { name: a, subscriptionId: nope }', /^f\.yaml:2:\d+: vms\[0\]\.subscriptionId: expected a GUID/],
      ['vms:\n  - { name: a, zone: "4" }', /^f\.yaml:2:\d+: vms\[0\]\.zone: /],
      [
        'vms:\n  - { name: a, privateIp: 10.0.0.9 }\n  - { name: b, privateIp: 10.0.0.9 }',
        /^f\.yaml:3:\d+: vms\[1\]\.privateIp: VM 'b': privateIp 10\.0\.0\.9 already belongs to VM 'a'/,
      ],
      [
        'tenants:\n  - { name: t, kind: availabilitySet, privateIp: 10.0.0.9 }\nvms:\n  - { name: a, tenant: t }',
        /^f\.yaml:2:39: tenants\[0\]\.privateIp: unknown key "privateIp"/,
      ],
    ];
    for (const [text, error] of cases)
      assert.throws(
        () => parseFleet(text, 'f.yaml'),
        (err: Error) => error.test(err.message),
        text,
      );
  });
});

describe('instance settings survive the plain-data view (control API, state file)', () => {
  it('vmToSpec lists what was declared, in a form VmSpecSchema takes back, and no default private IP', () => {
    let n = 0;
    const fleet = new Fleet(() => `00000000-0000-4000-8000-${String(n++).padStart(12, '0')}`);
    const declared = fleet.add({
      name: 'a',
      location: 'uksouth',
      tags: { k: 'v' },
      macAddress: '00:0d:3a:01:02:03',
      privateIp: '192.168.1.10',
    });
    const plain = fleet.add({ name: 'b' });
    const spec = vmToSpec(declared, fleet.tenantOf(declared));
    assert.equal(spec.macAddress, '000D3A010203');
    assert.deepEqual(VmSpecSchema.parse(JSON.parse(JSON.stringify(spec))), spec);
    const again = new Fleet(() => 'unused-id').add(spec);
    assert.deepEqual(again.instance, declared.instance);
    assert.equal(again.privateIp, '192.168.1.10');
    assert.equal(plain.privateIp, '10.0.0.4');
    assert.ok(!('privateIp' in vmToSpec(plain, fleet.tenantOf(plain))));
  });
});

describe('examples/fleet.yaml', () => {
  it('its VMs answer /metadata/instance with the settings the example declares', async () => {
    const h = await startImds({ fleet: loadFleetFile(new URL('../../../examples/fleet.yaml', import.meta.url).pathname) });
    try {
      const web = (await h.client.get('/vms/web-0/metadata/instance?api-version=2021-02-01')).body as { compute: Json; network: Json };
      assert.equal(web.compute.location, 'westeurope');
      assert.equal(web.compute.vmSize, 'Standard_D2s_v5');
      assert.equal(web.compute.tags, 'app:shop;env:test');
      const ip = await h.client.get(
        '/vms/web-0/metadata/instance/network/interface/0/ipv4/ipAddress/0/privateIpAddress?api-version=2021-02-01&format=text',
      );
      assert.equal(ip.text, '10.1.0.4');
      const os = await h.client.get('/vms/jumpbox/metadata/instance/compute/osType?api-version=2021-02-01&format=text');
      assert.equal(os.text, 'Windows');
    } finally {
      await h.close();
    }
  });
});

describe('control API: instance settings', () => {
  it('POST /v1/vms takes them, GET /v1/fleet lists them, and IMDS shows them; bad ones get 400 naming the field', async () => {
    const h = await startImds({ fleet: [{ name: 'a' }] });
    const control = buildControlServer({ engine: h.engine, clock: h.clock, faults: h.faults, rateLimiter: h.rateLimiter });
    await control.listen({ host: '127.0.0.1', port: 0 });
    try {
      const call = caller(`http://127.0.0.1:${(control.server.address() as { port: number }).port}`);
      const added = await call('POST', '/v1/vms', { name: 'b', location: 'japaneast', tags: { tier: 'db' }, privateIp: '172.16.0.9' });
      assert.equal(added.status, 201, added.text);
      const fleet = await call('GET', '/v1/fleet');
      const b = (fleet.json.vms as Json[]).find((vm) => vm.name === 'b')!;
      assert.equal(b.location, 'japaneast');
      assert.deepEqual(b.tags, { tier: 'db' });
      assert.equal(b.privateIp, '172.16.0.9');
      const loc = await h.client.get('/vms/b/metadata/instance/compute/location?api-version=2021-02-01&format=text');
      assert.equal(loc.text, 'japaneast');
      const bad = await call('POST', '/v1/vms', { name: 'c', vmSize: 'not a size' });
      assert.equal(bad.status, 400);
      assert.match(bad.json.error as string, /vmSize/);
      const taken = await call('POST', '/v1/vms', { name: 'd', privateIp: '172.16.0.9' });
      assert.equal(taken.status, 409);
      assert.match(taken.json.error as string, /privateIp 172\.16\.0\.9 already belongs to VM 'b'/);
    } finally {
      await control.close();
      await h.close();
    }
  });
});
