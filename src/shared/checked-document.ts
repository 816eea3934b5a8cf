// The one checked-document loader: YAML or JSON text → plain data → a zod schema, every problem told
// as `FILE:line:col: field.path: message`. The fleet file, scenarios, the agent config and the state
// file read through here; each keeps only its own cross-field rules. Imports nothing of emulator or agent.
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import { formatPath, jsonSyntaxProblem, offsetOf, readProblem, type Path } from './source-positions.js';
import { plainData } from './yaml-data.js';

export { formatPath, type Path };

/** One problem at a place in a document, before it is given a line and column. */
export interface Problem {
  path: Path;
  message: string;
  /** Point at this key's name rather than its value (unknown keys). */
  key?: string | undefined;
}

/** A problem with its place; line 0 means the file as a whole (it could not be read, or has no lines). */
export interface Located {
  file: string;
  line: number;
  col: number;
  /** `steps[2].approve.vm`; empty for the whole document. */
  path: string;
  problem: string;
  /** What the document is called before the path, as in `invalid state file`; most loaders have none. */
  context?: string | undefined;
}

/** `FILE:line:col: [context: ][path: ]problem`, or `FILE: problem` without a line. */
export function formatLocated(at: Located): string {
  const where = at.line > 0 ? `${at.file}:${at.line}:${at.col}` : at.file;
  return [where, at.context, at.path, at.problem].filter((part) => part !== undefined && part !== '').join(': ');
}

/** A problem in a document, at its place; each loader's error class extends it. */
export class DocumentError extends Error implements Located {
  override name = 'DocumentError';
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly path: string;
  readonly problem: string;
  readonly context: string | undefined;
  /** Every problem this error tells, the first being its own fields; one unless CheckedDocument.all made it. */
  readonly located: readonly Located[];
  /** `message` defaults to formatLocated(at); give it only to keep an older wording. */
  constructor(at: Located, message = formatLocated(at)) {
    super(message);
    this.located = [at];
    this.file = at.file;
    this.line = at.line;
    this.col = at.col;
    this.path = at.path;
    this.problem = at.problem;
    this.context = at.context;
  }
}

/** Several problems in one document: `problems` and the message's lines are each `FILE:line:col: path: problem`, in file order. */
export class DocumentErrors extends Error {
  override name = 'DocumentErrors';
  readonly problems: string[];
  constructor(readonly errors: readonly DocumentError[]) {
    const problems = errors.map((e) => e.message);
    super(problems.join('\n'));
    this.problems = problems;
  }
}

/** What a required key that is absent reads as, in every loader. */
export const MISSING = 'missing (required)';

/** zod's words for an issue, as every loader says them: no `Invalid input:` prefix, and an absent value is "missing". */
export function issueMessage(issue: z.core.$ZodIssue): string {
  if (/received undefined$/.test(issue.message)) return MISSING;
  return issue.message.replace(/^Invalid (input|option): /, '');
}

/**
 * Problems for zod's issues: each unknown key at its own name (`unknown key "colour"`), the rest at
 * their value in issueMessage's words. `reword` gives a loader's own words for an issue, or undefined.
 */
export function issueProblems(
  issues: readonly z.core.$ZodIssue[],
  reword?: (issue: z.core.$ZodIssue, path: Path) => string | undefined,
): Problem[] {
  const problems: Problem[] = [];
  for (const issue of issues) {
    const path = issue.path as Path;
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const at: Path = [...path, key];
        problems.push({ path: at, key, message: reword?.(issue, at) ?? `unknown key "${key}"` });
      }
    } else {
      problems.push({ path, message: reword?.(issue, path) ?? issueMessage(issue) });
    }
  }
  return problems;
}

/** ` (and 2 more problems)` after the first of `count` problems; empty for one. */
export function moreProblems(count: number): string {
  return count > 1 ? ` (and ${count - 1} more problem${count > 2 ? 's' : ''})` : '';
}

/** The error class a loader throws, built from a place. */
export type DocumentErrorClass<E extends DocumentError> = new (at: Located) => E;

/** One error of `ErrorClass` telling every place (at least one): fields of the first, a message line each, `located` all. */
export function errorTelling<E extends DocumentError>(ErrorClass: DocumentErrorClass<E>, located: readonly Located[]): E {
  const err = new ErrorClass(located[0]!);
  // Each loader's class takes one place; the rest are told in the message and kept in `located`.
  err.message = located.map(formatLocated).join('\n');
  Object.defineProperty(err, 'located', { value: located });
  return err;
}

