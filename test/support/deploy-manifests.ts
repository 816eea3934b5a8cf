// deploy/kubernetes as objects, and the permissions its RBAC must grant the agent: read by the
// manifests' own tests and by the agent's end-to-end test, which runs the agent under that RBAC.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DEPLOY_DIR = join(ROOT, 'deploy', 'kubernetes');

/**
 * Every permission the agent's ServiceAccount holds, and the only ones: what src/agent/kubernetes
 * calls. `scope` is `*` for cluster-wide, else the namespace. The e2e test can compare this with
 * the permissions the fake API server saw the agent use.
 */
export const GRANTS: Grant[] = [
  { verb: 'get', group: '', resource: 'nodes', scope: '*' },
  // The barrier: the nodes that run the agent (label forewarn.io/agent=true) and their prepared marks.
  { verb: 'list', group: '', resource: 'nodes', scope: '*' },
  { verb: 'patch', group: '', resource: 'nodes', scope: '*' },
  { verb: 'list', group: '', resource: 'pods', scope: '*' },
  { verb: 'create', group: '', resource: 'pods/eviction', scope: '*' },
  // A node's events live in `default`, as the kubelet's do.
  { verb: 'create', group: '', resource: 'events', scope: 'default' },
  { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', scope: 'forewarn' },
  { verb: 'create', group: 'coordination.k8s.io', resource: 'leases', scope: 'forewarn' },
  { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', scope: 'forewarn' },
];

export interface Grant {
  verb: string;
  group: string;
  resource: string;
  scope: string;
}

export interface Meta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: Meta;
}

export interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export interface Manifest {
  file: string;
  object: K8sObject;
}

/** Every document of every YAML file in the folder (not only those the kustomization lists), Namespaces first as kustomize sends them. */
export function loadManifests(): Manifest[] {
  const all = manifestFiles().flatMap((file) =>
    parseAllDocuments(readFileSync(join(DEPLOY_DIR, file), 'utf8')).flatMap((doc, i) => {
      if (doc.errors.length > 0) throw new Error(`deploy/kubernetes/${file}, document ${i + 1}: ${doc.errors[0]!.message}`);
      const object: unknown = doc.toJS();
      if (object === null) return [];
      if (typeof object !== 'object' || Array.isArray(object) || !('kind' in object) || !('metadata' in object)) {
        throw new Error(`deploy/kubernetes/${file}, document ${i + 1}: not a Kubernetes object (no kind or metadata)`);
      }
      return [{ file, object: object as K8sObject }];
    }),
  );
  return all.sort((a, b) => Number(b.object.kind === 'Namespace') - Number(a.object.kind === 'Namespace'));
}

export function manifestFiles(): string[] {
  return readdirSync(DEPLOY_DIR)
    .filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml')
    .sort();
}
