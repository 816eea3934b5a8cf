// forewarn/client: a dependency-free, typed client for Azure Scheduled Events.
export type {
  ChangeKind,
  ClientOptions,
  ComputeInfo,
  EventChange,
  EventsDocument,
  Health,
  RetryPolicy,
  ScheduledEvent,
  WatchItem,
  WatchOptions,
} from './types.js';
export {
  DEFAULT_COMPUTE_API_VERSION,
  DEFAULT_ENDPOINT,
  DEFAULT_FIRST_CALL_TIMEOUT_MS,
  DEFAULT_INTERVAL_MS,
  DEFAULT_JITTER,
  DEFAULT_TIMEOUT_MS,
  ScheduledEventsClient,
} from './client.js';
export { ImdsError, ImdsProtocolError, ImdsUnavailableError } from './errors.js';
export { parseCompute, parseEventsDocument, parseScheduledEvent } from './parse.js';
export { EventTracker, diffDocuments, eventKey, sameContent, sameEventId } from './diff.js';
export { affects, isLeader, leaderOf } from './resources.js';
export { DEFAULT_RETRY, backoffMs, retryAfterMs } from './retry.js';
