// osProfile.computerName through IMDS, read with Forewarn's own client: a scale-set VM's computer name
// is its prefix and base-36 instance id (Uniform), not its resource name, and the client's affects()
// finds it in an event's Resources; the names survive the state file, and old state files still load.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ScheduledEventsClient } from '../../../src/client/client.js';
import { affects, isLeader } from '../../../src/client/resources.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { parseFleet } from '../../../src/emulator/fleet/file.js';
import { startImds, T0, type ImdsHarness } from '../../support/imds-server.js';
import { caller } from '../../support/control.js';
import { tempDir } from '../../support/temp.js';

const AKS = 'aks-nodepool1-12345678-vmss';

const FLEET = parseFleet(
  [
    'scaleSets:',
    `  - { name: ${AKS}, instances: 37 }`,
    '  - { name: winpool-scale-set, instances: 2, osType: Windows }',
    '  - { name: flex, instances: 2, orchestrationMode: Flexible, computerNamePrefix: app- }',
    'vms:',
    '  - { name: lone }',
    '  - { name: db-0, computerName: db-primary }',
  ].join('\n'),
  'fleet.yaml',
);

describe('osProfile.computerName through IMDS', () => {
  let h: ImdsHarness;
  before(async () => {
    h = await startImds({ fleet: FLEET });
  });
  after(() => h.close());

  const clientOf = (vm: string) => new ScheduledEventsClient({ endpoint: `${h.client.baseUrl}/vms/${vm}` });
  const computeOf = (vm: string) => clientOf(vm).getCompute();

  it('a Uniform scale-set VM: its prefix and six base-36 digits of its instance id', async () => {
    for (const [id, digits] of [
      [0, '000000'],
      [18, '00000I'],
      [35, '00000Z'],
      [36, '000010'],
    ] as const) {
      const compute = await computeOf(`${AKS}_${id}`);
      assert.equal(compute.name, `${AKS}_${id}`);
      assert.equal(compute.computerName, `${AKS}${digits}`);
      assert.match(String(compute.raw.resourceId), new RegExp(`/virtualMachineScaleSets/${AKS}/virtualMachines/${id}$`));
    }
  });

  it('a Windows scale set cuts its name to 9 characters for the prefix', async () => {
    assert.equal((await computeOf('winpool-scale-set_1')).computerName, 'winpool-s000001');
  });

  it('a VM outside scale sets: its name, or the computerName it declares', async () => {
    assert.equal((await computeOf('lone')).computerName, 'lone');
    const db = await computeOf('db-0');
    assert.equal(db.name, 'db-0');
    assert.equal(db.computerName, 'db-primary');
  });

  it('a Flexible scale-set VM: an ordinary VM named <set>_<8 hex>, its prefix and six hex digits', async () => {
    const name = [...h.engine.fleet.vms.keys()].find((n) => n.startsWith('flex_'))!;
    const compute = await computeOf(name);
    assert.equal(compute.vmScaleSetName, 'flex');
    assert.equal(compute.computerName, `app-${name.slice('flex_'.length, 'flex_'.length + 6)}`);
    assert.match(String(compute.raw.resourceId), new RegExp(`/providers/Microsoft.Compute/virtualMachines/${name}$`));
  });

  it('the computer name, or the Kubernetes node name (lower case), is found in Resources by affects()', async () => {
    const vm = `${AKS}_18`;
    h.engine.createOperation({ type: 'freeze', vms: [vm, `${AKS}_19`] });
    const client = clientOf(vm);
    const { computerName } = await client.getCompute();
    const [event] = (await client.getDocument()).events;
    assert.ok(event !== undefined);
    assert.deepEqual(event.resources, [vm, `${AKS}_19`]);
    assert.equal(affects(event, computerName), true);
    assert.equal(affects(event, computerName.toLowerCase()), true, 'the node name AKS gives it');
    assert.equal(isLeader(event, computerName), true);
    assert.equal(affects(event, `${AKS}00000J`), true, 'instance 19');
    assert.equal(affects(event, `${AKS}00000K`), false, 'instance 20');

    const win = 'winpool-scale-set_1';
    h.engine.createOperation({ type: 'freeze', vms: [win] });
    const winClient = clientOf(win);
    const [winEvent] = (await winClient.getDocument()).events;
    assert.equal(affects(winEvent!, (await winClient.getCompute()).computerName), true);
  });
});

