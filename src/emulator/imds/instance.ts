// /metadata/instance: the whole tree at an api-version, and the node a path names in it.
import { instanceFieldAt, INSTANCE_FORMATS, LEAF_NEEDS_TEXT, TEXT_NEEDS_LEAF, FORMAT_INVALID } from '../../protocol/instance-metadata.js';
import type { Vm } from '../engine/fleet.js';
import { computeMetadata } from './compute.js';
import { networkMetadata } from './network.js';

/** Every leaf of instance metadata is a string, as IMDS sends them. */
export type MetadataNode = string | MetadataNode[] | { [key: string]: MetadataNode };

/**
 * Trees built so far, per VM and api-version. Nothing a tree shows changes while a Vm object is in the
 * fleet (a re-added VM is a new object), so each is built once, not per request.
 */
const built = new WeakMap<Vm, Map<string, MetadataNode>>();

/** The tree as this api-version shows it: fields introduced later are left out. Shared: do not modify. */
export function instanceMetadata(vm: Vm, version: string): MetadataNode {
  let versions = built.get(vm);
  if (versions === undefined) built.set(vm, (versions = new Map()));
  let tree = versions.get(version);
  if (tree === undefined)
    versions.set(version, (tree = atVersion({ compute: computeMetadata(vm), network: networkMetadata(vm) }, '', version)));
  return tree;
}

function atVersion(node: MetadataNode, path: string, version: string): MetadataNode {
  if (typeof node === 'string') return node;
  if (Array.isArray(node)) return node.map((child) => atVersion(child, path, version));
  const out: Record<string, MetadataNode> = {};
  for (const [key, child] of Object.entries(node)) {
    const at = path === '' ? key : `${path}/${key}`;
    if (instanceFieldAt(at, version)) out[key] = atVersion(child, at, version);
  }
  return out;
}

export type InstanceAnswer = { status: 200; contentType: 'json' | 'text'; body: string } | { status: 400 | 404; error: string | null };

/**
 * The answer for `rest` (the path below /metadata/instance, '' for the root) in `format`.
 * [imds] Leaves need format=text ("For leaf nodes in /metadata/instance the format=json doesn't
 * work. For these queries format=text needs to be explicitly specified"); [choice] format=text on a
 * node with children is refused too, rather than guessed at. A null error means IMDS's plain 404.
 */
export function answerInstance(tree: MetadataNode, rest: string, format: unknown): InstanceAnswer {
  if (format !== undefined && !(INSTANCE_FORMATS as readonly unknown[]).includes(format)) return { status: 400, error: FORMAT_INVALID };
  // [choice] One trailing slash is ignored, as most HTTP servers do.
  const segments = rest === '' ? [] : rest.replace(/\/$/, '').split('/');
  let node: MetadataNode | undefined = tree;
  for (const segment of segments) {
    node = child(node, segment);
    if (node === undefined) return { status: 404, error: null };
  }
  const leaf = typeof node === 'string';
  if (leaf && format !== 'text') return { status: 400, error: LEAF_NEEDS_TEXT };
  if (!leaf && format === 'text') return { status: 400, error: TEXT_NEEDS_LEAF };
  return leaf
    ? { status: 200, contentType: 'text', body: node as string }
    : { status: 200, contentType: 'json', body: JSON.stringify(node) };
}

function child(node: MetadataNode, segment: string): MetadataNode | undefined {
  if (typeof node === 'string') return undefined;
  if (Array.isArray(node)) return /^(0|[1-9]\d*)$/.test(segment) ? node[Number(segment)] : undefined;
  return Object.hasOwn(node, segment) ? node[segment] : undefined;
}
