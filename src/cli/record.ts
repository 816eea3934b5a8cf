// `forewarn record`: poll a Scheduled Events endpoint (an Azure VM's IMDS, or the emulator) and write
// each change of the document with its time (src/protocol/recording.ts), for `forewarn replay`.
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Command } from 'commander';
import { ImdsError, type ScheduledEventsClient } from '../client/index.js';
import { sleep } from '../client/retry.js';
import { parseOffset } from '../emulator/scenarios/format.js';
import { RECORDING_FILE_LIMITS } from '../emulator/replay/recording-file.js';
import {
  Anonymiser,
  MAX_LINE_BYTES,
  RecordingError,
  RecordingParser,
  changeLine,
  fromWatchLines,
  headerLine,
  rawDocument,
  serializeRecording,
  anonymise,
  type RawDocument,
  type RecordedVm,
  type RecordingHeader,
} from '../protocol/recording.js';
import { LATEST_API_VERSION } from '../protocol/versions.js';
import { wallClock } from '../shared/clock.js';
import { LineFileError, readLines } from '../shared/line-file.js';
import { printable } from '../shared/printable.js';
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
import { DocumentRefusedError, documentFetch } from './document-fetch.js';
import { CliError, UsageError, type Io } from './errors.js';
import { withPrintableErrors } from './printable-errors.js';
import { untilStopped } from './stop-signal.js';

/** [imds] IMDS allows about 5 requests a second per VM; a recorder never asks faster. */
export const MIN_INTERVAL_SECONDS = 0.2;
/** [choice] About once a second, as the docs' own loop polls. */
export const DEFAULT_INTERVAL_SECONDS = 1;
/**
 * [choice] The largest document (or any answer's body) the recorder reads: a real one with a few
 * events is a few KiB, so 1 MiB is room for the largest fleet while an endpoint gone wrong costs
 * the recorder 1 MiB, not all of its memory.
 */
export const DEFAULT_MAX_DOCUMENT_BYTES = 1024 * 1024;
/** --max-document-bytes' range: an empty document fits in 1 KiB; above half a line's cap, the document written back might not fit its line. */
export const MAX_DOCUMENT_BYTES_RANGE = { min: 1024, max: MAX_LINE_BYTES / 2 };
/** [choice] The most of an endpoint's error text one stderr line shows. */
const MAX_PRINTED_ERROR = 1000;

export interface RawRecordFlags extends EndpointFlags {
  output?: string;
  interval?: string;
  duration?: string;
  events?: string;
  anonymise?: boolean;
  fromWatch?: string;
  maxDocumentBytes?: string;
  quiet?: boolean;
}

export interface RecordRequest extends EndpointRequest {
  output: string;
  intervalMs: number;
  /** Stop after this long (ms), or null. */
  durationMs: number | null;
  /** Stop once this many events have come and gone, or null. */
  events: number | null;
  anonymise: boolean;
  /** Convert this `forewarn watch --json` log instead of polling. */
  fromWatch: string | null;
  /** A body past this many bytes stops the recording, unread. */
  maxDocumentBytes: number;
  /** Print only problems and the summary, not where it records or each change. */
  quiet: boolean;
}

/** Checks the flags without any I/O; problems are UsageErrors (exit 2). */
export function parseRecordArgs(flags: RawRecordFlags, env: Io['env'] = {}): RecordRequest {
  if (flags.output === undefined || flags.output === '') throw new UsageError('--output FILE is required: where the recording goes');
  const interval = flags.interval === undefined ? DEFAULT_INTERVAL_SECONDS : Number(flags.interval);
  if (!Number.isFinite(interval) || interval < MIN_INTERVAL_SECONDS) {
    throw new UsageError(
      `--interval must be at least ${MIN_INTERVAL_SECONDS} seconds (IMDS allows about 5 requests a second), got "${flags.interval}"`,
    );
  }
  let durationMs: number | null = null;
  if (flags.duration !== undefined) {
    const seconds = parseOffset(flags.duration);
    if (seconds === null || seconds <= 0)
      throw new UsageError(`--duration must be a time such as 90, 30s, 15m or 2h, got "${flags.duration}"`);
    durationMs = seconds * 1000;
  }
  let events: number | null = null;
  if (flags.events !== undefined) {
    events = Number(flags.events);
    if (!Number.isInteger(events) || events < 1)
      throw new UsageError(`--events must be a whole number of 1 or more, got "${flags.events}"`);
  }
  let maxDocumentBytes = DEFAULT_MAX_DOCUMENT_BYTES;
  if (flags.maxDocumentBytes !== undefined) {
    const { min, max } = MAX_DOCUMENT_BYTES_RANGE;
    maxDocumentBytes = Number(flags.maxDocumentBytes);
    if (!/^\s*\d+\s*$/.test(flags.maxDocumentBytes) || maxDocumentBytes < min || maxDocumentBytes > max)
      throw new UsageError(`--max-document-bytes must be a whole number of bytes from ${min} to ${max}, got "${flags.maxDocumentBytes}"`);
  }
  return {
    ...parseEndpointFlags(flags, env),
    output: flags.output,
    intervalMs: interval * 1000,
    durationMs,
    events,
    anonymise: flags.anonymise ?? false,
    fromWatch: flags.fromWatch ?? null,
    maxDocumentBytes,
    quiet: flags.quiet ?? false,
  };
}

