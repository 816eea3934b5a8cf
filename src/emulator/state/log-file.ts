// Reading the state file: a version 2 log (a snapshot line, then one change record per saved batch) or a version 1 file.
import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import type { EngineDelta, EngineSnapshot } from '../engine/engine.js';
import { applyTable } from '../engine/changes.js';
import { DocumentError, formatLocated, formatPath, issueProblems, moreProblems, type Located } from '../../shared/checked-document.js';
import { parseJson, readProblem } from '../../shared/source-positions.js';
import { checkSnapshot } from './check.js';
import { ChangeRecordSchema, SnapshotSchema, STATE_FILE_VERSION } from './schema.js';

/** A state file that cannot be used: `FILE: problem`, or `FILE:line:col: invalid state file: path: problem`. */
export class StateFileError extends DocumentError {
  override name = 'StateFileError';
  constructor(at: Located);
  /** A problem with the file as a whole, worded in full (`FILE: …`). */
  constructor(message: string, file: string);
  constructor(at: Located | string, file?: string) {
    if (typeof at !== 'string') {
      super(at);
    } else {
      const problem = at.startsWith(`${file}: `) ? at.slice(file!.length + 2) : at;
      super({ file: file!, line: 0, col: 0, path: '', problem }, at);
    }
  }
}

/** A problem with the whole file, no line. */
const fileError = (file: string, problem: string) => new StateFileError({ file, line: 0, col: 0, path: '', problem });

export interface StateFileContents {
  snapshot: EngineSnapshot;
  /** The version the file was written in; a version 1 file is rewritten as version 2 at start. */
  version: 1 | 2;
  /** Change records applied on top of the snapshot line. */
  records: number;
  /** Things dropped on the way that are not errors (a torn last line), for the log. */
  warnings: string[];
  /** Where each entry was last written, so a problem found in the merged snapshot names its line. */
  source: SourceMap;
}

/** The file's text and, per `table key`, the 1-based line that last wrote that entry (absent: the snapshot, line 1). */
interface SourceMap {
  text: string;
  origins: Map<string, number>;
}

/** Array tables of the snapshot and change records, and how their entries are keyed. */
const ENTRY_KEYS: Readonly<Record<string, (entry: { id?: string; name?: string }) => string | undefined>> = {
  vms: (e) => e.name,
  initialFleet: (e) => e.name,
  deleted: (e) => e.name,
  events: (e) => e.id,
  ended: (e) => e.id,
  operations: (e) => e.id,
  subscriptions: (e) => e.id,
};

/**
 * Line and column of a field path of the (merged) snapshot: the line that last wrote the entry
 * the path is in, and in it the entry's key, then the path's deepest field name after it.
 */
function placeOf(source: SourceMap, snapshot: unknown, fieldPath: readonly PropertyKey[]): { line: number; col: number } {
  const [table, index] = fieldPath;
  const rows = typeof table === 'string' ? (snapshot as Record<string, unknown> | null)?.[table] : undefined;
  let key: string | undefined;
  if (Array.isArray(rows) && typeof index === 'number') {
    const row = rows[index] as { id?: string; name?: string } | undefined;
    key = row && typeof table === 'string' ? ENTRY_KEYS[table]?.(row) : undefined;
  } else if (typeof index === 'string') {
    key = index;
  }
  const { text } = source;
  const line = (key !== undefined && source.origins.get(`${String(table)} ${key}`)) || 1;
  let start = 0;
  for (let n = 1; n < line; n++) start = text.indexOf('\n', start) + 1;
  // A version 1 file is one indented object over many lines: search all of it.
  const end = line === 1 && !text.startsWith('{"') ? text.length : (text.indexOf('\n', start) + 1 || text.length + 1) - 1;
  const find = (needle: string, from: number) => {
    const at = text.indexOf(needle, from);
    return at >= 0 && at < end ? at : -1;
  };
  let at = start;
  if (typeof table === 'string') at = Math.max(at, find(`${JSON.stringify(table)}:`, at));
  if (key !== undefined) at = Math.max(at, find(JSON.stringify(key), at));
  const field = [...fieldPath.slice(key === undefined ? 1 : 2)].reverse().find((s): s is string => typeof s === 'string');
  if (field !== undefined) at = Math.max(at, find(`${JSON.stringify(field)}:`, at));
  const before = text.slice(0, at);
  return { line: before.split('\n').length, col: at - before.lastIndexOf('\n') };
}

