// The engine's state as the state file keeps it: a whole snapshot, the changes since the last take
// (a delta), and a snapshot put back. The snapshot's shape is the file format (model.ts), so what is
// saved and what is restored are written side by side here.
import type { ActivationState } from './activation.js';
import { takeTable } from './changes.js';
import { cloneEvent, type EngineCore } from './core.js';
import { vmToSpec } from './fleet.js';
import { SNAPSHOT_VERSION, type EngineDelta, type EngineSnapshot } from './model.js';

export function snapshotOf(core: EngineCore): EngineSnapshot {
  const saved = core.history.snapshot();
  const snapshot: EngineSnapshot = {
    format: 'forewarn-state',
    version: SNAPSHOT_VERSION,
    savedAt: core.clock.now(),
    initialFleet: core.vms.startFleet.specs(),
    vms: core.vms.specs(),
    events: [...core.live.values()].map(cloneEvent),
    ended: saved.ended,
    operations: [...core.operations.byId.values()].map((o) => structuredClone(o)),
    incarnations: Object.fromEntries(core.documents.incarnations.entries()),
    activation: core.activation.snapshot(),
    deleted: saved.deleted,
  };
  // Only when there are any: a state without subscriptions is saved as before they existed.
  if (core.subscriptions.size > 0) snapshot.subscriptions = [...core.subscriptions.values()].map((s) => ({ ...s }));
  return snapshot;
}

/**
 * What changed since the previous take, for a state file that appends changes rather than
 * rewriting everything; 'everything' on the first take and after a reset or restore, when
 * the caller saves a whole snapshot instead. Values are copies.
 */
export function deltaOf(core: EngineCore): EngineDelta | 'everything' {
  // restart clears every table of the log.
  if (core.changes.restart()) return 'everything';
  const { fleet, live, history, operations, documents, activation } = core;
  const delta: EngineDelta = { savedAt: core.clock.now() };
  const vms = takeTable(
    core.vms.changes,
    (name) => fleet.vms.get(name),
    (vm) => vmToSpec(vm, fleet.tenantOf(vm)),
  );
  const events = takeTable(live.byId.changes, (id) => live.get(id), cloneEvent);
  const ended = takeTable(
    history.ended.changes,
    (id) => history.ended.get(id),
    (e) => structuredClone(e),
  );
  const ops = takeTable(
    operations.byId.changes,
    (id) => operations.get(id),
    (o) => structuredClone(o),
  );
  const incarnations = takeTable(
    documents.incarnations.changes,
    (name) => documents.incarnations.get(name),
    (n, name): [string, number] => [name, n],
  );
  const activations = takeTable(
    activation.states.changes,
    (name) => activation.states.get(name),
    (a, name): [string, ActivationState] => [name, { ...a }],
  );
  const deleted = takeTable(
    history.deleted.changes,
    (name) => history.deleted.get(name),
    (d) => ({ ...d }),
  );
  if (vms) delta.vms = vms;
  if (events) delta.events = events;
  if (ended) delta.ended = ended;
  if (ops) delta.operations = ops;
  if (incarnations) delta.incarnations = incarnations;
  if (activations) delta.activation = activations;
  const subscriptions = takeTable(
    core.subscriptions.changes,
    (id) => core.subscriptions.get(id),
    (s) => ({ ...s }),
  );
  if (deleted) delta.deleted = deleted;
  if (subscriptions) delta.subscriptions = subscriptions;
  return delta;
}

/** Puts a snapshot into an engine whose state has been cleared; its transitions are scheduled again. */
export function restoreInto(core: EngineCore, snapshot: EngineSnapshot): void {
  const { fleet, documents, operations, lifecycle } = core;
  for (const spec of snapshot.vms) core.vms.place(spec);
  core.vms.startFleet.are(structuredClone(snapshot.initialFleet));
  for (const [name, n] of Object.entries(snapshot.incarnations)) documents.incarnations.set(name, n);
  operations.restore(core.history.restore(snapshot, (name) => fleet.vms.has(name)));
  for (const e of snapshot.events) lifecycle.restore(cloneEvent(e), snapshot.savedAt);
  operations.countCancelled(core.history);
  core.activation.restore(snapshot.activation ?? {});
  core.subscriptions.clear();
  for (const s of snapshot.subscriptions ?? []) core.subscriptions.set(s.id, { ...s });
  // Restored documents are the saved ones, under their saved incarnations.
  documents.forgetTouched();
}
