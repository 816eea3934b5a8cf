// Every VM name's incarnation, kept dense: a name's slot in one Map, its number and the commit that
// last marked it in typed arrays. A name that left keeps its slot, so one that comes back keeps
// rising. At a million VMs a record object a VM cost 48 bytes and every change two or three hash
// lookups; this costs 16 bytes a VM and one lookup.
import type { ChangeLog, KeyChanges } from './changes.js';

export class Incarnations {
  /** Names whose incarnation changed since the state file last took them. */
  readonly changes: KeyChanges<string>;
  readonly #log: ChangeLog;
  readonly #slots = new Map<string, number>();
  #names: string[] = [];
  /** Float64 so a number never wraps: an incarnation is exact up to 2^53. */
  #values = new Float64Array(64);
  /** Float64 too: a mark counts commits, and one that wrapped could match a stale mark. */
  #marks = new Float64Array(64);

  constructor(log: ChangeLog) {
    this.#log = log;
    this.changes = log.table<string>();
  }

  get size(): number {
    return this.#names.length;
  }

  has(name: string): boolean {
    return this.#slots.has(name);
  }

  get(name: string): number | undefined {
    const slot = this.#slots.get(name);
    return slot === undefined ? undefined : this.#values[slot];
  }

  set(name: string, incarnation: number): void {
    let slot = this.#slots.get(name);
    if (slot === undefined) {
      slot = this.#add(name);
      this.changes.inserted(name);
    } else this.changes.updated(name);
    this.#values[slot] = incarnation;
  }

  /** In the order names were first given an incarnation. */
  *entries(): IterableIterator<[string, number]> {
    for (let slot = 0; slot < this.#names.length; slot++) yield [this.#names[slot]!, this.#values[slot]!];
  }

  /** Forgets every name; a state file then saves everything. */
  clear(): void {
    this.#slots.clear();
    this.#names = [];
    this.#log.markEverything();
  }

  /** A name's slot; a name never seen gets one, at incarnation `first`. */
  slotOf(name: string, first: number): number {
    let slot = this.#slots.get(name);
    if (slot === undefined) {
      slot = this.#add(name);
      this.#values[slot] = first;
      this.changes.inserted(name);
    }
    return slot;
  }

  nameOf(slot: number): string {
    return this.#names[slot]!;
  }

  /** Marks a slot's document changed in commit `mark`; false if it is marked already. */
  mark(slot: number, mark: number): boolean {
    if (this.#marks[slot] === mark) return false;
    this.#marks[slot] = mark;
    return true;
  }

  /** One more incarnation for a marked slot; returns its name. */
  bump(slot: number): string {
    const name = this.#names[slot]!;
    this.#values[slot]!++;
    this.changes.updated(name);
    return name;
  }

  #add(name: string): number {
    const slot = this.#names.length;
    if (slot === this.#values.length) {
      const values = new Float64Array(slot * 2);
      values.set(this.#values);
      this.#values = values;
      const marks = new Float64Array(slot * 2);
      marks.set(this.#marks);
      this.#marks = marks;
    }
    this.#names.push(name);
    this.#slots.set(name, slot);
    // A slot used before a clear may hold an old mark.
    this.#marks[slot] = 0;
    return slot;
  }
}
