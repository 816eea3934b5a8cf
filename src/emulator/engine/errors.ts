/** What went wrong, in terms each HTTP surface maps to a status through the one map, src/emulator/http/error-map.ts. */
export type EngineErrorCode = 'invalid' | 'not-found' | 'conflict';

/** Where a problem lies in what the caller sent: a field's name (`'notBefore'`) or a path (`['vms', 0]`). */
export type FieldPath = string | readonly (string | number)[];

export class EngineError extends Error {
  override name = 'EngineError';
  /** Fields that share the blame with `field`, most to blame first (a host's fault domain: faultDomain, then host). */
  readonly related: readonly FieldPath[];
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    /** The field of the request or spec most to blame, when one is. */
    readonly field?: FieldPath,
    related: readonly FieldPath[] = [],
  ) {
    super(message);
    this.related = related;
  }

  /** `field` then `related`: every field to blame, most first; empty when no field is. */
  get fields(): readonly FieldPath[] {
    return this.field === undefined ? [] : [this.field, ...this.related];
  }
}

// `field` names what the caller got wrong; `related` the fields that share the blame.
export const invalid = (message: string, field?: FieldPath, ...related: FieldPath[]) => new EngineError('invalid', message, field, related);
export const notFound = (message: string, field?: FieldPath, ...related: FieldPath[]) =>
  new EngineError('not-found', message, field, related);
export const conflict = (message: string, field?: FieldPath, ...related: FieldPath[]) =>
  new EngineError('conflict', message, field, related);

/** A field path as messages write it: `vms[0].name`, `notBefore`. */
export function formatFieldPath(path: FieldPath): string {
  if (typeof path === 'string') return path;
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? key : `.${key}`;
  }
  return out;
}
