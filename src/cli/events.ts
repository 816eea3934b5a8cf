// `forewarn events`: the current Scheduled Events document, as a table or as IMDS sent it.
import type { Command } from 'commander';
import type { EventsDocument, ScheduledEvent, ScheduledEventsClient } from '../client/index.js';
import { wallClock } from '../shared/clock.js';
import { API_VERSION_HELP, ENDPOINT_HELP, parseEndpointFlags, type EndpointFlags, type EndpointRequest } from './endpoint.js';
import type { Io } from './errors.js';
import { TIMEOUT_HELP, parseTimeoutFlag, waitForImds, watchedClient } from './waiting.js';

export interface RawEventsFlags extends EndpointFlags {
  json?: boolean;
  timeout?: string;
}

export interface EventsRequest extends EndpointRequest {
  json: boolean;
  /** How long to wait for IMDS in all, retries included. */
  timeoutMs: number;
}

export interface EventsDeps {
  /** Epoch ms; the time left until NotBefore is measured from it. */
  now?: () => number;
  client?: ScheduledEventsClient;
  /** How long an unanswered request waits before we say so on stderr; WAITING_NOTICE_AFTER_MS by default. */
  noticeAfterMs?: number;
}

/** Checks the flags without any I/O; problems are UsageErrors (exit 2). */
export function parseEventsArgs(flags: RawEventsFlags, env: Io['env'] = {}): EventsRequest {
  return { ...parseEndpointFlags(flags, env), json: flags.json ?? false, timeoutMs: parseTimeoutFlag(flags.timeout) };
}

export async function runEvents(request: EventsRequest, io: Io, deps: EventsDeps = {}): Promise<EventsDocument> {
  const waiting = {
    endpoint: request.endpoint,
    doing: 'reading the events',
    timeoutMs: request.timeoutMs,
    io,
    noticeAfterMs: deps.noticeAfterMs,
  };
  const watched = deps.client ? { client: deps.client, stop: () => {} } : watchedClient(request, waiting);
  let doc: EventsDocument;
  try {
    doc = await waitForImds(waiting, (signal) => watched.client.getDocument({ signal }));
  } finally {
    watched.stop();
  }
  io.stdout(request.json ? `${JSON.stringify(rawDocument(doc))}\n` : renderEvents(doc, (deps.now ?? wallClock)()));
  return doc;
}

/** The document as IMDS sent it: each event's own fields, untouched, under its incarnation. */
export function rawDocument(doc: EventsDocument): { DocumentIncarnation: number; Events: Record<string, unknown>[] } {
  return { DocumentIncarnation: doc.incarnation, Events: doc.events.map((e) => e.raw) };
}

const COLUMNS = ['EventId', 'Type', 'Status', 'Resources', 'NotBefore', 'TimeLeft', 'Source', 'Duration'] as const;

/** The incarnation, then one row per event (or "no events"). */
export function renderEvents(doc: EventsDocument, now: number): string {
  const head = `Incarnation ${doc.incarnation}\n`;
  if (doc.events.length === 0) return `${head}no events\n`;
  const rows = doc.events.map((e) => [
    e.id,
    e.type,
    e.status,
    e.resources.length > 0 ? e.resources.join(',') : '-',
    e.notBefore ? formatShortIso(e.notBefore) : '-',
    formatTimeLeft(e, now),
    e.source ?? '-',
    formatDuration(e.durationInSeconds),
  ]);
  return head + table([[...COLUMNS], ...rows]);
}

/** `in 14m 32s` until NotBefore, `now` once it has passed, `-` once Started or with no NotBefore. */
export function formatTimeLeft(event: Pick<ScheduledEvent, 'status' | 'notBefore'>, now: number): string {
  if (event.status === 'Started' || event.notBefore === null) return '-';
  const ms = event.notBefore.getTime() - now;
  // Rounded up, so "now" appears only once NotBefore has really passed.
  return ms <= 0 ? 'now' : `in ${formatSpan(Math.ceil(ms / 1000))}`;
}

/** Two units at most: `45s`, `14m 32s`, `2h 05m`, `6d 23h`. */
export function formatSpan(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3_600);
  const m = Math.floor((s % 3_600) / 60);
  const sec = s % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m ${String(sec).padStart(2, '0')}s`;
  return `${sec}s`;
}

/** DurationInSeconds: -1 is "unknown or not applicable" (SPEC §1). */
export function formatDuration(seconds: number): string {
  return seconds < 0 ? '-' : `${seconds}s`;
}

/** `2026-12-01T10:00:00Z`: NotBefore has whole seconds, so the milliseconds are noise. */
export function formatShortIso(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map(
      (r) =>
        `${r
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join('  ')
          .trimEnd()}\n`,
    )
    .join('');
}

export function registerEventsCommand(program: Command, io: Io): void {
  program
    .command('events')
    .description('print the current Scheduled Events document')
    .option('--endpoint <URL>', ENDPOINT_HELP)
    .option('--api-version <V>', API_VERSION_HELP)
    .option('--json', 'print the document exactly as IMDS sent it')
    .option('--timeout <SECONDS>', TIMEOUT_HELP)
    .action(async (flags: RawEventsFlags) => {
      await runEvents(parseEventsArgs(flags, io.env), io);
    });
}
