// The agent's IMDS client, shared by the monitor (reads) and approvals (POSTs), and the one place that
// decides who counts a failed request: the fetch of a client the agent builds, else where it fails.
import { ImdsError, ImdsProtocolError, ScheduledEventsClient } from '../client/index.js';
import type { AgentMetrics } from './metrics.js';
import type { ApprovalSender } from './runner-context.js';
import type { AgentConfig } from './types.js';

export interface ImdsAccess {
  client: ScheduledEventsClient;
  /** Counts a request that failed, unless the client's fetch already has. */
  countFailure: (err: unknown) => void;
}

/**
 * The client handed in (its requests counted where they fail), or one built from the config whose
 * fetch counts every failed request, retries included. A protocol error (an answer that could not
 * be read) passes the fetch as a success, so it is counted where it fails either way.
 */
export function imdsAccess(options: {
  client: ScheduledEventsClient | undefined;
  config: AgentConfig;
  metrics: AgentMetrics;
  now: () => number;
  stopped: AbortSignal;
}): ImdsAccess {
  const { config, metrics, stopped } = options;
  const count = (err: unknown): void => metrics.imdsErrors.inc({ status: errorStatus(err) });
  if (options.client !== undefined) return { client: options.client, countFailure: count };
  const countingFetch: typeof fetch = async (input, init) => {
    try {
      const response = await fetch(input, init);
      if (response.status >= 400) metrics.imdsErrors.inc({ status: String(response.status) });
      return response;
    } catch (err) {
      if (!stopped.aborted) metrics.imdsErrors.inc({ status: 'network' });
      throw err;
    }
  };
  const client = new ScheduledEventsClient({
    ...(config.endpoint !== null ? { endpoint: config.endpoint } : {}),
    apiVersion: config.apiVersion,
    fetch: countingFetch,
    now: options.now,
  });
  return {
    client,
    countFailure: (err) => {
      if (err instanceof ImdsProtocolError) count(err);
    },
  };
}

/** Approvals POSTed to IMDS; a 400 is IMDS refusing the EventId, which no retry changes. */
export function imdsApprovals({ client, countFailure }: ImdsAccess): ApprovalSender {
  return {
    async approve(eventId, signal) {
      try {
        await client.approve(eventId, { signal });
      } catch (err) {
        if (!signal.aborted) countFailure(err);
        throw err;
      }
    },
    refused: (err) => err instanceof ImdsError && err.status === 400,
  };
}

function errorStatus(err: unknown): string {
  if (err instanceof ImdsError) return String(err.status);
  if (err instanceof ImdsProtocolError) return 'invalid';
  return 'network';
}
