// Tables keyed by names that users choose: VM names, environment variables, header names.
import { z } from 'zod';

/**
 * An object keyed by names, read so that every name is an own entry, `__proto__` included:
 * zod's z.record assigns keys onto a plain object, where `__proto__` sets the prototype and the
 * entry is lost. Issues carry the name in their path, as z.record's do.
 */
export function nameRecord<T extends z.ZodType>(value: T, what = 'an object keyed by name') {
  return z.unknown().transform((input, ctx): Record<string, z.output<T>> => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      ctx.addIssue({ code: 'custom', message: `expected ${what}`, input });
      return z.NEVER;
    }
    const entries: [string, z.output<T>][] = [];
    for (const [name, raw] of Object.entries(input)) {
      const parsed = value.safeParse(raw);
      if (parsed.success) entries.push([name, parsed.data]);
      else for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, path: [name, ...issue.path] } as never);
    }
    // Object.fromEntries defines own properties, so `__proto__` stays a key.
    return Object.fromEntries(entries);
  });
}
