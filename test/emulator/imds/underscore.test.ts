// The 2017-03-01 leading underscore, read through our own client from a started emulator.
// Seed 002 (api-version notes, 2017-08-01): "Se quitó el guion bajo antepuesto de los nombres de
// recursos en las máquinas virtuales de IaaS". The underscore was on IaaS VM names only, so
// cloud-service role instances never had it.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { ScheduledEventsClient } from '../../../src/client/index.js';
import { Emulator } from '../../../src/emulator/emulator.js';

const LOOPBACK = { host: '127.0.0.1', port: 0 };

describe('2017-03-01 underscore: IaaS VMs only', () => {
  let emulator: Emulator;
  let imdsUrl: string;
  before(async () => {
    emulator = await Emulator.create({
      clock: 'manual',
      rateLimit: 0,
      fleet: [
        { name: 'FrontEnd_IN_0', tenant: 'contoso', tenantKind: 'cloudService', faultDomain: 0 },
        { name: 'FrontEnd_IN_1', tenant: 'contoso', tenantKind: 'cloudService', faultDomain: 0 },
        { name: 'web0', tenant: 'web', tenantKind: 'availabilitySet' },
        { name: 'ss_0', tenant: 'ss', tenantKind: 'scaleSet' },
        { name: 'solo' },
      ],
    });
    ({ imdsUrl } = await emulator.listen({ imds: LOOPBACK, control: LOOPBACK }));
  });
  after(() => emulator.close());
  afterEach(() => emulator.engine.reset());

  const client = (vm: string, apiVersion: string) => new ScheduledEventsClient({ endpoint: `${imdsUrl}/vms/${vm}`, apiVersion });

  it('a cloud service role instance is named as it is', async () => {
    emulator.engine.createOperation({ type: 'freeze', vms: ['FrontEnd_IN_0', 'FrontEnd_IN_1'] });
    for (const vm of ['FrontEnd_IN_0', 'FrontEnd_IN_1']) {
      const [e] = (await client(vm, '2017-03-01').getDocument()).events;
      assert.deepEqual(e?.resources, ['FrontEnd_IN_0', 'FrontEnd_IN_1'], vm);
    }
    const [later] = (await client('FrontEnd_IN_0', '2017-08-01').getDocument()).events;
    assert.deepEqual(later?.resources, ['FrontEnd_IN_0', 'FrontEnd_IN_1']);
  });

  it('IaaS VMs (availability set, scale set, standalone) keep the underscore at 2017-03-01 only', async () => {
    for (const vm of ['web0', 'ss_0', 'solo']) {
      emulator.engine.createOperation({ type: 'freeze', vms: [vm] });
      const [old] = (await client(vm, '2017-03-01').getDocument()).events;
      assert.deepEqual(old?.resources, [`_${vm}`], vm);
      const [ga] = (await client(vm, '2017-08-01').getDocument()).events;
      assert.deepEqual(ga?.resources, [vm], vm);
    }
  });
});
