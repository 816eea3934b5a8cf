// The patch formats PATCH takes: RFC 7386 merge patch (strategic merge patch is served the same way,
// lists replaced whole, which is right for the fields the agent patches) and RFC 6902 JSON Patch as
// the API server's library (gopkg.in/evanphx/json-patch.v4) applies it. Any failure, a failed `test`
// included, becomes the same 422 in rest.ts: the server does not pass the library's reason on.

export class PatchError extends Error {
  /** A failed `test` op: the server answers 422 rather than 400. */
  constructor(
    message: string,
    readonly testFailed = false,
  ) {
    super(message);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 7386: objects merge key by key, null removes a key, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = isRecord(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

function unescapeToken(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

function tokens(path: unknown, where: string): string[] {
  if (typeof path !== 'string' || (path !== '' && !path.startsWith('/'))) {
    throw new PatchError(`${where}: path must be a JSON pointer such as /metadata/labels, not ${JSON.stringify(path)}`);
  }
  return path === '' ? [] : path.slice(1).split('/').map(unescapeToken);
}

function index(list: unknown[], token: string, forInsert: boolean, where: string): number {
  if (forInsert && token === '-') return list.length;
  if (!/^(0|[1-9]\d*)$/.test(token)) throw new PatchError(`${where}: ${JSON.stringify(token)} is not an array index`);
  const i = Number(token);
  if (i > list.length || (!forInsert && i === list.length)) throw new PatchError(`${where}: index ${i} is out of bounds`);
  return i;
}

function resolve(doc: unknown, path: string[], where: string): unknown {
  let at = doc;
  for (const token of path) {
    if (Array.isArray(at)) at = at[index(at, token, false, where)];
    else if (isRecord(at) && Object.hasOwn(at, token)) at = at[token];
    else throw new PatchError(`${where}: /${path.join('/')} does not exist`);
  }
  return at;
}

function equal(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (isRecord(a) && isRecord(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
  }
  return a === b;
}

/** RFC 6902 on a copy of `doc`: add, remove, replace, move, copy, test. Throws PatchError naming the failing op. */
export function jsonPatch(doc: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new PatchError('a JSON patch must be a list of operations');
  let out = structuredClone(doc);
  ops.forEach((op: unknown, i) => {
    const where = `operation ${i}`;
    if (!isRecord(op)) throw new PatchError(`${where}: not an object`);
    const path = tokens(op.path, where);
    const value = op.value;
    switch (op.op) {
      case 'test': {
        // As evanphx/json-patch (v4, the API server's): a missing member and null are the same
        // "nothing", which a test with value null (or none) passes.
        const parent = resolve(out, path.slice(0, -1), where);
        const last = path[path.length - 1];
        let found: unknown;
        if (last === undefined) found = parent;
        else if (Array.isArray(parent)) found = parent[index(parent, last, false, where)];
        else if (isRecord(parent)) found = parent[last];
        else throw new PatchError(`${where}: /${path.slice(0, -1).join('/')} is not an object or a list`);
        const nothing = (x: unknown): boolean => x === undefined || x === null;
        const passed = nothing(found) ? nothing(value) : !nothing(value) && equal(found, value);
        if (!passed) throw new PatchError(`testing value ${String(op.path)} failed`, true);
        return;
      }
      case 'add':
      case 'replace':
        if (op.op === 'replace') resolve(out, path, where);
        if (!Object.hasOwn(op, 'value')) throw new PatchError(`${where}: ${op.op} needs a value`);
        out = put(out, path, structuredClone(value), op.op === 'add', where);
        return;
      case 'remove':
        resolve(out, path, where);
        out = remove(out, path, where);
        return;
      case 'move':
      case 'copy': {
        const from = tokens(op.from, where);
        const moved = structuredClone(resolve(out, from, where));
        if (op.op === 'move') out = remove(out, from, where);
        out = put(out, path, moved, true, where);
        return;
      }
      default:
        throw new PatchError(`${where}: unknown op ${JSON.stringify(op.op)}`);
    }
  });
  return out;
}

function put(doc: unknown, path: string[], value: unknown, insert: boolean, where: string): unknown {
  if (path.length === 0) return value;
  const parent = resolve(doc, path.slice(0, -1), where);
  const last = path[path.length - 1]!;
  if (Array.isArray(parent)) {
    const i = index(parent, last, insert, where);
    if (insert) parent.splice(i, 0, value);
    else parent[i] = value;
  } else if (isRecord(parent)) {
    parent[last] = value;
  } else {
    throw new PatchError(`${where}: /${path.slice(0, -1).join('/')} is not an object or a list`);
  }
  return doc;
}

function remove(doc: unknown, path: string[], where: string): unknown {
  if (path.length === 0) throw new PatchError(`${where}: cannot remove the whole document`);
  const parent = resolve(doc, path.slice(0, -1), where);
  const last = path[path.length - 1]!;
  if (Array.isArray(parent)) parent.splice(index(parent, last, false, where), 1);
  else if (isRecord(parent)) delete parent[last];
  return doc;
}
