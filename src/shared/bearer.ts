// Checking a request's bearer token against the one configured, for a server that takes one.
import { createHash, timingSafeEqual } from 'node:crypto';

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** A test of an Authorization header against `token`; constant time whatever the lengths, as both sides are hashed first. */
export function bearerMatcher(token: string): (header: string | undefined) => boolean {
  const expected = digest(token);
  return (header) => {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
    return timingSafeEqual(digest(m?.[1] ?? ''), expected) && m !== null;
  };
}
