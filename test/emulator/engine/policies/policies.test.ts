// Each operation kind's policy owns what follows its first events: whether the rest of a target
// rolls one fault domain at a time, and whether a running operation holds its tenants.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { POLICIES } from '../../../../src/emulator/engine/policies/index.js';
import { OPERATION_TYPES } from '../../../../src/emulator/engine/operations.js';

const TENANT = { tenant: 'set-a', host: null };
const HOST = { tenant: null, host: 'host0' };
const NAMED = { tenant: null, host: null };

describe('operation policies', () => {
  it('only routine maintenance over a tenant rolls; VMs named one by one or a host get their events at once', () => {
    for (const type of OPERATION_TYPES) {
      const policy = POLICIES[type];
      assert.equal(policy.rolls(TENANT), policy.routine, type);
      assert.equal(policy.rolls(HOST), false, type);
      assert.equal(policy.rolls(NAMED), false, type);
    }
    assert.deepEqual(new Set(OPERATION_TYPES.filter((t) => POLICIES[t].routine)), new Set(['freeze', 'platform-reboot', 'host-update']));
  });

  it('a rollout holds its tenants; a host update holds them on a host too; nothing else holds', () => {
    for (const type of OPERATION_TYPES) {
      const policy = POLICIES[type];
      assert.equal(policy.holdsTenant(TENANT), policy.routine, type);
      assert.equal(policy.holdsTenant(HOST), type === 'host-update', type);
      assert.equal(policy.holdsTenant(NAMED), type === 'host-update', type);
    }
  });
});
