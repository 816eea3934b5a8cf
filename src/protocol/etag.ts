// [imds] DocumentIncarnation "is an ETag": the tag is the incarnation.

/** The ETag header value for an incarnation: the number, quoted. */
export function etagOf(incarnation: number): string {
  return `"${incarnation}"`;
}

/**
 * [choice] True if an If-None-Match header names this incarnation: quoted or not,
 * weak (W/) or not, alone or in a comma-separated list, or `*`.
 */
export function ifNoneMatchHits(header: string, incarnation: number): boolean {
  const tag = String(incarnation);
  for (const part of header.split(',')) {
    let t = part.trim();
    if (t === '*') return true;
    if (t.startsWith('W/') || t.startsWith('w/')) t = t.slice(2);
    if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) t = t.slice(1, -1);
    if (t === tag) return true;
  }
  return false;
}
