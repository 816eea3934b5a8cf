// Cross-reference and range checks for a state snapshot read back from disk: a file that parses
// can still lie (an event for a tenant that is gone, a host split across fault domains, a time
// of 1e300), and the engine would take it in silently. The schema checks shapes; this checks sense.
import type { EngineEvent, EngineSnapshot } from '../engine/engine.js';
import { EngineError } from '../engine/errors.js';
import { Fleet, fleetRuleField, type VmSpec } from '../engine/fleet.js';
import { formatPath } from '../../shared/source-positions.js';

export interface SnapshotProblem {
  /** Where in the snapshot, as a field path (e.g. ['events', 3, 'tenant']). */
  path: (string | number)[];
  message: string;
}

/** JavaScript's Date range: a time outside it has no date at all. */
export const MAX_EPOCH_MS = 8.64e15;

/**
 * [choice] The latest `savedAt` accepted: the end of year 9999, where ISO 8601 and RFC 1123
 * four-digit years end. No bound relative to the wall clock: a manual clock may legitimately
 * have been advanced years ahead, and it resumes from `savedAt`.
 */
export const MAX_SAVED_AT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

type Path = (string | number)[];

/**
 * Every problem found in a snapshot, not just the first; empty when it is consistent. Pure.
 * [choice] Names that only history mentions (ended events' resources, operations' vms,
 * incarnations, activation records) may name VMs that are gone: deletes and resets keep them.
 * History is also trimmed (--history-limit), so ended events, finished operations and deleted-VM
 * records may refer to ones already forgotten; only live events and running operations must not.
 * A live event's VMs and approvers may have left the fleet too (a removal leaves the event live
 * while its tenant has VMs), but a VM that leaves keeps its incarnation: a name the state never had
 * is a lie, and would be served in the documents of the tenant's other VMs.
 */
export function checkSnapshot(snapshot: EngineSnapshot): SnapshotProblem[] {
  const problems: SnapshotProblem[] = [];
  const add = (path: Path, message: string) => problems.push({ path, message });
  const time = (path: Path, value: number | null | undefined) => {
    if (value === null || value === undefined) return;
    if (typeof value !== 'number' || !Number.isFinite(value) || Math.abs(value) > MAX_EPOCH_MS) {
      add(path, `${String(value)} is not a time: epoch milliseconds within ±${MAX_EPOCH_MS} (JavaScript's Date range)`);
    }
  };

  time(['savedAt'], snapshot.savedAt);
  if (Number.isFinite(snapshot.savedAt) && (snapshot.savedAt < 0 || snapshot.savedAt > MAX_SAVED_AT_MS)) {
    if (Math.abs(snapshot.savedAt) <= MAX_EPOCH_MS)
      add(['savedAt'], `${snapshot.savedAt} is outside 1970 to 9999; the state cannot have been saved then`);
  }

  // The fleet obeys the same rules as when it was built.
  const fleet = checkFleet(snapshot.vms, ['vms'], add);
  checkFleet(snapshot.initialFleet, ['initialFleet'], add);
  // VMs the state has had: those its fleet names (a VM the fleet refused is not reported again) and
  // those gone, whose incarnations stay.
  const named = new Set(snapshot.vms.map((v) => v.name));
  const hadVm = (name: string) => named.has(name) || Object.hasOwn(snapshot.incarnations, name);

  // Events, live and ended, each id once.
  const eventIds = new Map<string, Path>();
  const operations = new Map<string, { at: Path; status: string }>();
  snapshot.operations.forEach((o, i) => {
    const first = operations.get(o.id);
    if (first) add(['operations', i, 'id'], `duplicate operation id ${o.id} (first at ${formatPath(first.at)})`);
    else operations.set(o.id, { at: ['operations', i], status: o.status });
  });
  const claim = (id: string, at: Path) => {
    const first = eventIds.get(id);
    if (first) add([...at, 'id'], `duplicate event id ${id} (first at ${formatPath(first)})`);
    else eventIds.set(id, at);
  };

  snapshot.events.forEach((e, i) => {
    const at: Path = ['events', i];
    claim(e.id, at);
    checkEvent(e, at, add, time);
    // A live event's operation is running, and running operations are never forgotten.
    if (operations.get(e.operationId)?.status !== 'running') {
      add(
        [...at, 'operationId'],
        operations.has(e.operationId)
          ? `operation ${e.operationId} has finished, yet this event is live`
          : `no operation with id ${e.operationId}`,
      );
    }
    const tenant = fleet.tenants.get(e.tenant);
    // The engine ends a tenant's events silently when its last VM goes.
    if (!tenant) add([...at, 'tenant'], `no tenant named '${e.tenant}' in the fleet; a live event needs one`);
    e.resources.forEach((name, j) => {
      if (!hadVm(name)) add([...at, 'resources', j], `VM '${name}' is not in the fleet and never was (it has no incarnation)`);
    });
    e.approvals.forEach((a, j) => {
      if (!hadVm(a.vm))
        add([...at, 'approvals', j, 'vm'], `VM '${a.vm}' approved it, but is not in the fleet and never was (it has no incarnation)`);
    });
    // [choice] Its VMs are not required to be in its tenant: the engine lets a VM be removed and added
    // again under another tenant while an event naming it is live, and such a state must still load.
  });

  snapshot.ended.forEach((x, i) => {
    const at: Path = ['ended', i];
    claim(x.id, at);
    time([...at, 'endedAt'], x.endedAt);
    if (x.event === null) return;
    const e = x.event;
    checkEvent(e, [...at, 'event'], add, time);
    if (e.id !== x.id) add([...at, 'event', 'id'], `${e.id} is not the ended event's id ${x.id}`);
    if (e.tenant !== x.tenant) add([...at, 'event', 'tenant'], `'${e.tenant}' is not the ended event's tenant '${x.tenant}'`);
  });

  snapshot.operations.forEach((o, i) => {
    const at: Path = ['operations', i];
    time([...at, 'createdAt'], o.createdAt);
    // A finished operation's ended events may have been forgotten (--history-limit); a running one's are kept.
    if (o.status === 'running') {
      o.events.forEach((id, j) => {
        if (!eventIds.has(id)) add([...at, 'events', j], `no event with id ${id}, live or ended, though the operation is running`);
      });
    }
    o.steps?.forEach((step, k) => {
      time([...at, 'steps', k, 'at'], step.at);
      step.events.forEach((id, j) => {
        if (!o.events.includes(id)) add([...at, 'steps', k, 'events', j], `event ${id} is not one of this operation's events`);
      });
    });
  });

  for (const [name, n] of Object.entries(snapshot.incarnations)) {
    if (!Number.isSafeInteger(n) || n < 0) add(['incarnations', name], `${n} is not an incarnation: a whole number 0 or more`);
  }
  for (const [name, a] of Object.entries(snapshot.activation ?? {})) {
    for (const field of ['enabledAt', 'enablingAt', 'lastRequestAt'] as const) time(['activation', name, field], a[field]);
  }
  snapshot.deleted?.forEach((d, i) => {
    time(['deleted', i, 'deletedAt'], d.deletedAt);
    if (fleet.vms.has(d.name)) add(['deleted', i, 'name'], `VM '${d.name}' is in the fleet, so it cannot also be deleted`);
  });
  return problems;
}