/** `FILE:line:col: invalid state file|change record: path: problem (and N more problems)`. */
function invalid(
  file: string,
  where: { line: number; col: number },
  what: string,
  path: readonly PropertyKey[],
  problem: string,
  count: number,
): StateFileError {
  const field = formatPath(path as (string | number)[]) || '(top level)';
  return new StateFileError({ file, ...where, context: `invalid ${what}`, path: field, problem: problem + moreProblems(count) });
}

/** Reads a state file and checks that what it holds makes sense; undefined when it does not exist (a fresh start). Never writes. */
export function readStateFile(path: string): StateFileContents | undefined {
  const contents = readStateLog(path);
  if (!contents) return undefined;
  const problems = checkSnapshot(contents.snapshot);
  if (problems.length > 0) {
    const first = problems[0]!;
    throw invalid(path, placeOf(contents.source, contents.snapshot, first.path), 'state file', first.path, first.message, problems.length);
  }
  return contents;
}

/** Reads a state file's shapes and replays its change records, without the cross-checks of check.ts. */
export function readStateLog(path: string): StateFileContents | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fileError(path, `cannot read the state file: ${readProblem(err)}`);
  }
  if (text.trim() === '') throw fileError(path, 'the state file is empty; move it away or delete it to start afresh');

  // Version 2's first line is a whole JSON object; a version 1 file is one (usually indented) object.
  const firstEnd = text.indexOf('\n');
  const firstLine = firstEnd < 0 ? text : text.slice(0, firstEnd);
  let head = parseJson(firstLine);
  let rest = firstEnd < 0 ? '' : text.slice(firstEnd + 1);
  if (!head.ok) {
    head = parseJson(text);
    rest = '';
    if (!head.ok) throw fileError(path, `the state file is not valid JSON (${head.why}); move it away or delete it to start afresh`);
  }
  const version = checkHead(path, head.value);
  if (version === 1 && rest.trim() !== '') {
    throw new StateFileError({
      file: path,
      line: 2,
      col: 1,
      path: '',
      problem: 'a version 1 state file holds one JSON object; more follows it',
    });
  }
  const source: SourceMap = { text, origins: new Map() };
  const parsed = SnapshotSchema.safeParse(head.value);
  if (!parsed.success) {
    const problems = issueProblems(parsed.error.issues);
    const first = problems[0]!;
    throw invalid(path, placeOf(source, head.value, first.path), 'state file', first.path, first.message, problems.length);
  }
  const base: EngineSnapshot = parsed.data;

  const warnings: string[] = [];
  const records = version === 2 ? readRecords(path, rest, warnings) : [];
  const snapshot = records.length === 0 ? base : applyRecords(base, records, source.origins);
  return { snapshot, version, records: records.length, warnings, source };
}

/** The state a file holds, or undefined if there is none; see readStateFile. */
export function loadStateFile(path: string): EngineSnapshot | undefined {
  return readStateFile(path)?.snapshot;
}

/** Say "not ours" or "another version" before listing field problems. */
function checkHead(path: string, data: unknown): 1 | 2 {
  const head = data as { format?: unknown; version?: unknown } | null;
  if (typeof head !== 'object' || head === null || Array.isArray(head) || head.format !== 'forewarn-state') {
    throw fileError(path, 'not a forewarn state file (format is not "forewarn-state")');
  }
  if (head.version !== 1 && head.version !== STATE_FILE_VERSION) {
    throw fileError(
      path,
      `state file version ${JSON.stringify(head.version)} is not supported; this forewarn reads versions 1 and ${STATE_FILE_VERSION}`,
    );
  }
  return head.version;
}

type ChangeRecord = z.output<typeof ChangeRecordSchema>;

/**
 * The change records after the snapshot line. [choice] The last line is dropped with a warning
 * when it has no newline or is not JSON: an append cut short by a crash or power loss, which was
 * never acknowledged. Any other bad line is an error naming file:line:col.
 */
