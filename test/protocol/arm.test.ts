// ARM names of scheduled events. SPEC §4 (Event Grid and ARM): the acknowledge route is
// `POST /subscriptions/S/resourcegroups/RG/providers/microsoft.compute/{virtualMachines|virtualMachineScaleSets}/NAME/providers/microsoft.maintenance/scheduledevents/ID/acknowledge`.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { acknowledgePath, parseScheduledEventPath, scheduledEventArmId } from '../../src/protocol/arm.js';

const id = { subscriptionId: 'sub', resourceGroup: 'rg', resourceType: 'virtualMachineScaleSets', resourceName: 'web' } as const;
const EVENT = '3DA1B9AA-5204-4335-8C33-C54E315DCFFE';

describe('protocol: ARM ids and acknowledge paths', () => {
  test("an event's ARM id reads back, in any case, as an id and not as an acknowledge path", () => {
    const arm = scheduledEventArmId({ ...id, eventId: EVENT });
    assert.equal(
      arm,
      `/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/web/providers/microsoft.maintenance/scheduledevents/${EVENT}`,
    );
    assert.deepEqual(parseScheduledEventPath(arm, false), { ...id, eventId: EVENT });
    assert.deepEqual(parseScheduledEventPath(arm.toUpperCase(), false), {
      subscriptionId: 'SUB',
      resourceGroup: 'RG',
      resourceType: 'virtualMachineScaleSets',
      resourceName: 'WEB',
      eventId: EVENT,
    });
    assert.equal(parseScheduledEventPath(arm, true), undefined);
  });

  test('the single and the list acknowledge paths read back; other paths do not', () => {
    assert.deepEqual(parseScheduledEventPath(acknowledgePath({ ...id, eventId: EVENT }), true), { ...id, eventId: EVENT });
    assert.deepEqual(parseScheduledEventPath(acknowledgePath(id), true), id);
    assert.equal(parseScheduledEventPath(acknowledgePath(id), false), undefined);
    assert.equal(
      parseScheduledEventPath(
        '/subscriptions/s/resourcegroups/r/providers/microsoft.compute/disks/d/providers/microsoft.maintenance/scheduledevents',
        true,
      ),
      undefined,
    );
    assert.equal(parseScheduledEventPath('/v1/vms', true), undefined);
  });

  test('names are escaped in the path and come back as they were', () => {
    const odd = { ...id, resourceGroup: 'rg (prod)', eventId: EVENT };
    assert.match(acknowledgePath(odd), /rg%20\(prod\)/);
    assert.deepEqual(parseScheduledEventPath(acknowledgePath(odd), true), odd);
  });
});
