// Pages of what the engine keeps (history, operations): newest first, by a sequence number that
// only rises, so a page asked for with a cursor stays the same while newer items arrive.
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../../protocol/control.js';
import { invalid } from './errors.js';

// The page limits are the control API's contract (src/protocol/control.ts).
export { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT };

export interface PageRequest {
  /** Items on the page: 1 to MAX_PAGE_LIMIT; DEFAULT_PAGE_LIMIT when absent. */
  limit?: number | undefined;
  /** A `next` of an earlier page: only items older than the last one on that page. */
  before?: string | undefined;
}

export interface Page<T> {
  items: T[];
  /** The cursor for the page after this one; null when this page reaches the oldest item. */
  next: string | null;
}

// Cursors are the decimal sequence number of the last item shown; opaque to callers.
const CURSOR = /^(0|[1-9]\d{0,14})$/;

const inRange = (limit: number) => Number.isInteger(limit) && limit >= 1 && limit <= MAX_PAGE_LIMIT;
const limitProblem = (got: string) => invalid(`limit: must be an integer from 1 to ${MAX_PAGE_LIMIT}, got ${got}`, 'limit');

function checkLimit(limit: number): number {
  if (!inRange(limit)) throw limitProblem(String(limit));
  return limit;
}

/** A limit as a query string gives it; refused with the text as given. */
export function parseLimit(text: string): number {
  const limit = /^\d{1,7}$/.test(text) ? Number(text) : NaN;
  if (!inRange(limit)) throw limitProblem(JSON.stringify(text));
  return limit;
}

function parseCursor(before: string): number {
  if (!CURSOR.test(before))
    throw invalid(`before: ${JSON.stringify(before)} is not a cursor; pass the "next" of an earlier page`, 'before');
  return Number(before);
}

/**
 * One page of `ascending` (sorted by rising `seq`), newest first: the items older than the
 * cursor that `keep` accepts, at most `limit` of them.
 */
export function pageNewestFirst<T extends { seq: number }, S extends T = T>(
  ascending: readonly T[],
  request: PageRequest,
  keep: (item: T) => item is S = (_item: T): _item is S => true,
): Page<S> {
  const limit = checkLimit(request.limit ?? DEFAULT_PAGE_LIMIT);
  const before = request.before === undefined ? Infinity : parseCursor(request.before);
  // The first index at or past the cursor: everything below it is older.
  let lo = 0;
  let hi = ascending.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ascending[mid]!.seq < before) lo = mid + 1;
    else hi = mid;
  }
  const items: S[] = [];
  for (let i = lo - 1; i >= 0; i--) {
    const item = ascending[i]!;
    if (!keep(item)) continue;
    if (items.length === limit) return { items, next: String(items[items.length - 1]!.seq) };
    items.push(item);
  }
  return { items, next: null };
}
