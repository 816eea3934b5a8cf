// Where a value sits in a YAML or JSON file, so every error can name file:line:col.
import { isMap, isNode, isPair, isScalar, isSeq, type Document, type Node } from 'yaml';

export type Path = readonly (string | number)[];

/** The offset of the deepest node on `path` that exists; for a key, its name. */
export function offsetOf(doc: Document, path: Path, key?: string): number {
  let node: unknown = doc.contents;
  let offset = rangeStart(node) ?? 0;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i]!;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === segment);
      if (!pair) break;
      if (i === path.length - 1 && key !== undefined && segment === key) {
        offset = rangeStart(pair.key) ?? offset;
        break;
      }
      node = pair.value;
      offset = rangeStart(node) ?? rangeStart(pair.key) ?? offset;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment];
      if (item === undefined) break;
      node = item;
      offset = rangeStart(node) ?? offset;
    } else {
      break;
    }
  }
  return offset;
}

function rangeStart(node: unknown): number | undefined {
  return isNode(node) ? (node as Node).range?.[0] : undefined;
}

/** `vms[1].faultDomain`. */
export function formatPath(path: Path): string {
  let out = '';
  for (const segment of path) out += typeof segment === 'number' ? `[${segment}]` : out ? `.${segment}` : segment;
  return out;
}

/** Why a file could not be read, in a few words. */
export function readProblem(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'is a directory' : e.message;
}

/** JSON.parse's value, or where it stops and why (without V8's echo of the text); `doc`'s first error is the fallback place. */
export type JsonParse = { ok: true; value: unknown } | { ok: false; offset: number; why: string };

export function parseJson(text: string, doc?: Document): JsonParse {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    // V8 names the offset only sometimes; the YAML parser's error position is the fallback.
    const message = (err as Error).message;
    const position = /at position (\d+)/.exec(message);
    const offset = position ? Number(position[1]) : (doc?.errors[0]?.pos[0] ?? 0);
    const why = message.replace(/ (in JSON )?at position \d+.*$/s, '').replace(/, (\.\.\.)?".*" is not valid JSON$/s, '');
    return { ok: false, offset, why };
  }
}

/**
 * For a .json file: where JSON.parse stops and why, or null if it parses. YAML reads JSON
 * too, but more leniently, so a .json file also gets JSON's own check.
 */
export function jsonSyntaxProblem(text: string, doc?: Document): { offset: number; why: string } | null {
  const parsed = parseJson(text, doc);
  return parsed.ok ? null : { offset: parsed.offset, why: parsed.why };
}
