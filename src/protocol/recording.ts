// A recording of a Scheduled Events endpoint: what `forewarn record` writes and `forewarn replay`
// serves. JSON Lines: a header, then one line per change of the document, with its time.
//   {"format":"forewarn-recording","version":1,"apiVersion":…,"startedAt":…,"source":…,"endpoint":…,"vm":…,"anonymised":…}
//   {"at":0,"document":{"DocumentIncarnation":1,"Events":[]}}
//   {"at":1840,"document":{"DocumentIncarnation":2,"Events":[…]}}
// `at` is milliseconds after startedAt. Documents are kept as IMDS sent them (their api-version's
// shape), so a replay serves the very bytes' content. Dependency-free, as everything in protocol/.

export const RECORDING_FORMAT = 'forewarn-recording';
export const RECORDING_VERSION = 1;

export interface RecordedVm {
  name: string;
  vmId: string | null;
  resourceId: string | null;
  location: string | null;
}

export interface RecordingHeader {
  format: typeof RECORDING_FORMAT;
  version: typeof RECORDING_VERSION;
  apiVersion: string;
  /** ISO 8601: when the first document was read. */
  startedAt: string;
  /** `poll`: read from an endpoint; `watch-json`: converted from `forewarn watch --json` output. */
  source: 'poll' | 'watch-json';
  /** Null when anonymised or converted. */
  endpoint: string | null;
  /** From /metadata/instance/compute when it answered; null otherwise. */
  vm: RecordedVm | null;
  anonymised: boolean;
}

/** A Scheduled Events document as IMDS sends it. */
export interface RawDocument {
  DocumentIncarnation: number;
  Events: RawEvent[];
}

export type RawEvent = Record<string, unknown> & { EventId: string };

export interface RecordedChange {
  /** Milliseconds after the header's startedAt. */
  at: number;
  document: RawDocument;
}

export interface Recording {
  header: RecordingHeader;
  changes: RecordedChange[];
}

/** A recording that cannot be read: `line` (1-based) names where. */
export class RecordingError extends Error {
  override name = 'RecordingError';
  constructor(
    readonly file: string,
    readonly line: number,
    problem: string,
  ) {
    super(`${file}:${line}: ${problem}`);
  }
}

export function headerLine(header: RecordingHeader): string {
  return `${JSON.stringify(header)}\n`;
}

export function changeLine(change: RecordedChange): string {
  return `${JSON.stringify({ at: change.at, document: change.document })}\n`;
}

export function serializeRecording(recording: Recording): string {
  return headerLine(recording.header) + recording.changes.map(changeLine).join('');
}

/** Reads a recording; every problem names its line. A last line cut short (a recorder killed mid-write) is dropped. */
export function parseRecording(text: string, file: string): Recording {
  const lines = text.split('\n');
  const complete = text.endsWith('\n') ? lines.slice(0, -1) : lines;
  if (complete.length === 0 || complete[0]!.trim() === '') throw new RecordingError(file, 1, 'empty; expected a forewarn-recording header');
  const header = parseHeader(json(complete[0]!, file, 1), file);
  const changes: RecordedChange[] = [];
  complete.slice(1).forEach((line, i) => {
    const n = i + 2;
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      // Only the very last line may be torn: the recorder writes each line whole, so a kill leaves at most one.
      if (n === complete.length && !text.endsWith('\n')) return;
      throw new RecordingError(file, n, `not valid JSON: ${(err as Error).message}`);
    }
    const change = parseChange(value, file, n);
    const previous = changes.at(-1);
    if (previous !== undefined && change.at < previous.at) {
      throw new RecordingError(file, n, `at ${change.at} is earlier than ${previous.at} on the line before; changes are in time order`);
    }
    changes.push(change);
  });
  return { header, changes };
}

function json(line: string, file: string, n: number): unknown {
  try {
    return JSON.parse(line);
  } catch (err) {
    throw new RecordingError(file, n, `not valid JSON: ${(err as Error).message}`);
  }
}

function parseHeader(value: unknown, file: string): RecordingHeader {
  const bad = (problem: string) => new RecordingError(file, 1, problem);
  if (!isRecord(value) || value.format !== RECORDING_FORMAT)
    throw bad(`not a forewarn recording: the first line must have "format": "${RECORDING_FORMAT}"`);
  if (value.version !== RECORDING_VERSION)
    throw bad(`version ${JSON.stringify(value.version)} is not one this Forewarn reads (${RECORDING_VERSION})`);
  if (typeof value.apiVersion !== 'string') throw bad('apiVersion: expected a string');
  if (typeof value.startedAt !== 'string' || Number.isNaN(Date.parse(value.startedAt))) throw bad('startedAt: expected an ISO 8601 time');
  if (value.source !== 'poll' && value.source !== 'watch-json') throw bad('source: expected "poll" or "watch-json"');
  const vm = value.vm;
  if (vm !== null && vm !== undefined && (!isRecord(vm) || typeof vm.name !== 'string'))
    throw bad('vm: expected null or an object with a name');
  return {
    format: RECORDING_FORMAT,
    version: RECORDING_VERSION,
    apiVersion: value.apiVersion,
    startedAt: value.startedAt,
    source: value.source,
    endpoint: typeof value.endpoint === 'string' ? value.endpoint : null,
    vm: isRecord(vm)
      ? {
          name: vm.name as string,
          vmId: typeof vm.vmId === 'string' ? vm.vmId : null,
          resourceId: typeof vm.resourceId === 'string' ? vm.resourceId : null,
          location: typeof vm.location === 'string' ? vm.location : null,
        }
      : null,
    anonymised: value.anonymised === true,
  };
}