/** A file's text; a file that cannot be read is an error naming it: `PATH: cannot read the WHAT: no such file`. */
export function readDocumentFile<E extends DocumentError>(path: string, what: string, ErrorClass: DocumentErrorClass<E>): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ErrorClass({ file: path, line: 0, col: 0, path: '', problem: `cannot read the ${what}: ${readProblem(err)}` });
  }
}

export interface DocumentOptions<E extends DocumentError> {
  /** The loader's error class: every problem is thrown as one. */
  error: DocumentErrorClass<E>;
  /** The problem with an empty document, e.g. `the file is empty; expected a mapping with "vms"`. */
  empty: string;
  /** For a loader that lists every problem: syntax errors are all thrown at once, through this. */
  errors?: (errors: E[]) => Error;
  /** How a YAML parser error starts; `YAML syntax error` (`JSON syntax error` for a .json file) unless given. */
  syntaxLabel?: string;
}

/**
 * A parsed document and its plain data, with positions for every field path. YAML reads JSON too
 * (YAML 1.2 is a superset), which gives positions for both; [choice] a .json file also gets JSON's
 * own stricter syntax check, so what loads here loads in any JSON tool.
 */
export class CheckedDocument<E extends DocumentError> {
  readonly file: string;
  readonly doc: Document;
  /** The document as plain data; never null or undefined (an empty document is refused). */
  readonly data: unknown;
  readonly #lines = new LineCounter();
  readonly #error: DocumentErrorClass<E>;

  constructor(text: string, file: string, options: DocumentOptions<E>) {
    this.file = file;
    this.#error = options.error;
    const throwAll = (errors: E[]): never => {
      throw options.errors ? options.errors(errors) : errors[0]!;
    };
    const fail = (offset: number, problem: string, path: Path = []): never =>
      throwAll([new this.#error(this.#place(offset, formatPath(path), problem))]);
    const json = extname(file).toLowerCase() === '.json';
    this.doc = parseDocument(text, { lineCounter: this.#lines, prettyErrors: false, uniqueKeys: true });
    const jsonProblem = json ? jsonSyntaxProblem(text, this.doc) : null;
    if (jsonProblem) fail(jsonProblem.offset, `JSON syntax error: ${jsonProblem.why}`);
    if (this.doc.errors.length > 0) {
      const label = options.syntaxLabel ?? `${json ? 'JSON' : 'YAML'} syntax error`;
      const all = this.doc.errors.map((e) => new this.#error(this.#place(e.pos[0], '', `${label}: ${e.message.split('\n')[0]}`)));
      throwAll(options.errors ? all : all.slice(0, 1));
    }
    const data = plainData(this.doc, fail);
    if (data === null || data === undefined) fail(0, options.empty);
    this.data = data;
  }

  /** 1-based line and column of an offset in the text. */
  position(offset: number): { line: number; col: number } {
    return this.#lines.linePos(offset);
  }

  /** The line a field path is written on (its deepest part that exists). */
  lineOf(path: Path): number {
    return this.position(offsetOf(this.doc, path)).line;
  }

  /** Every problem as an error at its place, in file order; problems at one place keep their order. */
  locate(problems: readonly Problem[]): E[] {
    return this.#placed(problems).map((at) => new this.#error(at));
  }

  /** The problem written first, saying how many more there are. */
  first(problems: readonly Problem[]): E {
    const first = this.#placed(problems)[0]!;
    return new this.#error({ ...first, problem: first.problem + moreProblems(problems.length) });
  }

  /**
   * Every problem in one error of the loader's class: its fields are the first problem's (written
   * first), its message one `FILE:line:col: path: problem` line per problem, `located` them all.
   */
  all(problems: readonly Problem[]): E {
    return errorTelling(this.#error, this.#placed(problems));
  }

  /** One problem as an error at its place. */
  error(problem: Problem): E {
    return this.first([problem]);
  }

  #placed(problems: readonly Problem[]): Located[] {
    return problems
      .map((p) => ({ p, offset: offsetOf(this.doc, p.path, p.key) }))
      .sort((a, b) => a.offset - b.offset)
      .map(({ p, offset }) => this.#place(offset, formatPath(p.path), p.message));
  }

  #place(offset: number, path: string, problem: string): Located {
    const { line, col } = this.position(offset);
    return { file: this.file, line, col, path, problem };
  }
}
