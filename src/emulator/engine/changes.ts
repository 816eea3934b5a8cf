// What changed in the engine since a saver last asked, so a save writes only that (the state file's log).

/**
 * The keys of one table that changed since the last take. `changed` keeps keys in the order
 * they last entered the table, so appending them reproduces a Map's iteration order; a key
 * that left the table at any point is in `removed` too (it is re-appended, not updated in place).
 */
export class KeyChanges<K> {
  readonly changed = new Set<K>();
  readonly removed = new Set<K>();

  constructor(private readonly log: ChangeLog) {}

  /** The key entered the table (at its end). */
  inserted(key: K): void {
    if (!this.log.tracking) return;
    this.changed.delete(key);
    this.changed.add(key);
  }

  /** The entry changed where it stands. */
  updated(key: K): void {
    if (this.log.tracking) this.changed.add(key);
  }

  deleted(key: K): void {
    if (!this.log.tracking) return;
    this.changed.delete(key);
    this.removed.add(key);
  }

  clear(): void {
    this.changed.clear();
    this.removed.clear();
  }
}

/**
 * One record of change for all of an engine's tables. Off until a saver first takes from it,
 * so an engine without a state file keeps no record at all; a clear (reset, restore) marks
 * everything, which the saver answers with a whole snapshot.
 */
export class ChangeLog {
  tracking = false;
  everything = true;
  readonly #tables: KeyChanges<unknown>[] = [];

  table<K>(): KeyChanges<K> {
    const t = new KeyChanges<K>(this);
    this.#tables.push(t as KeyChanges<unknown>);
    return t;
  }

  markEverything(): void {
    this.everything = true;
    for (const t of this.#tables) t.clear();
  }

  /** Starts a new period; true if everything changed in the one that ends. */
  restart(): boolean {
    const everything = this.everything || !this.tracking;
    this.tracking = true;
    this.everything = false;
    if (everything) for (const t of this.#tables) t.clear();
    return everything;
  }
}

/** A Map that reports its own inserts, in-place sets and deletes to a change record. */
export class TrackedMap<K, V> extends Map<K, V> {
  readonly changes: KeyChanges<K>;

  constructor(readonly log: ChangeLog) {
    super();
    this.changes = log.table<K>();
  }

  override set(key: K, value: V): this {
    // Map's constructor calls set before the fields exist; nothing is tracked then.
    if (this.changes) {
      if (super.has(key)) this.changes.updated(key);
      else this.changes.inserted(key);
    }
    return super.set(key, value);
  }

  override delete(key: K): boolean {
    const had = super.delete(key);
    if (had) this.changes.deleted(key);
    return had;
  }

  override clear(): void {
    super.clear();
    this.log.markEverything();
  }
}

/** One table's changes in a delta: entries set (in place, or appended if absent) after keys removed. */
export interface TableDelta<T> {
  set: T[];
  del: string[];
}

/** Name-keyed records travel as pairs, so no name (`__proto__`) is ever an object key. */
export type PairsDelta<T> = TableDelta<[string, T]>;

/** Hands over a table's changes: values of changed keys still present, in order, and removed keys. */
export function takeTable<K extends string, V, T>(
  changes: KeyChanges<K>,
  get: (key: K) => V | undefined,
  view: (value: V, key: K) => T,
): TableDelta<T> | undefined {
  const { changed, removed } = changes;
  if (changed.size === 0 && removed.size === 0) return undefined;
  const set: T[] = [];
  for (const key of changed) {
    const value = get(key);
    if (value !== undefined) set.push(view(value, key));
  }
  const del = [...removed];
  changes.clear();
  return { set, del };
}

/** Applies one table's delta to a Map of it: removals first, then each entry in place or appended. */
export function applyTable<T>(map: Map<string, T>, delta: TableDelta<T> | undefined, keyOf: (entry: T) => string): void {
  if (!delta) return;
  for (const key of delta.del) map.delete(key);
  for (const entry of delta.set) map.set(keyOf(entry), entry);
}
