// What has ended: events, finished operations and VMs a delete removed, kept up to the history
// limit and forgotten oldest first. The one owner of the sequence numbers that order history and
// operations (their page cursors), and of the rule for what may be forgotten when.
import { appended } from './lists.js';
import { TrackedMap, type ChangeLog } from './changes.js';
import type { EndedEvent, EngineEvent, EngineSnapshot, Operation, Saved } from './model.js';
import { pageNewestFirst, type Page, type PageRequest } from './paging.js';
import type { DeletedVm } from './vm-state.js';

export class History {
  readonly limit: number;
  /** Ended events by id; saved in the state file. */
  readonly ended: TrackedMap<string, EndedEvent>;
  /** VMs a delete removed, until one of the same name is added again; saved in the state file. */
  readonly deleted: TrackedMap<string, DeletedVm>;
  /** Ended events history may forget, oldest first; those of a running operation wait in #held. */
  readonly #prunable = new Set<string>();
  readonly #held = new Map<string, string[]>();
  /** Finished operations in the order they finished: the ones history may forget, first first. */
  readonly #finished = new Set<string>();
  /** Never goes back, not even on reset, so no cursor handed out can come to mean a newer item. */
  #nextSeq = 0;
  #nextFinish = 0;

  constructor(limit: number, changes: ChangeLog) {
    this.limit = limit;
    this.ended = new TrackedMap(changes);
    this.deleted = new TrackedMap(changes);
  }

  /** The next number in the one sequence operations and ended events share. */
  nextSeq(): number {
    return this.#nextSeq++;
  }

  has(id: string): boolean {
    return this.ended.has(id);
  }

  /** Ended events whose history is known, newest first, a page at a time. */
  page(request: PageRequest): Page<EndedEvent & { event: EngineEvent }> {
    return pageNewestFirst([...this.ended.values()], request, (e): e is EndedEvent & { event: EngineEvent } => e.event !== null);
  }

  /**
   * An event has ended. [choice] History keeps it while `runningOperation` runs, since the
   * operation's outcome is read from its events when it finishes.
   */
  recordEnded(event: EngineEvent, at: number, cancelled: boolean, runningOperation: string | null): void {
    const { id, tenant } = event;
    this.ended.set(id, { id, tenant, resources: [...event.resources], endedAt: at, cancelled, seq: this.#nextSeq++, event });
    if (runningOperation !== null) this.#hold(runningOperation, id);
    else this.#prunable.add(id);
  }

  /** An operation has finished: it, and the events it held, may be forgotten from now on. */
  operationFinished(operation: Operation): void {
    const { id } = operation;
    operation.finishOrder = this.#nextFinish++;
    this.#finished.add(id);
    for (const held of this.#held.get(id) ?? []) this.#prunable.add(held);
    this.#held.delete(id);
  }

  recordDeleted(vm: DeletedVm): void {
    this.deleted.set(vm.name, vm);
  }

  /** A VM of this name is in the fleet again. */
  forgetDeleted(name: string): void {
    this.deleted.delete(name);
  }

  /**
   * [choice] The one place anything that ended is forgotten: past the limit the oldest ended event,
   * finished operation (taken out of `operations`) and deleted-VM record go first.
   */
  prune(operations: TrackedMap<string, Operation>): void {
    const limit = this.limit;
    for (const id of this.#prunable) {
      if (this.ended.size <= limit) break;
      this.#prunable.delete(id);
      this.ended.delete(id);
    }
    for (const id of this.#finished) {
      if (this.#finished.size <= limit) break;
      this.#finished.delete(id);
      operations.delete(id);
    }
    for (const name of this.deleted.keys()) {
      if (this.deleted.size <= limit) break;
      this.deleted.delete(name);
    }
  }

  snapshot(): Pick<EngineSnapshot, 'ended' | 'deleted'> {
    return { ended: [...this.ended.values()].map((e) => structuredClone(e)), deleted: [...this.deleted.values()].map((d) => ({ ...d })) };
  }

  /**
   * Takes saved history back, numbering on from the highest sequence number saved (those saved before
   * sequence numbers existed get the next ones, in the order they were saved). Returns the saved
   * operations, numbered too, for their owner; a deleted VM comes back only if `inFleet` says its name is free.
   */
  restore(snapshot: EngineSnapshot, inFleet: (name: string) => boolean): Operation[] {
    let next = this.#nextSeq;
    for (const item of [...snapshot.ended, ...snapshot.operations]) if (item.seq !== undefined) next = Math.max(next, item.seq + 1);
    const number = <T extends { seq: number }>(saved: readonly Saved<T>[]): T[] =>
      saved.map((item) => ({ ...structuredClone(item), seq: item.seq ?? next++ }) as T).sort((a, b) => a.seq - b.seq);
    const ended = number<EndedEvent>(snapshot.ended);
    const operations = number<Operation>(snapshot.operations);
    this.#nextSeq = next;
    const running = new Set<string>();
    const finished: Operation[] = [];
    for (const op of operations) {
      if (op.status === 'running') running.add(op.id);
      else finished.push(op);
    }
    // In the order they finished; those saved before the order was kept first, in creation order.
    const order = (op: Operation) => op.finishOrder ?? -1;
    for (const op of finished.sort((a, b) => order(a) - order(b) || a.seq - b.seq)) {
      this.#finished.add(op.id);
      this.#nextFinish = Math.max(this.#nextFinish, order(op) + 1);
    }
    for (const e of ended) {
      this.ended.set(e.id, e);
      const op = e.event?.operationId;
      if (op !== undefined && running.has(op)) this.#hold(op, e.id);
      else this.#prunable.add(e.id);
    }
    for (const d of snapshot.deleted ?? []) if (!inFleet(d.name)) this.deleted.set(d.name, { ...d });
    return operations;
  }

  clear(): void {
    this.ended.clear();
    this.deleted.clear();
    this.#prunable.clear();
    this.#held.clear();
    this.#finished.clear();
  }

  #hold(operationId: string, eventId: string): void {
    this.#held.set(operationId, appended(this.#held.get(operationId) ?? [], eventId));
  }
}
