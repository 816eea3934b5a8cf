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
