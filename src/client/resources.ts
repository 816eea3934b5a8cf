// Which VMs an event concerns. [seed] Every VM of a tenant sees every event of it; readers check Resources.
import type { ScheduledEvent } from './types.js';

/** 2017-03-01 shows each name with a leading `_`. */
function unprefixed(name: string): string {
  return name.startsWith('_') ? name.slice(1) : name;
}

/** `set_instanceId`, the resource name of a scale-set VM. */
const SCALE_SET_NAME = /^(.+)_(\d+)$/;
/**
 * A Uniform scale-set VM's default computer name: computerNamePrefix + 6 base-36 digits of the instance
 * id (Azure writes them upper case, `myss00000I`; Kubernetes node names are the same lower-cased).
 */
const COMPUTER_NAME = /^(.+)([0-9a-z]{6})$/;
/** Windows computer names are at most 15 characters, so the default prefix is cut to 9. */
const WINDOWS_PREFIX = 9;
/** Linux host names are at most 64 characters; the emulator cuts a longer default prefix to 58. */
const LINUX_PREFIX = 58;

function sameScaleSetVm(resource: string, name: string): boolean {
  const r = SCALE_SET_NAME.exec(resource);
  if (r === null) return false;
  const [, set = '', instance = ''] = r;
  const n = SCALE_SET_NAME.exec(name);
  if (n !== null) return n[1] === set && Number(n[2]) === Number(instance);
  const c = COMPUTER_NAME.exec(name);
  if (c === null) return false;
  const [, prefix = '', digits = ''] = c;
  const prefixFits = prefix === set || [WINDOWS_PREFIX, LINUX_PREFIX].some((n) => set.length > n && prefix === set.slice(0, n));
  return prefixFits && Number.parseInt(digits, 36) === Number(instance);
}

function sameName(resource: string, name: string): boolean {
  const r = resource.toLowerCase();
  const n = name.toLowerCase();
  // Either side may carry the 2017-03-01 underscore; a VM whose own name starts with `_` still matches.
  for (const a of new Set([r, unprefixed(r)])) {
    for (const b of new Set([n, unprefixed(n)])) {
      if (a === b || sameScaleSetVm(a, b)) return true;
    }
  }
  return false;
}

/**
 * True if `name` is among the event's Resources. Case is ignored, as is the 2017-03-01 leading
 * `_`. Scale-set VMs match by resource name (`myss_3`, any case, `myss_03`) or by their default
 * computer name in a Uniform scale set (`myss000003`: the scale set's name, cut to 9 characters on
 * Windows, and the instance id in 6 base-36 digits), as a Kubernetes node is named. A computer name
 * from a prefix of another name, or from a Flexible scale set, cannot be told from the name alone:
 * pass `getCompute()`'s `name` instead.
 */
export function affects(event: ScheduledEvent, name: string): boolean {
  if (name === '') return false;
  return event.resources.some((r) => sameName(r, name));
}

/**
 * [seed] One approval covers every resource, so one VM is enough: the first name in Resources,
 * or null when there is none. The 2017-03-01 `_` is dropped when every name has it (that
 * version prefixes them all); otherwise the name is returned as sent.
 */
export function leaderOf(event: ScheduledEvent): string | null {
  const first = event.resources[0];
  if (first === undefined) return null;
  return event.resources.every((r) => r.startsWith('_')) ? unprefixed(first) : first;
}

/** True if `name` is the event's leader, compared as `affects` compares names. */
export function isLeader(event: ScheduledEvent, name: string): boolean {
  const first = event.resources[0];
  return first !== undefined && name !== '' && sameName(first, name);
}
