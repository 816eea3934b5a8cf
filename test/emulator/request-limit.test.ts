// A small request must not make the emulator build a huge fleet and stall every answer meanwhile.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { parseEmulatorOptions } from '../../src/cli/emulator.js';
import { UsageError } from '../../src/cli/errors.js';
import { Emulator } from '../../src/emulator/emulator.js';
import { MAX_FLEET_VMS, countFleetVms } from '../../src/emulator/fleet/file.js';
import { caller } from '../support/control.js';

async function start(maxRequestVms?: number) {
  const emulator = await Emulator.create({
    fleet: [{ name: 'vm0' }],
    clock: 'manual',
    ...(maxRequestVms !== undefined ? { maxRequestVms } : {}),
  });
  after(() => emulator.close());
  const urls = await emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
  return { emulator, control: caller(urls.controlUrl), imdsUrl: urls.imdsUrl };
}

const scenario = (fleet: unknown) => ({
  scenario: { name: 'big', fleet, steps: [{ at: 0, expect: { vm: 'as0-vm0', events: [] } }] },
});

/** The longest an IMDS answer takes while `work` is in flight, polling back to back. */
async function imdsStallDuring(imdsUrl: string, work: Promise<unknown>): Promise<number> {
  let done = false;
  void work.finally(() => (done = true));
  let worst = 0;
  const url = `${imdsUrl}/metadata/scheduledevents?api-version=2020-07-01`;
  // The first answer warms the connection; from then on each round trip is timed.
  await fetch(url, { headers: { metadata: 'true' } }).then((r) => r.arrayBuffer());
  while (!done) {
    const t = performance.now();
    const res = await fetch(url, { headers: { metadata: 'true' } });
    await res.arrayBuffer();
    worst = Math.max(worst, performance.now() - t);
  }
  return worst;
}

describe('the fleet size one request may build', () => {
  it('refuses a 250-byte scenario that generates a million VMs, at once and without stalling IMDS', async () => {
    const { control, imdsUrl } = await start();
    const body = JSON.stringify(scenario({ generate: [{ availabilitySets: 1, vmsPerSet: 1_000_000, hosts: 2 }] }));
    assert.ok(body.length < 250, `${body.length} bytes`);
    const t = performance.now();
    const request = control('POST', '/v1/scenarios', body);
    const stall = await imdsStallDuring(imdsUrl, request);
    const res = await request;
    const took = performance.now() - t;
    assert.equal(res.status, 413, res.text);
    assert.deepEqual(Object.keys(res.json), ['error']);
    assert.match(res.json.error, /1000000 VMs/);
    assert.match(res.json.error, new RegExp(`at most ${MAX_FLEET_VMS}`));
    assert.match(res.json.error, /--max-request-vms/);
    assert.ok(took < 500, `refused in ${took.toFixed(0)} ms`);
    assert.ok(stall < 100, `IMDS stalled for ${stall.toFixed(0)} ms`);
  });

  it('counts every section: listed VMs, scale-set instances, generated sets, host counts and placement groups', async () => {
    const { control } = await start(10);
    const tooMany = [
      { vms: Array.from({ length: 11 }, (_, i) => ({ name: `v${i}` })) },
      { scaleSets: [{ name: 's', instances: 6 }], vms: Array.from({ length: 5 }, (_, i) => ({ name: `v${i}` })) },
      {
        generate: [
          { availabilitySets: 3, vmsPerSet: 2, hosts: 2 },
          { availabilitySets: 1, vmsPerSet: 5, hosts: 2, prefix: 'b' },
        ],
      },
      { generate: [{ availabilitySets: 1, vmsPerSet: 2, hosts: 1_000_000 }] },
      { scaleSets: Array.from({ length: 3 }, (_, i) => ({ name: `s${i}`, placementGroups: 4 })), vms: [{ name: 'a' }] },
    ];
    for (const fleet of tooMany) {
      const res = await control('POST', '/v1/scenarios', scenario(fleet));
      assert.equal(res.status, 413, `${JSON.stringify(fleet)}: ${res.text}`);
      assert.match(res.json.error, /at most 10\b/);
    }
    // The limit itself is allowed.
    const ok = await control('POST', '/v1/scenarios', scenario({ generate: [{ availabilitySets: 2, vmsPerSet: 5, hosts: 2 }] }));
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await control('GET', '/v1/fleet')).json.vms.length, 10);
  });

  it('counts without trusting the shapes, so the schema still names a bad field', () => {
    assert.equal(
      countFleetVms({ vms: 'no', scaleSets: [{ instances: 'x' }], generate: [null, { availabilitySets: 2, vmsPerSet: 1e9 }] }).vms,
      2e9,
    );
    assert.deepEqual(countFleetVms(null), { vms: 0, hostNames: 0, tenants: 0 });
    assert.equal(countFleetVms({ vms: [{}, {}], scaleSets: [{ name: 's' }] }).vms, 2);
  });

  it('builds the largest allowed fleet without stalling IMDS for long', async () => {
    const { control, imdsUrl } = await start();
    const sets = MAX_FLEET_VMS / 100;
    const request = control('POST', '/v1/scenarios', scenario({ generate: [{ availabilitySets: sets, vmsPerSet: 100, hosts: 100 }] }));
    const stall = await imdsStallDuring(imdsUrl, request);
    const res = await request;
    assert.equal(res.status, 200, res.text);
    // Generous for a loaded CI machine; the cost on an idle one is in docs/fleet-files.md.
    assert.ok(stall < 400, `IMDS stalled for ${stall.toFixed(0)} ms`);
  });

  it('takes --max-request-vms N from 1 to 1000000, defaulting to MAX_FLEET_VMS', () => {
    assert.equal(parseEmulatorOptions({}).maxRequestVms, MAX_FLEET_VMS);
    assert.equal(parseEmulatorOptions({ maxRequestVms: '50000' }).maxRequestVms, 50_000);
    for (const bad of ['0', '-1', '1.5', 'many', '1000001']) {
      assert.throws(
        () => parseEmulatorOptions({ maxRequestVms: bad }),
        (err: Error) => err instanceof UsageError && /--max-request-vms must be a whole number from 1 to 1000000/.test(err.message),
      );
    }
  });
});
