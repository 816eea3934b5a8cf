// Reading a client watch in tests: the next item or a clear failure, never a hung test.
import assert from 'node:assert/strict';
import type { EventChange, WatchItem } from '../../src/client/index.js';

export async function next(items: AsyncGenerator<WatchItem>): Promise<WatchItem> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no watch item within 5 s')), 5000);
  });
  const result = await Promise.race([items.next(), timeout]).finally(() => clearTimeout(timer));
  assert.equal(result.done, false);
  return result.value as WatchItem;
}

/** The next item, which must be changes stamped with its document's incarnation. */
export async function nextChanges(items: AsyncGenerator<WatchItem>): Promise<EventChange[]> {
  const item = await next(items);
  if (item.type !== 'changes') throw new Error(`expected changes, got ${item.error.message}`);
  assert.equal(item.incarnation, item.document.incarnation);
  for (const c of item.changes) assert.equal(c.incarnation, item.incarnation);
  return item.changes;
}

export const kinds = (changes: readonly EventChange[]): string[] => changes.map((c) => `${c.kind}:${c.event.id}`);