function readRecords(path: string, rest: string, warnings: string[]): ChangeRecord[] {
  const lines = rest.split('\n');
  // Text after the last newline is an append that did not finish.
  const tail = lines.pop()!;
  const at = (line: number, col: number, problem: string): Located => ({ file: path, line, col, path: '', problem });
  if (tail !== '')
    warnings.push(
      formatLocated(
        at(lines.length + 2, 1, `dropped an incomplete last line (${tail.length} bytes): a save cut short, never acknowledged`),
      ),
    );
  const records: ChangeRecord[] = [];
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 2;
    const line = lines[i]!;
    const json = parseJson(line);
    if (!json.ok) {
      if (i === lines.length - 1 && tail === '') {
        warnings.push(formatLocated(at(lineNo, json.offset + 1, 'dropped an unreadable last line: a save cut short, never acknowledged')));
        break;
      }
      throw new StateFileError(at(lineNo, json.offset + 1, `a change record is not valid JSON (${json.why})`));
    }
    const parsed = ChangeRecordSchema.safeParse(json.value);
    if (!parsed.success) {
      const problems = issueProblems(parsed.error.issues);
      const first = problems[0]!;
      throw invalid(path, { line: lineNo, col: columnOf(line, first.path) }, 'change record', first.path, first.message, problems.length);
    }
    const expected = records.length + 1;
    if (parsed.data.seq !== expected) {
      const where = { line: lineNo, col: columnOf(line, ['seq']) };
      throw invalid(
        path,
        where,
        'change record',
        ['seq'],
        `expected ${expected}, got ${parsed.data.seq} (a record is missing or repeated)`,
        1,
      );
    }
    records.push(parsed.data);
  }
  return records;
}

/** Where a field's key (the deepest named one on the path) starts in a line, 1-based; 1 if not found. */
function columnOf(line: string, path: readonly PropertyKey[]): number {
  const key = [...path].reverse().find((segment) => typeof segment === 'string');
  if (key === undefined) return 1;
  const at = line.indexOf(`${JSON.stringify(key)}:`);
  return at < 0 ? 1 : at + 1;
}

/** The snapshot with each record applied in turn, as the engine's own tables would be. */
function applyRecords(base: EngineSnapshot, records: readonly ChangeRecord[], origins: Map<string, number>): EngineSnapshot {
  const byKey = <T>(items: readonly T[], key: (item: T) => string) => new Map(items.map((item) => [key(item), item]));
  const vms = byKey(base.vms, (v) => v.name);
  const events = byKey(base.events, (e) => e.id);
  const ended = byKey(base.ended, (e) => e.id);
  const operations = byKey(base.operations, (o) => o.id);
  const incarnations = new Map(Object.entries(base.incarnations));
  // Absent in older files, and left absent unless a record fills them.
  let activation = base.activation ? new Map(Object.entries(base.activation)) : undefined;
  let deleted = base.deleted ? byKey(base.deleted, (d) => d.name) : undefined;
  let subscriptions = base.subscriptions ? byKey(base.subscriptions, (s) => s.id) : undefined;
  let savedAt = base.savedAt;
  for (const [i, record] of records.entries()) {
    const delta: EngineDelta = record;
    noteOrigins(delta, i + 2, origins);
    savedAt = delta.savedAt;
    applyTable(vms, delta.vms, (v) => v.name);
    applyTable(events, delta.events, (e) => e.id);
    applyTable(ended, delta.ended, (e) => e.id);
    applyTable(operations, delta.operations, (o) => o.id);
    applyPairs(incarnations, delta.incarnations);
    if (delta.activation) applyPairs((activation ??= new Map()), delta.activation);
    if (delta.deleted) applyTable((deleted ??= new Map()), delta.deleted, (d) => d.name);
    if (delta.subscriptions) applyTable((subscriptions ??= new Map()), delta.subscriptions, (s) => s.id);
  }
  const snapshot: EngineSnapshot = {
    ...base,
    savedAt,
    vms: [...vms.values()],
    events: [...events.values()],
    ended: [...ended.values()],
    operations: [...operations.values()],
    incarnations: Object.fromEntries(incarnations),
  };
  if (activation) snapshot.activation = Object.fromEntries(activation);
  if (deleted) snapshot.deleted = [...deleted.values()];
  if (subscriptions) snapshot.subscriptions = [...subscriptions.values()];
  return snapshot;
}

/** Name-keyed records travel as [name, value] pairs; see applyTable for the order. */
function applyPairs<T>(map: Map<string, T>, delta: { set: [string, T][]; del: string[] } | undefined): void {
  if (!delta) return;
  for (const name of delta.del) map.delete(name);
  for (const [name, value] of delta.set) map.set(name, value);
}

/** Records, for every entry a change line sets or removes, that this line wrote it last. */
function noteOrigins(delta: EngineDelta, line: number, origins: Map<string, number>): void {
  for (const [table, changes] of Object.entries(delta)) {
    if (typeof changes !== 'object' || changes === null || !('set' in changes)) continue;
    const { set, del } = changes as { set: unknown[]; del: string[] };
    const keyOf = ENTRY_KEYS[table];
    for (const entry of set) {
      const key = Array.isArray(entry) ? (entry[0] as string) : keyOf?.(entry as { id?: string; name?: string });
      if (key !== undefined) origins.set(`${table} ${key}`, line);
    }
    for (const key of del) origins.set(`${table} ${key}`, line);
  }
}
