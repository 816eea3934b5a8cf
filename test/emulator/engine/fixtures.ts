// Engines on a manual clock with small fleets, for engine tests.
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { Timing } from '../../../src/emulator/engine/timing.js';

/** 2026-01-05T10:00:00Z, a whole second, so NotBefore values are exact. */
export const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;

export const FLEET: VmSpec[] = [
  { name: 'web0', tenant: 'web', tenantKind: 'availabilitySet', faultDomain: 0, faultDomainCount: 3, host: 'h1' },
  { name: 'web1', tenant: 'web', tenantKind: 'availabilitySet', faultDomain: 1, faultDomainCount: 3, host: 'h2' },
  { name: 'web2', tenant: 'web', tenantKind: 'availabilitySet', faultDomain: 2, faultDomainCount: 3, host: 'h3' },
  { name: 'ss0', tenant: 'ss', tenantKind: 'scaleSet', priority: 'Spot', terminateNotificationMinutes: 10, osImageNotification: true },
  { name: 'ss1', tenant: 'ss', tenantKind: 'scaleSet' },
  { name: 'gpu0', tenant: 'gpu', tenantKind: 'scaleSet', gpu: true, faultDomainCount: 1 },
  { name: 'gpu1', tenant: 'gpu', tenantKind: 'scaleSet', gpu: true, faultDomainCount: 1 },
  { name: 'solo' },
];

export function makeEngine(fleet: VmSpec[] = FLEET, factor = 1) {
  const clock = new ManualClock(T0);
  let n = 0;
  const newId = () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
  const engine = new Engine({ clock, timing: new Timing(factor), fleet, newId });
  const advance = (ms: number) => {
    clock.advance(ms);
    engine.tick();
  };
  return { clock, engine, advance };
}
