// What an operation request names, checked against the fleet, and when its events may start: the
// rules for "vms", "host" and "tenant" targets and for the notice an event must give.
import { formatIso } from '../../protocol/time.js';
import { conflict, invalid, notFound } from './errors.js';
import type { Fleet, Vm } from './fleet.js';
import type { OperationRequest } from './model.js';
import { HOST_OPERATIONS, type OperationType } from './operations.js';
import type { OperationPolicy } from './policies/index.js';
import type { Timing } from './timing.js';

/** Clients compute NotBefore from their own clock; this much skew still counts as meeting the notice. */
const NOTICE_TOLERANCE_MS = 1000;

const ceilToSecond = (ms: number) => Math.ceil(ms / 1000) * 1000;

export interface Target {
  vms: Vm[];
  host: string | null;
  tenant: string | null;
}

/** The VMs a request names, through exactly one of "vms", "host" or "tenant"; errors name the field. */
export function resolveTarget(fleet: Fleet, type: OperationType, request: OperationRequest): Target {
  const targets = [request.vms, request.host, request.tenant].filter((t) => t !== undefined).length;
  if (targets !== 1) throw invalid('an operation needs exactly one target: "vms", "host" or "tenant"');
  // [seed] A deallocated VM gets no further events: a host or tenant job passes it by.
  const running = (names: Iterable<string>, where: string) => {
    const vms = [...names].map((n) => fleet.get(n)).filter((vm) => vm.powerState === 'running');
    if (vms.length === 0) throw conflict(`every VM of ${where} is deallocated (evicted); none can get an event`);
    return vms;
  };
  if (request.host !== undefined) {
    if (!HOST_OPERATIONS.has(type)) {
      throw invalid(`'${type}' is not a host-level job; target "vms" or "tenant" (host jobs: ${[...HOST_OPERATIONS].join(', ')})`, 'host');
    }
    const host = fleet.hosts.get(request.host);
    if (!host) throw notFound(`no host named '${request.host}'`, 'host');
    return { vms: running(host.vms, `host '${host.name}'`), host: host.name, tenant: null };
  }
  if (request.tenant !== undefined) {
    const tenant = fleet.tenants.get(request.tenant);
    if (!tenant) throw notFound(`no tenant named '${request.tenant}'`, 'tenant');
    return { vms: running(tenant.vms, `tenant '${tenant.name}'`), host: null, tenant: tenant.name };
  }
  if (type === 'host-update') {
    throw invalid(
      'host-update targets a "host" (one job for every tenant on it) or a "tenant" (rolling by fault domain), not "vms"',
      'vms',
    );
  }
  const names = request.vms!;
  if (names.length === 0) throw invalid('"vms" must name at least one VM', 'vms');
  const seen = new Set<string>();
  for (const [i, n] of names.entries()) {
    if (seen.has(n)) throw invalid('"vms" names a VM more than once', ['vms', i]);
    seen.add(n);
  }
  return {
    vms: names.map((n, i) => fleet.vms.get(n) ?? notFoundAt(`no VM named '${n}'`, ['vms', i])),
    host: null,
    tenant: null,
  };
}

function notFoundAt(message: string, field: (string | number)[]): never {
  throw notFound(message, field);
}

/** The request field that named the i-th target VM: its place in "vms", or the tenant or host that stood for it. */
export function targetField(request: OperationRequest, i: number): string | (string | number)[] {
  return request.vms !== undefined ? ['vms', i] : request.tenant !== undefined ? 'tenant' : 'host';
}

/** NotBefore for an event of these VMs: the requested time if it gives the minimum notice, else the default. */
export function noticeUntil(
  policy: OperationPolicy,
  members: readonly Vm[],
  now: number,
  request: { notBefore?: number | undefined; force?: boolean | undefined },
  timing: Timing,
): number {
  const minimumMs = policy.minimumNoticeMs(members, timing);
  const defaultMs = policy.defaultNoticeMs?.(members, timing) ?? minimumMs;
  if (request.notBefore === undefined) return ceilToSecond(now + defaultMs);
  if (request.notBefore < now + minimumMs - NOTICE_TOLERANCE_MS && !request.force) {
    throw invalid(
      `notBefore ${formatIso(request.notBefore)} gives less than the minimum notice of ` +
        `${minimumMs / 1000} s for ${policy.eventType} (earliest ${formatIso(now + minimumMs)}); ` +
        'pass "force": true to allow it',
      'notBefore',
    );
  }
  return ceilToSecond(request.notBefore);
}