export interface RecordDeps {
  /** Ends the recording; the command wires it to SIGINT and SIGTERM. */
  signal: AbortSignal;
  client?: ScheduledEventsClient;
  now?: () => number;
}

export interface RecordSummary {
  changes: number;
  events: number;
}

/** Writes the recording line by line (a kill leaves every line before it whole), until a stop condition or the signal. */
export async function runRecord(request: RecordRequest, io: Io, deps: RecordDeps): Promise<RecordSummary> {
  if (request.fromWatch !== null) return convertWatch(request, io);
  // Not AbortSignal.timeout(): on Node 20 a GC can collect it before it fires (nodejs/node#55428).
  const stopper = new AbortController();
  const client =
    deps.client ??
    makeClient(
      request,
      documentFetch(request.maxDocumentBytes, (err) => stopper.abort(err)),
    );
  const now = deps.now ?? wallClock;
  const fd = openOutput(request.output);
  const anonymiser = request.anonymise ? new Anonymiser() : null;
  // Each line is checked as replay will read it before it is written: a recording always loads.
  const checker = new RecordingParser(request.output, { keep: false });
  let lines = 0;
  const write = (text: string) => {
    checker.line(text.slice(0, -1), ++lines);
    writeSync(fd, text);
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    const onStop = () => stopper.abort();
    deps.signal.addEventListener('abort', onStop, { once: true });
    if (deps.signal.aborted) onStop();
    timer = request.durationMs === null ? undefined : setTimeout(onStop, request.durationMs);
    const stop = stopper.signal;
    let header: RecordingHeader | null = null;
    let startedAt = 0;
    let lastAt = 0;
    let last: RawDocument | null = null;
    const seen = new Set<string>();
    const ended = new Set<string>();
    let changes = 0;
    let failures = 0;
    const say = (text: string) => {
      if (!request.quiet) io.stderr(`forewarn record: ${text}\n`);
    };
    say(`recording ${printable(request.endpoint)} to ${printable(request.output)}; Ctrl-C to stop`);
    while (!stop.aborted) {
      try {
        const doc = await client.getDocument({ signal: stop });
        const document = rawDocument(doc.incarnation, doc.events);
        if (header === null) {
          startedAt = now();
          const vm = await identity(client, stop);
          if (stop.aborted) break;
          header = {
            format: 'forewarn-recording',
            version: 1,
            apiVersion: client.apiVersion,
            startedAt: new Date(startedAt).toISOString(),
            source: 'poll',
            endpoint: request.endpoint,
            vm,
            anonymised: false,
          };
          write(headerLine(anonymiser ? anonymiser.header(header) : header));
        }
        failures = 0;
        if (last === null || JSON.stringify(last) !== JSON.stringify(document)) {
          // Never earlier than the line before, even if the wall clock steps back.
          lastAt = Math.max(lastAt, now() - startedAt);
          const change = { at: lastAt, document };
          const written = anonymiser ? anonymiser.change(change) : change;
          write(changeLine(written));
          changes++;
          // As written: with --anonymise, the screen shows no more than the file does.
          say(`change ${changes} at +${(lastAt / 1000).toFixed(1).replace(/\.0$/, '')}s: ${describeDocument(written.document)}`);
          const live = new Set(document.Events.map((e) => e.EventId.toUpperCase()));
          for (const id of live) seen.add(id);
          for (const id of seen) if (!live.has(id)) ended.add(id);
          last = document;
          if (request.events !== null && ended.size >= request.events) break;
        }
      } catch (err) {
        if (err instanceof RecordingError) throw new CliError(`${err.message}; not written, as forewarn replay could not load it`);
        if (stop.aborted) break;
        failures++;
        io.stderr(`forewarn record: ${printable(describeFailure(err, request.endpoint), MAX_PRINTED_ERROR)}; carrying on\n`);
        // A wrong path or api-version will not mend itself.
        if (err instanceof ImdsError && (err.status === 400 || err.status === 404) && header === null)
          throw new CliError(printable(clientFailure(err, request.endpoint, 'recording').message, MAX_PRINTED_ERROR));
      }
      try {
        await sleep(failures > 0 ? Math.min(30_000, request.intervalMs * 2 ** failures) : request.intervalMs, stop);
      } catch {
        break;
      }
    }
    io.stderr(
      `forewarn record: ${changes} change${changes === 1 ? '' : 's'} of ${seen.size} event${seen.size === 1 ? '' : 's'} written to ${printable(request.output)}\n`,
    );
    if (stop.reason instanceof DocumentRefusedError) throw new CliError(`recording ${request.endpoint}: ${stop.reason.message}`);
    return { changes, events: seen.size };
  } finally {
    clearTimeout(timer);
    closeSync(fd);
  }
}