describe('computer names over the control API', () => {
  it('POST /v1/vms takes computerName and computerNamePrefix, and refuses what Azure refuses', async () => {
    const h = await startImds({ fleet: [{ name: 'web_0', tenant: 'web', tenantKind: 'scaleSet' }] });
    const control = buildControlServer({ engine: h.engine, clock: h.clock, faults: h.faults, rateLimiter: h.rateLimiter });
    await control.listen({ host: '127.0.0.1', port: 0 });
    try {
      const call = caller(`http://127.0.0.1:${(control.server.address() as { port: number }).port}`);
      const added = await call('POST', '/v1/vms', { name: 'web_1', tenant: 'web' });
      assert.equal(added.status, 201, added.text);
      assert.equal((await new ScheduledEventsClient({ endpoint: `${h.client.baseUrl}/vms/web_1` }).getCompute()).computerName, 'web000001');
      const own = await call('POST', '/v1/vms', { name: 'w', osType: 'Windows', computerName: 'win-host' });
      assert.equal(own.status, 201, own.text);
      const tooLong = await call('POST', '/v1/vms', { name: 'w2', osType: 'Windows', computerName: 'a-very-long-windows-name' });
      assert.equal(tooLong.status, 400);
      assert.match(
        String(tooLong.json.error),
        /computerName "a-very-long-windows-name" has 24 characters; a Windows computer name is 1-15/,
      );
      const same = await call('POST', '/v1/vms', { name: 'web_01', tenant: 'web' });
      assert.equal(same.status, 409);
      assert.match(String(same.json.error), /computer name 'web000001' already belongs to VM 'web_1'/);
      const prefix = await call('POST', '/v1/vms', { name: 'lone', computerNamePrefix: 'x' });
      assert.equal(prefix.status, 400);
      assert.match(String(prefix.json.error), /computerNamePrefix applies only to scale-set VMs/);
    } finally {
      await control.close();
      await h.close();
    }
  });
});

describe('computer names and the state file', () => {
  const root = tempDir('computer-names');
  const listen = (emulator: Emulator) => emulator.listen({ imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } });
  const computerNames = async (emulator: Emulator) => {
    const { imdsUrl } = await listen(emulator);
    const names: Record<string, string> = {};
    for (const vm of emulator.engine.fleet.vms.keys()) {
      names[vm] = (await new ScheduledEventsClient({ endpoint: `${imdsUrl}/vms/${vm}` }).getCompute()).computerName;
    }
    return names;
  };

  it('declared, derived and inherited names come back after a restart', async () => {
    const statePath = join(mkdtempSync(join(root, 'case-')), 'state.json');
    const clock = new ManualClock(T0);
    const run1 = await Emulator.create({ clock, fleet: FLEET, statePath });
    // A VM added later joins the Flexible set and takes its prefix; then the set's first VM goes.
    const firstFlex = [...run1.engine.fleet.vms.keys()].find((n) => n.startsWith('flex_'))!;
    run1.engine.addVm({ name: 'flex-extra', tenant: 'flex' });
    run1.engine.removeVm(firstFlex);
    const before = await computerNames(run1);
    assert.match(before['flex-extra']!, /^app-[0-9a-f]{6}$/);
    assert.equal(before['db-0'], 'db-primary');
    await run1.close();

    const run2 = await Emulator.create({ clock, statePath });
    assert.equal(run2.restoredFrom, statePath);
    assert.deepEqual(await computerNames(run2), before);
    await run2.close();
  });

  it('a fleet that declares none saves no new field, and a state file from before them loads', async () => {
    const fleet = parseFleet(`scaleSets:\n  - { name: ${AKS}, instances: 20 }\nvms:\n  - { name: lone }`, 'fleet.yaml');
    const snapshot = new Engine({ clock: new ManualClock(T0), fleet }).snapshot();
    const text = JSON.stringify({ ...snapshot, version: 1 });
    for (const key of ['computerName', 'computerNamePrefix', 'orchestrationMode']) assert.ok(!text.includes(key), key);
    const statePath = join(mkdtempSync(join(root, 'case-')), 'state.json');
    writeFileSync(statePath, text);
    const emulator = await Emulator.create({ clock: new ManualClock(T0), statePath });
    const names = await computerNames(emulator);
    await emulator.close();
    assert.equal(names[`${AKS}_18`], `${AKS}00000I`);
    assert.equal(names.lone, 'lone');
    assert.ok(readFileSync(statePath, 'utf8').includes(`"${AKS}_19"`));
  });

  it('a state file whose computer names break the rules is refused, naming the field', async () => {
    const snapshot = new Engine({
      clock: new ManualClock(T0),
      fleet: [{ name: 'web_0', tenant: 'web', tenantKind: 'scaleSet' }],
    }).snapshot();
    snapshot.vms.push({ name: 'web_1', tenant: 'web', tenantKind: 'scaleSet', computerName: 'WEB000000' });
    const statePath = join(mkdtempSync(join(root, 'case-')), 'state.json');
    writeFileSync(statePath, JSON.stringify(snapshot));
    await assert.rejects(
      Emulator.create({ clock: new ManualClock(T0), statePath }),
      /invalid state file: vms\[1\]\.computerName: VM 'web_1': computer name 'WEB000000' already belongs to VM 'web_0'/,
    );
  });
});
