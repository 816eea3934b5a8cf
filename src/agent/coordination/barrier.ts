// The barrier's view, for every store: one approval starts an event on every VM its Resources name,
// so of the VMs it names that run the agent, which are not prepared yet. Names compare as `affects`
// compares them (case, the 2017-03-01 `_`, scale-set forms).
import { affects, type ScheduledEvent } from '../../client/index.js';
import type { Member } from './store.js';

/** Two VM names that are one VM, compared as `affects` compares them. */
export function sameVm(a: string, b: string): boolean {
  return affects({ resources: [a] } as unknown as ScheduledEvent, b);
}

/** Whether the event names no VM but this one: nothing to wait for, and no need to ask the store. */
export function namesOnly(event: ScheduledEvent, self: string): boolean {
  return event.resources.length > 0 && event.resources.every((r) => sameVm(r, self));
}

export interface MemberView {
  /** Every registered VM the event names, this one included. */
  named: string[];
  /** Those not prepared for it yet: what the barrier waits for. */
  waiting: string[];
  /** VMs the event names that no agent of the group registered: not waited for. */
  unregistered: string[];
}

/** `self` counts as prepared: the caller asks only once it is. */
export function memberView(event: ScheduledEvent, members: readonly Member[], self: string): MemberView {
  const id = event.id.toLowerCase();
  const named: string[] = [];
  const waiting: string[] = [];
  for (const m of members) {
    if (!affects(event, m.vm) || named.some((n) => sameVm(n, m.vm))) continue;
    named.push(m.vm);
    if (!sameVm(m.vm, self) && !m.prepared.includes(id)) waiting.push(m.vm);
  }
  const unregistered = event.resources.filter((r) => !sameVm(r, self) && !named.some((n) => sameVm(r, n)));
  return { named, waiting, unregistered };
}

/** Whether the event names a registered VM besides this one: then it takes one slot for all of them. */
export function namesOthers(event: ScheduledEvent, members: readonly Member[], self: string): boolean {
  return members.some((m) => !sameVm(m.vm, self) && affects(event, m.vm));
}
