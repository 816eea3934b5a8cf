// The cluster's objects, by resource and namespace/name, with one resourceVersion counter for all
// writes, as etcd's revision is. Objects are kept in wire form (JSON: timestamps as strings).
import { randomUUID } from 'node:crypto';
import type { ResourceType } from './paths.js';
import { alreadyExists, notFound } from './status.js';

export interface Metadata {
  name: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: string;
  generateName?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: Metadata;
  [key: string]: unknown;
}

/** Seconds-precision RFC 3339, as metav1.Time is written. */
export function timestamp(date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function keyOf(type: ResourceType): string {
  return `${type.group}/${type.resource}`;
}

export class Store {
  #revision = 0;
  readonly #objects = new Map<string, Map<string, KubeObject>>();

  nextVersion(): string {
    return String(++this.#revision);
  }

  get revision(): string {
    return String(this.#revision);
  }

  #table(type: ResourceType): Map<string, KubeObject> {
    let table = this.#objects.get(keyOf(type));
    if (!table) this.#objects.set(keyOf(type), (table = new Map()));
    return table;
  }

  /** The stored object itself (not a copy): callers that change it must `touch` it. */
  get(type: ResourceType, namespace: string | null, name: string): KubeObject | undefined {
    return this.#table(type).get(`${namespace ?? ''}/${name}`);
  }

  mustGet(type: ResourceType, namespace: string | null, name: string): KubeObject {
    const found = this.get(type, namespace, name);
    if (!found) throw notFound(type.resource, type.group, name);
    return found;
  }

  /** Stored objects of a resource, in one namespace or all (null), in creation order. */
  list(type: ResourceType, namespace: string | null = null): KubeObject[] {
    return [...this.#table(type).values()].filter((o) => namespace === null || o.metadata.namespace === namespace);
  }

  /** Stores a new object: uid, resourceVersion and creationTimestamp are the server's; 409 if the name is taken. */
  create(type: ResourceType, object: KubeObject): KubeObject {
    const namespace = type.namespaced ? (object.metadata.namespace ?? null) : null;
    const key = `${namespace ?? ''}/${object.metadata.name}`;
    if (this.#table(type).has(key)) throw alreadyExists(type.resource, type.group, object.metadata.name);
    object.metadata.uid = randomUUID();
    object.metadata.creationTimestamp = timestamp();
    object.metadata.resourceVersion = this.nextVersion();
    if (!type.namespaced) delete object.metadata.namespace;
    this.#table(type).set(key, object);
    return object;
  }

  /** Replaces a stored object with `object` (same name), at a new resourceVersion. */
  replace(type: ResourceType, object: KubeObject): KubeObject {
    const namespace = type.namespaced ? (object.metadata.namespace ?? null) : null;
    object.metadata.resourceVersion = this.nextVersion();
    this.#table(type).set(`${namespace ?? ''}/${object.metadata.name}`, object);
    return object;
  }

  /** Marks an object changed in place. */
  touch(object: KubeObject): void {
    object.metadata.resourceVersion = this.nextVersion();
  }

  delete(type: ResourceType, namespace: string | null, name: string): KubeObject | undefined {
    const key = `${namespace ?? ''}/${name}`;
    const found = this.#table(type).get(key);
    this.#table(type).delete(key);
    if (found) this.nextVersion();
    return found;
  }
}
