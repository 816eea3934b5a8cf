// scheduledEventsPolicy in fleet files, with ARM's names, on a VM, a scale set or an availability set.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FleetFileError, parseFleet } from '../../../src/emulator/fleet/file.js';

const lines = (...l: string[]) => l.join('\n');

function refusal(text: string): string {
  try {
    parseFleet(text, 'fleet.yaml');
  } catch (err) {
    assert.ok(err instanceof FleetFileError, String(err));
    return err.message;
  }
  assert.fail('the fleet file was accepted');
}

describe('scheduledEventsPolicy in fleet files', () => {
  it("a scale set's policy reaches each of its VMs", () => {
    const specs = parseFleet(
      lines(
        'scaleSets:',
        '  - name: web',
        '    instances: 2',
        '    scheduledEventsPolicy:',
        '      scheduledEventsAdditionalPublishingTargets:',
        '        eventGridAndResourceGraph: { enable: true, scheduledEventsApiVersion: "2020-07-01" }',
        '      userInitiatedReboot: { automaticallyApprove: true }',
      ),
      'fleet.yaml',
    );
    for (const spec of specs) {
      assert.deepEqual(spec.scheduledEventsPolicy, {
        scheduledEventsAdditionalPublishingTargets: {
          eventGridAndResourceGraph: { enable: true, scheduledEventsApiVersion: '2020-07-01' },
        },
        userInitiatedReboot: { automaticallyApprove: true },
      });
    }
  });

  it("a VM's own settings override its availability set's one by one, and keep the rest", () => {
    const [vm0, vm1] = parseFleet(
      lines(
        'tenants:',
        '  - name: as1',
        '    kind: availabilitySet',
        '    scheduledEventsPolicy:',
        '      scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: { enable: true } }',
        '      userInitiatedReboot: { automaticallyApprove: true }',
        'vms:',
        '  - name: vm0',
        '    tenant: as1',
        '    scheduledEventsPolicy:',
        '      userInitiatedReboot: { automaticallyApprove: false }',
        '      userInitiatedRedeploy: { automaticallyApprove: true }',
        '  - name: vm1',
        '    tenant: as1',
        '    faultDomain: 1',
      ),
      'fleet.yaml',
    );
    assert.deepEqual(vm0!.scheduledEventsPolicy, {
      scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: { enable: true } },
      userInitiatedReboot: { automaticallyApprove: false },
      userInitiatedRedeploy: { automaticallyApprove: true },
    });
    assert.deepEqual(vm1!.scheduledEventsPolicy, {
      scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: { enable: true } },
      userInitiatedReboot: { automaticallyApprove: true },
    });
  });

  it('a setting Forewarn does not model, or an api-version it does not know, is refused at its place', () => {
    assert.match(
      refusal(lines('vms:', '  - name: vm0', '    scheduledEventsPolicy:', '      allInstancesDown: { automaticallyApprove: true }')),
      /^fleet\.yaml:4:7: vms\[0\]\.scheduledEventsPolicy\.allInstancesDown: unknown key "allInstancesDown"$/,
    );
    assert.match(
      refusal(
        lines(
          'vms:',
          '  - name: vm0',
          '    scheduledEventsPolicy:',
          '      scheduledEventsAdditionalPublishingTargets: { eventGridAndResourceGraph: { scheduledEventsApiVersion: "2.0" } }',
        ),
      ),
      /^fleet\.yaml:4:\d+: vms\[0\]\.scheduledEventsPolicy\.scheduledEventsAdditionalPublishingTargets\.eventGridAndResourceGraph\.scheduledEventsApiVersion: .*2020-07-01/,
    );
  });
});
