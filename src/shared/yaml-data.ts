// YAML files as plain data, the one way every loader reads them: aliases bounded, keys kept as written.
import { isAlias, isCollection, isPair, isSeq, visit, type Document, type Node } from 'yaml';
import type { Path } from './source-positions.js';

/** [choice] YAML aliases resolved per file: ample for shared defaults, far too few for a "billion laughs" bomb. */
export const MAX_ALIAS_COUNT = 100;

/**
 * The document as plain data. An alias bomb (anchors nesting aliases of aliases) is refused before it
 * expands, at the alias that would expand furthest (its offset and field path), rather than with the
 * YAML library's bare exception.
 */
export function plainData(doc: Document, fail: (offset: number, message: string, path: Path) => never): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    if (!(err instanceof ReferenceError)) throw err;
    const worst = furthestAlias(doc);
    return fail(
      worst?.offset ?? 0,
      `YAML aliases expand too far${worst ? ` (*${worst.source} stands for ${worst.size} values)` : ''}; ` +
        `at most ${MAX_ALIAS_COUNT} alias uses are expanded, so write the values out`,
      worst?.path ?? [],
    );
  }
}

/** The alias that stands for the most values, counting aliases inside it; sizes are memoised, so this stays linear. */
function furthestAlias(doc: Document): { offset: number; source: string; size: number; path: Path } | null {
  const anchors = new Map<string, Node>();
  const sizes = new Map<unknown, number>();
  const sizeOf = (node: unknown, depth: number): number => {
    if (depth > 10_000) return Infinity;
    if (isPair(node)) return sizeOf(node.key, depth + 1) + sizeOf(node.value, depth + 1);
    const known = sizes.get(node);
    if (known !== undefined) return known;
    let size = 1;
    if (isAlias(node)) {
      const target = anchors.get(node.source);
      size = target === undefined ? 1 : sizeOf(target, depth + 1);
    } else if (isCollection(node)) {
      size = 1;
      for (const item of node.items as unknown[]) size = Math.min(Number.MAX_SAFE_INTEGER, size + sizeOf(item, depth + 1));
    }
    sizes.set(node, size);
    return size;
  };
  let worst: { offset: number; source: string; size: number; path: Path } | null = null;
  // Visited in document order: an anchor is defined before its aliases, as YAML requires.
  visit(doc, {
    Node(_key, node, ancestors) {
      if (isAlias(node)) {
        const size = sizeOf(node, 0);
        if (!worst || size > worst.size) worst = { offset: node.range?.[0] ?? 0, source: node.source, size, path: pathTo(node, ancestors) };
      } else if (node.anchor) anchors.set(node.anchor, node);
    },
  });
  return worst;
}

/** The field path of a node from the ancestors `visit` hands over. */
function pathTo(node: unknown, ancestors: readonly unknown[]): Path {
  const path: (string | number)[] = [];
  const chain = [...ancestors, node];
  chain.forEach((a, i) => {
    if (isPair(a)) path.push(String((a.key as { value?: unknown } | null)?.value ?? a.key));
    else if (isSeq(a)) path.push(a.items.indexOf(chain[i + 1] as never));
  });
  return path;
}
