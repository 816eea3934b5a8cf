// The query of a paged list (GET /v1/history, GET /v1/operations): limit, before and status.
import { OPERATION_STATUSES, type OperationStatus } from '../engine/engine.js';
import { invalid } from '../engine/errors.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, parseLimit, type PageRequest } from '../engine/paging.js';

/** The parameters as the OpenAPI document describes them; `status` only where the route takes it. */
export const PAGE_PARAMETERS = [
  {
    name: 'limit',
    in: 'query',
    required: false,
    description: `Items on the page, newest first: 1 to ${MAX_PAGE_LIMIT}; ${DEFAULT_PAGE_LIMIT} when absent`,
    schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT },
  },
  {
    name: 'before',
    in: 'query',
    required: false,
    description: 'The `next` of the previous page: only items older than that page. Pages stay the same while newer items arrive',
    schema: { type: 'string' },
  },
] as const;

export const STATUS_PARAMETER = {
  name: 'status',
  in: 'query',
  required: false,
  description: 'Only operations in this state',
  schema: { type: 'string', enum: [...OPERATION_STATUSES] },
} as const;

function single(query: unknown, name: string): string | undefined {
  const value = typeof query === 'object' && query !== null ? (query as Record<string, unknown>)[name] : undefined;
  if (value === undefined) return undefined;
  // A repeated parameter arrives as an array: which one was meant is anybody's guess.
  if (typeof value !== 'string') throw invalid(`${name}: give it once, got ${JSON.stringify(value)}`, name);
  return value;
}

export function pageQuery(query: unknown): PageRequest {
  const limit = single(query, 'limit');
  return { limit: limit === undefined ? undefined : parseLimit(limit), before: single(query, 'before') };
}

/** The engine checks the value and names the parameter if it is not a status. */
export function statusQuery(query: unknown): OperationStatus | undefined {
  return single(query, 'status') as OperationStatus | undefined;
}
