// The events that have not ended, with the indexes the lifecycle reads them by: per tenant (what a
// VM's document shows), per job (what starts together) and per VM named in Resources (what a VM is
// going through). The one place those indexes are kept in step with each other.
import { TrackedMap, type ChangeLog } from './changes.js';
import type { EngineEvent } from './model.js';

const NONE: readonly EngineEvent[] = [];

export class LiveEvents {
  /** By id; saved in the state file. */
  readonly byId: TrackedMap<string, EngineEvent>;
  readonly #byTenant = new Map<string, EngineEvent[]>();
  readonly #byJob = new Map<string, EngineEvent[]>();
  /**
   * Only events of the types in #byVmTypes, the only ones asked for by VM: indexing every event
   * cost a million-entry map's churn for each event's every VM. [choice] Most VMs have one such
   * event: it is kept as is, a Set only from the second (a Set costs ~100 bytes).
   */
  readonly #byVm = new Map<string, EngineEvent | Set<EngineEvent>>();
  readonly #byVmTypes: ReadonlySet<string>;

  /** `byVmTypes`: the event types naming() answers for. */
  constructor(changes: ChangeLog, byVmTypes: ReadonlySet<string>) {
    this.byId = new TrackedMap(changes);
    this.#byVmTypes = byVmTypes;
  }

  get size(): number {
    return this.byId.size;
  }

  get(id: string): EngineEvent | undefined {
    return this.byId.get(id);
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  values(): IterableIterator<EngineEvent> {
    return this.byId.values();
  }

  /** A tenant's live events, in the order they were created. */
  ofTenant(tenant: string): readonly EngineEvent[] {
    return this.#byTenant.get(tenant) ?? NONE;
  }

  /** A job's live events: one per tenant it waits for. */
  ofJob(jobId: string): readonly EngineEvent[] {
    return this.#byJob.get(jobId) ?? NONE;
  }

  /** The live events of the indexed types (see the constructor) that name this VM in their Resources. */
  naming(vm: string): Iterable<EngineEvent> {
    const events = this.#byVm.get(vm);
    return events === undefined ? NONE : events instanceof Set ? events : [events];
  }

  /** Marks an event changed for the state file. */
  updated(event: EngineEvent): void {
    this.byId.changes.updated(event.id);
  }

  add(event: EngineEvent): void {
    this.byId.set(event.id, event);
    push(this.#byTenant, event.tenant, event);
    push(this.#byJob, event.jobId, event);
    if (!this.#byVmTypes.has(event.type)) return;
    for (const name of event.resources) {
      const events = this.#byVm.get(name);
      if (events === undefined) this.#byVm.set(name, event);
      else if (events instanceof Set) events.add(event);
      else if (events !== event) this.#byVm.set(name, new Set([events, event]));
    }
  }

  remove(event: EngineEvent): void {
    this.byId.delete(event.id);
    pull(this.#byTenant, event.tenant, event);
    pull(this.#byJob, event.jobId, event);
    if (!this.#byVmTypes.has(event.type)) return;
    for (const name of event.resources) {
      const events = this.#byVm.get(name);
      if (events === event) this.#byVm.delete(name);
      else if (events instanceof Set && events.delete(event) && events.size === 1) this.#byVm.set(name, events.values().next().value!);
    }
  }

  /** A VM left the fleet: the events naming it stay live for the rest of their Resources. */
  forgetVm(name: string): void {
    this.#byVm.delete(name);
  }

  clear(): void {
    this.byId.clear();
    this.#byTenant.clear();
    this.#byJob.clear();
    this.#byVm.clear();
  }
}

function push(index: Map<string, EngineEvent[]>, key: string, event: EngineEvent): void {
  const list = index.get(key);
  if (list) list.push(event);
  else index.set(key, [event]);
}

function pull(index: Map<string, EngineEvent[]>, key: string, event: EngineEvent): void {
  const list = index.get(key)!;
  list.splice(list.indexOf(event), 1);
  if (list.length === 0) index.delete(key);
}
