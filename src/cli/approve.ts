// `forewarn approve EVENT_ID…`: let events start now, all in one POST as IMDS allows.
import type { Command } from 'commander';
import { eventKey, type ScheduledEventsClient } from '../client/index.js';
import { API_VERSION_HELP, ENDPOINT_HELP, parseEndpointFlags, type EndpointFlags, type EndpointRequest } from './endpoint.js';
import { UsageError, type Io } from './errors.js';
import { TIMEOUT_HELP, parseTimeoutFlag, waitForImds, watchedClient } from './waiting.js';

export interface RawApproveFlags extends EndpointFlags {
  timeout?: string;
}

export interface ApproveRequest extends EndpointRequest {
  ids: string[];
  /** How long to wait for IMDS in all, retries included. */
  timeoutMs: number;
}

/** Checks the arguments without any I/O; problems are UsageErrors (exit 2). */
export function parseApproveArgs(ids: readonly string[], flags: RawApproveFlags, env: Io['env'] = {}): ApproveRequest {
  // `approve A B` and `approve A,B` both name two events, as `trigger --vm` does.
  const list = ids
    .flatMap((id) => id.split(','))
    .map((id) => id.trim())
    .filter((id) => id !== '');
  if (list.length === 0) throw new UsageError('name at least one EVENT_ID');
  return { ...parseEndpointFlags(flags, env), ids: list, timeoutMs: parseTimeoutFlag(flags.timeout) };
}

export async function runApprove(request: ApproveRequest, io: Io, client?: ScheduledEventsClient, noticeAfterMs?: number): Promise<void> {
  const waiting = {
    endpoint: request.endpoint,
    doing: `approving ${request.ids.join(' ')}`,
    timeoutMs: request.timeoutMs,
    io,
    noticeAfterMs,
  };
  const watched = client ? { client, stop: () => {} } : watchedClient(request, waiting);
  let started: Set<string>;
  let send: string[];
  try {
    // IMDS takes an approval of a Started event without a word: read first, so the user hears it.
    const doc = await waitForImds(waiting, (signal) => watched.client.getDocument({ signal }));
    started = new Set(doc.events.filter((e) => e.status === 'Started').map((e) => eventKey(e.id)));
    send = request.ids.filter((id) => !started.has(eventKey(id)));
    if (send.length > 0) await waitForImds(waiting, (signal) => watched.client.approve(send, { signal }));
  } finally {
    watched.stop();
  }
  for (const id of request.ids) if (started.has(eventKey(id))) io.stdout(`${id} had already started: nothing to approve\n`);
  if (send.length > 0) io.stdout(`approved ${send.join(' ')}\n`);
}

export function registerApproveCommand(program: Command, io: Io): void {
  program
    .command('approve')
    .description('approve Scheduled events so they start now (one POST for all)')
    .argument('<EVENT_ID...>', 'EventIds from `forewarn events`')
    .option('--endpoint <URL>', ENDPOINT_HELP)
    .option('--api-version <V>', API_VERSION_HELP)
    .option('--timeout <SECONDS>', TIMEOUT_HELP)
    .action(async (ids: string[], flags: RawApproveFlags) => {
      await runApprove(parseApproveArgs(ids, flags, io.env), io);
    });
}