/** The fleet's own rules, VM by VM, on a scratch fleet; a refused VM is reported and left out. */
function checkFleet(specs: readonly VmSpec[], at: Path, add: (path: Path, message: string) => void): Fleet {
  // Saved VMs carry their vmIds; a file from before they were kept gets distinct stand-ins.
  let n = 0;
  const fleet = new Fleet(() => `00000000-0000-0000-0000-${String(++n).padStart(12, '0')}`);
  specs.forEach((spec, i) => {
    try {
      fleet.add(spec);
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
      const field = fleetRuleField(err);
      add(field ? [...at, i, field] : [...at, i], `VM '${spec.name}': ${err.message}`);
    }
  });
  return fleet;
}

function checkEvent(
  e: EngineEvent,
  at: Path,
  add: (path: Path, message: string) => void,
  time: (path: Path, value: number | null | undefined) => void,
): void {
  for (const field of ['createdAt', 'notBefore', 'startedAt', 'endsAt'] as const) time([...at, field], e[field]);
  e.approvals.forEach((a, j) => time([...at, 'approvals', j, 'at'], a.at));
  if (e.resources.length === 0) add([...at, 'resources'], 'an event names at least one VM');
  const seen = new Set<string>();
  e.resources.forEach((name, j) => {
    if (seen.has(name)) add([...at, 'resources', j], `VM '${name}' is named twice`);
    seen.add(name);
  });
  if (e.status === 'Started') {
    if (e.startedAt === null) add([...at, 'startedAt'], 'a Started event has a startedAt');
    if (e.startedBy === null) add([...at, 'startedBy'], 'a Started event has a startedBy');
    // Its end is scheduled at endsAt; without one it would stay Started for ever.
    if (e.endsAt === null) add([...at, 'endsAt'], 'a Started event has an endsAt; without one it would never end');
  } else {
    for (const field of ['startedAt', 'endsAt', 'startedBy'] as const) {
      if (e[field] !== null) add([...at, field], `a ${e.status} event has not started, so ${field} is null`);
    }
  }
  if (e.startedAt !== null && e.endsAt !== null && e.endsAt < e.startedAt) add([...at, 'endsAt'], 'ends before it started');
}
