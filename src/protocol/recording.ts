// A recording of a Scheduled Events endpoint: what `forewarn record` writes and `forewarn replay`
// serves. JSON Lines: a header, then one line per change of the document, with its time.
//   {"format":"forewarn-recording","version":1,"apiVersion":…,"startedAt":…,"source":…,"endpoint":…,"vm":…,"anonymised":…}
//   {"at":0,"document":{"DocumentIncarnation":1,"Events":[]}}
//   {"at":1840,"document":{"DocumentIncarnation":2,"Events":[…]}}
// `at` is milliseconds after startedAt. Documents are kept as IMDS sent them (their api-version's
// shape), so a replay serves the very bytes' content. A line is checked before it is parsed (its
// length, its nesting) and its times after, so a replay never holds what it could not serve.
// Dependency-free, as everything in protocol/.

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

/**
 * [choice] The longest line a recording may hold: four times `forewarn record`'s default document cap
 * (1 MiB), room for a document written back with its `at` and for a raised cap, while a replay never
 * holds more than this of an unchecked line.
 */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;
/** [choice] The most a recording file may hold: far above any real one (60,000 changes are 19 MB), and within a test machine's memory. */
export const MAX_RECORDING_BYTES = 256 * 1024 * 1024;
/**
 * [choice] How deep a line's JSON may nest. A change nests 5 deep (line, document, Events, event,
 * Resources); the rest is room for fields IMDS may add. Deeper would overflow the recursive
 * JSON.stringify and structuredClone a replay uses.
 */
export const MAX_NESTING_DEPTH = 64;
/**
 * [choice] The times a recording may hold, start, changes and NotBefore alike: 1970 to 9999, the
 * years RFC 1123 (IMDS's NotBefore) writes with four digits and the replay's clock can show.
 */
export const EARLIEST_TIME_MS = 0;
export const LATEST_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Whether `text`'s JSON nests deeper than `max`, read without parsing (brackets inside strings do not count), so a deep line never reaches a parser. */
export function nestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Whether `text` takes more than `max` bytes as UTF-8; counts only when the answer is not plain from its length. */
function longerThan(text: string, max: number): boolean {
  if (text.length > max) return true;
  if (text.length * 3 <= max) return false;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
    if (bytes > max) return true;
  }
  return false;
}

/** A value for a message: short ones quoted, long ones only measured (the message is no place for a megabyte). */
function quote(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= 64 ? text : `(${typeof value === 'string' ? `a text of ${value.length} characters` : 'a long value'})`;
}

/** Why `ms`, read from `text`, is not a time a recording may hold; null when it is one. */
function timeProblem(ms: number, text: unknown): string | null {
  if (Number.isNaN(ms)) return `${quote(text)} is not a time`;
  if (ms < EARLIEST_TIME_MS || ms > LATEST_TIME_MS) return `${quote(text)} is not a time from the year 1970 to 9999`;
  return null;
}

/** Checks a line's size and nesting before it is parsed, then parses it. */
function parseLine(line: string, file: string, n: number): { ok: true; value: unknown } | { ok: false; error: string } {
  if (longerThan(line, MAX_LINE_BYTES))
    throw new RecordingError(file, n, `the line is longer than ${MAX_LINE_BYTES} bytes, the most a line may hold`);
  if (nestingExceeds(line, MAX_NESTING_DEPTH))
    throw new RecordingError(file, n, `the line's JSON nests deeper than ${MAX_NESTING_DEPTH} levels, more than a recording needs`);
  try {
    return { ok: true, value: JSON.parse(line) as unknown };
  } catch (err) {
    return { ok: false, error: `not valid JSON: ${(err as Error).message}` };
  }
}

/**
 * Reads a recording line by line, checking each as it comes, so a file need never be held whole.
 * Every problem names its line. `keep: false` checks without keeping the changes (a recorder
 * checking what it writes).
 */
export class RecordingParser {
  readonly #file: string;
  readonly #keep: boolean;
  #header: RecordingHeader | null = null;
  #startedMs = 0;
  #lastAt: number | null = null;
  readonly #changes: RecordedChange[] = [];

  constructor(file: string, options: { keep?: boolean } = {}) {
    this.#file = file;
    this.#keep = options.keep ?? true;
  }

