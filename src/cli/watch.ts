// `forewarn watch`: one line per change as it happens, until SIGINT or SIGTERM.
import type { Command } from 'commander';
import type { EventChange, Health, ScheduledEventsClient } from '../client/index.js';
import { wallClock } from '../shared/clock.js';
import { formatIso } from '../protocol/time.js';
import {
  API_VERSION_HELP,
  ENDPOINT_HELP,
  clientFailure,
  describeFailure,
  makeClient,
  parseEndpointFlags,
  type EndpointFlags,
  type EndpointRequest,
} from './endpoint.js';
import { formatShortIso } from './events.js';
import type { Io } from './errors.js';
import { untilStopped } from './stop-signal.js';

export interface RawWatchFlags extends EndpointFlags {
  json?: boolean;
}

export interface WatchRequest extends EndpointRequest {
  json: boolean;
}

export interface WatchDeps {
  /** Ends the watch; the command wires it to SIGINT and SIGTERM. */
  signal: AbortSignal;
  now?: () => number;
  client?: ScheduledEventsClient;
  intervalMs?: number;
}

/** Checks the flags without any I/O; problems are UsageErrors (exit 2). */
export function parseWatchArgs(flags: RawWatchFlags, env: Io['env'] = {}): WatchRequest {
  return { ...parseEndpointFlags(flags, env), json: flags.json ?? false };
}

/** Prints until the signal fires; read errors are printed and the watch carries on. */
export async function runWatch(request: WatchRequest, io: Io, deps: WatchDeps): Promise<void> {
  const client = deps.client ?? makeClient(request);
  const now = deps.now ?? wallClock;
  const { signal } = deps;
  if (signal.aborted) return;
  try {
    const items = client.watch({ signal, emitErrors: true, ...(deps.intervalMs !== undefined ? { intervalMs: deps.intervalMs } : {}) });
    for await (const item of items) {
      const time = formatIso(now());
      if (item.type === 'changes') {
        for (const change of item.changes) io.stdout(request.json ? changeJson(time, change) : changeLine(time, change));
      } else {
        const message = describeFailure(item.error, request.endpoint);
        if (request.json) io.stdout(`${JSON.stringify({ time, error: message, msSinceSuccess: item.health.msSinceSuccess })}\n`);
        else io.stderr(`${time} error: ${message} (${lastGood(item.health)})\n`);
      }
    }
  } catch (err) {
    // Stopping mid-request surfaces as an abort; that is the clean way out, not a failure.
    if (signal.aborted) return;
    throw clientFailure(err, request.endpoint, 'watching');
  }
}

/** `<time> <kind> <EventId> <Type> <Status> <Resources> NotBefore <…> (incarnation N)` */
export function changeLine(time: string, change: EventChange): string {
  const e = change.event;
  const resources = e.resources.length > 0 ? e.resources.join(',') : '-';
  const notBefore = e.notBefore ? formatShortIso(e.notBefore) : '-';
  return `${time} ${change.kind} ${e.id} ${e.type} ${e.status} ${resources} NotBefore ${notBefore} (incarnation ${change.incarnation})\n`;
}

/** One NDJSON line; the event is as IMDS sent it (for completed or cancelled, as last seen). */
export function changeJson(time: string, change: EventChange): string {
  return `${JSON.stringify({ time, kind: change.kind, incarnation: change.incarnation, event: change.event.raw })}\n`;
}

function lastGood(health: Health): string {
  if (health.msSinceSuccess === null) return 'no good read yet';
  return `last good read ${Math.round(health.msSinceSuccess / 1000)}s ago`;
}

export function registerWatchCommand(program: Command, io: Io): void {
  program
    .command('watch')
    .description('print each change of the Scheduled Events document as it happens, until Ctrl-C')
    .option('--endpoint <URL>', ENDPOINT_HELP)
    .option('--api-version <V>', API_VERSION_HELP)
    .option('--json', 'NDJSON: {time, kind, incarnation, event} per change, {time, error, msSinceSuccess} per failed read')
    .action(async (flags: RawWatchFlags) => {
      const request = parseWatchArgs(flags, io.env);
      await untilStopped((signal) => runWatch(request, io, { signal }));
    });
}
