// Random engine histories for property tests: a small fleet that has every kind of tenant and a
// shared host, and steps that create every operation, approve, cancel, complete, move the clock,
// add and remove VMs and reset. Refusals (unknown VM, wrong state) change nothing and are part of a run.
import fc from 'fast-check';
import type { ManualClock } from '../../src/shared/clock.js';
import type { Engine } from '../../src/emulator/engine/engine.js';
import { EngineError } from '../../src/emulator/engine/errors.js';
import type { VmSpec } from '../../src/emulator/engine/fleet.js';

export const T0 = Date.UTC(2030, 0, 1);
// Host h1 carries four tenants, so a job on it waits for each of them: approvals that start nothing.
export const FLEET: VmSpec[] = [
  { name: 'a0', tenant: 'avset', tenantKind: 'availabilitySet', faultDomain: 0, host: 'h1' },
  { name: 'a1', tenant: 'avset', tenantKind: 'availabilitySet', faultDomain: 1 },
  { name: 's0', tenant: 'scale', tenantKind: 'scaleSet', terminateNotificationMinutes: 5, osImageNotification: true, host: 'h1' },
  { name: 's1', tenant: 'scale', tenantKind: 'scaleSet', faultDomain: 1 },
  { name: 'solo', host: 'h1' },
  // Names that are Object.prototype's keys travel as pairs, never as object keys.
  { name: '__proto__', host: 'h1' },
];
export const NAMES = [...FLEET.map((v) => v.name), 'extra', 'constructor'];
const TYPES = ['freeze', 'restart', 'redeploy', 'delete', 'reimage', 'spot-eviction', 'host-update', 'degraded-hardware'];

export type Step =
  | { kind: 'create'; type: string; vm: string; target: 'vm' | 'tenant' | 'host' }
  | { kind: 'approve' | 'cancel' | 'complete'; pick: number; vm: number }
  | { kind: 'advance'; seconds: number }
  | { kind: 'add' | 'remove'; vm: string }
  /** A Scheduled Events request from the VM: it enables the VM under the realistic activation profile. */
  | { kind: 'request'; vm: string }
  | { kind: 'reset' };

export const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      type: fc.constantFrom(...TYPES),
      vm: fc.constantFrom(...NAMES),
      target: fc.constantFrom('vm' as const, 'tenant' as const, 'host' as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constantFrom('approve' as const, 'cancel' as const, 'complete' as const),
      pick: fc.nat(20),
      vm: fc.nat(20),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), seconds: fc.integer({ min: 1, max: 3600 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('add' as const, 'remove' as const), vm: fc.constantFrom(...NAMES) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('request' as const), vm: fc.constantFrom(...NAMES) }) },
);

/** Ids `00000000-0000-4000-8000-<n>` from `start` up, so two engines can be given the same ones. */
export function countingIds(start = 0): { newId: () => string; count: () => number } {
  let n = start;
  return { newId: () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`, count: () => n };
}

export function applyStep(engine: Engine, clock: ManualClock, s: Step): void {
  try {
    switch (s.kind) {
      case 'create': {
        const vm = engine.fleet.vms.get(s.vm);
        if (!vm) return;
        const target = s.target === 'vm' ? { vms: [s.vm] } : s.target === 'tenant' ? { tenant: vm.tenant } : { host: vm.host };
        engine.createOperation({ type: s.type, ...target });
        return;
      }
      case 'approve':
      case 'cancel':
      case 'complete': {
        const events = engine.events();
        const event = events[s.pick % Math.max(1, events.length)];
        if (!event) return;
        if (s.kind === 'approve') engine.approve(event.resources[s.vm % event.resources.length]!, [event.id]);
        else if (s.kind === 'cancel') engine.cancel(event.id);
        else engine.complete(event.id);
        return;
      }
      case 'advance':
        clock.advance(s.seconds * 1000);
        engine.tick();
        return;
      case 'add':
        engine.addVm({ name: s.vm });
        return;
      case 'remove':
        engine.removeVm(s.vm);
        return;
      case 'reset':
        engine.reset();
        return;
      case 'request':
        engine.recordRequest(s.vm);
        return;
    }
  } catch (err) {
    if (!(err instanceof EngineError)) throw err;
  }
}