function parseChange(value: unknown, file: string, n: number): RecordedChange {
  const bad = (problem: string) => new RecordingError(file, n, problem);
  if (!isRecord(value)) throw bad('expected an object with at and document');
  if (typeof value.at !== 'number' || !Number.isFinite(value.at) || value.at < 0) throw bad('at: expected milliseconds (0 or more)');
  const doc = value.document;
  if (!isRecord(doc) || typeof doc.DocumentIncarnation !== 'number' || !Array.isArray(doc.Events)) {
    throw bad('document: expected {"DocumentIncarnation": N, "Events": [...]}');
  }
  doc.Events.forEach((e, i) => {
    if (!isRecord(e) || typeof e.EventId !== 'string') throw bad(`document.Events[${i}]: expected an event with an EventId`);
  });
  return { at: value.at, document: doc as unknown as RawDocument };
}

/** A document as it was read, from the client's parse (each event keeps IMDS's own object). */
export function rawDocument(incarnation: number, events: readonly { raw: Record<string, unknown> }[]): RawDocument {
  return { DocumentIncarnation: incarnation, Events: events.map((e) => structuredClone(e.raw) as RawEvent) };
}

/**
 * Renames what identifies the VMs and events, the same way throughout: VM names become vm-1, vm-2…
 * (in order of appearance), EventIds become fresh GUIDs, descriptions a neutral one per event type.
 * Times, types, statuses and durations stay: they are what a replay is for. One instance per
 * recording, so a recorder can anonymise line by line.
 */
export class Anonymiser {
  readonly #names = new Map<string, string>();
  readonly #ids = new Map<string, string>();

  header(header: RecordingHeader): RecordingHeader {
    const vm = header.vm === null ? null : { name: this.#vmName(header.vm.name), vmId: null, resourceId: null, location: null };
    return { ...header, endpoint: null, vm, anonymised: true };
  }

  change(change: RecordedChange): RecordedChange {
    return {
      at: change.at,
      document: {
        DocumentIncarnation: change.document.DocumentIncarnation,
        Events: change.document.Events.map((e) => {
          const out: RawEvent = { ...e, EventId: this.#eventId(e.EventId) };
          if (Array.isArray(e.Resources)) out.Resources = e.Resources.map((r) => (typeof r === 'string' ? this.#vmName(r) : r));
          if (typeof e.Description === 'string') out.Description = `${String(e.EventType ?? 'Maintenance')} (description removed)`;
          return out;
        }),
      },
    };
  }

  #vmName(name: string): string {
    // 2017-03-01 writes IaaS VM names with a leading `_`: one alias for both forms.
    const key = name.replace(/^_/, '').toLowerCase();
    let alias = this.#names.get(key);
    if (alias === undefined) this.#names.set(key, (alias = `vm-${this.#names.size + 1}`));
    return name.startsWith('_') ? `_${alias}` : alias;
  }

  #eventId(id: string): string {
    const key = id.toUpperCase();
    let alias = this.#ids.get(key);
    if (alias === undefined) this.#ids.set(key, (alias = `00000000-0000-4000-8000-${String(this.#ids.size + 1).padStart(12, '0')}`));
    return alias;
  }
}

export function anonymise(recording: Recording): Recording {
  const a = new Anonymiser();
  return { header: a.header(recording.header), changes: recording.changes.map((c) => a.change(c)) };
}

/** One line of `forewarn watch --json`. */
interface WatchLine {
  time: string;
  kind: string;
  incarnation: number;
  event: RawEvent;
}

/**
 * Rebuilds the documents a `forewarn watch --json` log saw: each change applied to the events
 * live before it; changes of one incarnation make one document. Error lines are skipped.
 */
export function fromWatchJson(text: string, file: string, apiVersion: string): Recording {
  const lines: { n: number; line: WatchLine }[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    const value = json(raw, file, i + 1);
    if (isRecord(value) && 'error' in value) return;
    if (
      !isRecord(value) ||
      typeof value.time !== 'string' ||
      Number.isNaN(Date.parse(value.time)) ||
      typeof value.kind !== 'string' ||
      typeof value.incarnation !== 'number' ||
      !isRecord(value.event) ||
      typeof value.event.EventId !== 'string'
    ) {
      throw new RecordingError(file, i + 1, 'not a `forewarn watch --json` line: expected {time, kind, incarnation, event}');
    }
    lines.push({ n: i + 1, line: value as unknown as WatchLine });
  });
  if (lines.length === 0)
    throw new RecordingError(file, 1, 'no changes to convert: the file holds no `forewarn watch --json` change lines');
  const start = Date.parse(lines[0]!.line.time);
  const live = new Map<string, RawEvent>();
  const changes: RecordedChange[] = [];
  for (const { n, line } of lines) {
    const key = line.event.EventId.toUpperCase();
    if (line.kind === 'completed' || line.kind === 'cancelled') live.delete(key);
    else if (['scheduled', 'started', 'updated'].includes(line.kind)) live.set(key, structuredClone(line.event));
    else throw new RecordingError(file, n, `kind "${line.kind}" is not one watch prints`);
    const document: RawDocument = { DocumentIncarnation: line.incarnation, Events: [...live.values()].map((e) => structuredClone(e)) };
    const at = Math.max(0, Date.parse(line.time) - start);
    const last = changes.at(-1);
    if (last !== undefined && last.document.DocumentIncarnation === line.incarnation) last.document = document;
    else changes.push({ at, document });
  }
  return {
    header: {
      format: RECORDING_FORMAT,
      version: RECORDING_VERSION,
      apiVersion,
      startedAt: new Date(start).toISOString(),
      source: 'watch-json',
      endpoint: null,
      vm: null,
      anonymised: false,
    },
    changes,
  };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