  /** Line `n` without its newline; `unterminated` for a last line with none, which a recorder killed mid-write leaves. */
  line(text: string, n: number, unterminated = false): void {
    const file = this.#file;
    if (this.#header === null) {
      if (text.trim() === '') throw new RecordingError(file, n, 'empty; expected a forewarn-recording header');
      const parsed = parseLine(text, file, n);
      if (!parsed.ok) throw new RecordingError(file, n, parsed.error);
      this.#header = parseHeader(parsed.value, file);
      this.#startedMs = Date.parse(this.#header.startedAt);
      return;
    }
    if (text.trim() === '') return;
    const parsed = parseLine(text, file, n);
    if (!parsed.ok) {
      // Only the very last line may be torn: the recorder writes each line whole, so a kill leaves at most one.
      if (unterminated) return;
      throw new RecordingError(file, n, parsed.error);
    }
    const change = parseChange(parsed.value, file, n, this.#startedMs);
    if (this.#lastAt !== null && change.at < this.#lastAt) {
      throw new RecordingError(file, n, `at ${change.at} is earlier than ${this.#lastAt} on the line before; changes are in time order`);
    }
    this.#lastAt = change.at;
    if (this.#keep) this.#changes.push(change);
  }

  finish(): Recording {
    if (this.#header === null) throw new RecordingError(this.#file, 1, 'empty; expected a forewarn-recording header');
    return { header: this.#header, changes: this.#changes };
  }
}

/** Reads a recording held in memory; every problem names its line. A last line cut short (a recorder killed mid-write) is dropped. */
export function parseRecording(text: string, file: string): Recording {
  const parser = new RecordingParser(file);
  const lines = text.split('\n');
  const complete = text.endsWith('\n') ? lines.length - 1 : lines.length;
  for (let i = 0; i < complete; i++) parser.line(lines[i]!, i + 1, i === complete - 1 && !text.endsWith('\n'));
  return parser.finish();
}

function json(line: string, file: string, n: number): unknown {
  const parsed = parseLine(line, file, n);
  if (!parsed.ok) throw new RecordingError(file, n, parsed.error);
  return parsed.value;
}

function parseHeader(value: unknown, file: string): RecordingHeader {
  const bad = (problem: string) => new RecordingError(file, 1, problem);
  if (!isRecord(value) || value.format !== RECORDING_FORMAT)
    throw bad(`not a forewarn recording: the first line must have "format": "${RECORDING_FORMAT}"`);
  if (value.version !== RECORDING_VERSION)
    throw bad(`version ${quote(value.version)} is not one this Forewarn reads (${RECORDING_VERSION})`);
  if (typeof value.apiVersion !== 'string') throw bad('apiVersion: expected a string');
  if (typeof value.startedAt !== 'string') throw bad('startedAt: expected an ISO 8601 time');
  const startProblem = timeProblem(Date.parse(value.startedAt), value.startedAt);
  if (startProblem !== null) throw bad(`startedAt: ${startProblem}`);
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

/** An event's NotBefore, when it has one, must be a time a replay can move and show. */
function notBeforeProblem(event: Record<string, unknown>): string | null {
  const notBefore = event.NotBefore;
  if (typeof notBefore !== 'string' || notBefore === '') return null;
  return timeProblem(Date.parse(notBefore), notBefore);
}

function parseChange(value: unknown, file: string, n: number, startedMs: number): RecordedChange {
  const bad = (problem: string) => new RecordingError(file, n, problem);
  if (!isRecord(value)) throw bad('expected an object with at and document');
  if (typeof value.at !== 'number' || !Number.isFinite(value.at) || value.at < 0) throw bad('at: expected milliseconds (0 or more)');
  if (startedMs + value.at > LATEST_TIME_MS) throw bad(`at: ${value.at} ms after startedAt is past the year 9999`);
  const doc = value.document;
  if (!isRecord(doc) || typeof doc.DocumentIncarnation !== 'number' || !Array.isArray(doc.Events)) {
    throw bad('document: expected {"DocumentIncarnation": N, "Events": [...]}');
  }
  doc.Events.forEach((e, i) => {
    if (!isRecord(e) || typeof e.EventId !== 'string') throw bad(`document.Events[${i}]: expected an event with an EventId`);
    const problem = notBeforeProblem(e);
    if (problem !== null) throw bad(`document.Events[${i}].NotBefore: ${problem}`);
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
  return fromWatchLines(text.split('\n'), file, apiVersion);
}

/** fromWatchJson on lines already split (and size-checked) by the caller. */
export function fromWatchLines(rawLines: readonly string[], file: string, apiVersion: string): Recording {
  const lines: { n: number; line: WatchLine }[] = [];
  rawLines.forEach((raw, i) => {
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
    const timeWrong = timeProblem(Date.parse(value.time), value.time);
    if (timeWrong !== null) throw new RecordingError(file, i + 1, `time: ${timeWrong}`);
    const notBeforeWrong = notBeforeProblem(value.event);
    if (notBeforeWrong !== null) throw new RecordingError(file, i + 1, `event.NotBefore: ${notBeforeWrong}`);
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
    else throw new RecordingError(file, n, `kind ${quote(line.kind)} is not one watch prints`);
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