/** One line on a document as written, escaped: what a person watching the recording wants to see. */
function describeDocument(document: RawDocument): string {
  const events = document.Events.map((e) => `${String(e.EventId)} ${String(e.EventType)} ${String(e.EventStatus)}`);
  const what = events.length === 0 ? 'no events' : `${events.length} event${events.length === 1 ? '' : 's'}: ${events.join(', ')}`;
  return printable(`incarnation ${document.DocumentIncarnation}, ${what}`, MAX_PRINTED_ERROR);
}

/** IMDS compute, when it answers: who was recorded. */
async function identity(client: ScheduledEventsClient, signal: AbortSignal): Promise<RecordedVm | null> {
  try {
    const compute = await client.getCompute({ signal });
    const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
    return { name: compute.name, vmId: text(compute.vmId), resourceId: text(compute.raw.resourceId), location: text(compute.raw.location) };
  } catch {
    return null;
  }
}

function convertWatch(request: RecordRequest, io: Io): RecordSummary {
  const file = request.fromWatch!;
  // The same reader as replay's: a regular file only, each line and the whole capped.
  const lines: string[] = [];
  try {
    readLines(file, RECORDING_FILE_LIMITS, (text) => void lines.push(text));
  } catch (err) {
    if (err instanceof LineFileError) throw new (err.kind === 'open' ? CliError : UsageError)(err.message);
    throw err;
  }
  let recording;
  try {
    recording = fromWatchLines(lines, file, request.apiVersion ?? LATEST_API_VERSION);
  } catch (err) {
    if (err instanceof RecordingError) throw new UsageError(err.message);
    throw err;
  }
  if (request.anonymise) recording = anonymise(recording);
  const text = serializeRecording(recording);
  const checker = new RecordingParser(request.output, { keep: false });
  try {
    text.split('\n').forEach((line, i) => checker.line(line, i + 1));
  } catch (err) {
    if (err instanceof RecordingError)
      throw new UsageError(`${file}: converted, ${err.message}; not written, as forewarn replay could not load it`);
    throw err;
  }
  const fd = openOutput(request.output);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  const events = new Set(recording.changes.flatMap((c) => c.document.Events.map((e) => e.EventId))).size;
  io.stderr(`forewarn record: converted ${recording.changes.length} changes of ${events} events to ${printable(request.output)}\n`);
  return { changes: recording.changes.length, events };
}

/** A new file only: a recording is never overwritten by accident. */
function openOutput(path: string): number {
  try {
    return openSync(path, 'wx', 0o644);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new UsageError(`--output ${path} already exists; name a new file (a recording is never overwritten)`);
    throw new CliError(`cannot create ${path}: ${code ?? (err as Error).message}`);
  }
}

export function registerRecordCommand(program: Command, io: Io): void {
  program
    .command('record')
    .description('poll a Scheduled Events endpoint and write each change of the document with its time, for `forewarn replay`')
    .option('--endpoint <URL>', ENDPOINT_HELP)
    .option('--api-version <V>', API_VERSION_HELP)
    .option('--output <FILE>', 'the recording to write (JSON Lines; a new file)')
    .option('--interval <SECONDS>', `between reads (default ${DEFAULT_INTERVAL_SECONDS}, at least ${MIN_INTERVAL_SECONDS})`)
    .option('--duration <TIME>', 'stop after this long: 90, 30s, 15m, 2h')
    .option('--events <N>', 'stop once N events have come and gone')
    .option('--anonymise', 'replace VM names, EventIds and descriptions, consistently')
    .option('--from-watch <FILE>', 'convert a `forewarn watch --json` log instead of polling')
    .option('--quiet', 'print only problems and the summary, not where it records and each change')
    .option(
      '--max-document-bytes <N>',
      `stop at an answer larger than this, unread (default ${DEFAULT_MAX_DOCUMENT_BYTES}, at most ${MAX_DOCUMENT_BYTES_RANGE.max})`,
    )
    .action(async (flags: RawRecordFlags) => {
      await withPrintableErrors(async () => {
        const request = parseRecordArgs(flags, io.env);
        await untilStopped((signal) => runRecord(request, io, { signal }));
      });
    });
}
