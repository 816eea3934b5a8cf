// The REST paths the fake serves: which resource a URL names, and the RBAC verb an HTTP method means there.

export interface ResourceType {
  group: string;
  version: string;
  /** Plural, lower case, as in URLs and RBAC rules. */
  resource: string;
  kind: string;
  namespaced: boolean;
}

export const RESOURCES: readonly ResourceType[] = [
  { group: '', version: 'v1', resource: 'namespaces', kind: 'Namespace', namespaced: false },
  { group: '', version: 'v1', resource: 'nodes', kind: 'Node', namespaced: false },
  { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true },
  { group: '', version: 'v1', resource: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true },
  { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true },
  { group: '', version: 'v1', resource: 'events', kind: 'Event', namespaced: true },
  { group: 'events.k8s.io', version: 'v1', resource: 'events', kind: 'Event', namespaced: true },
  { group: 'policy', version: 'v1', resource: 'poddisruptionbudgets', kind: 'PodDisruptionBudget', namespaced: true },
  { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', kind: 'Lease', namespaced: true },
  { group: 'apps', version: 'v1', resource: 'daemonsets', kind: 'DaemonSet', namespaced: true },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', kind: 'ClusterRole', namespaced: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings', kind: 'ClusterRoleBinding', namespaced: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', kind: 'Role', namespaced: true },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', kind: 'RoleBinding', namespaced: true },
];

/** The subresources served, per resource. */
const SUBRESOURCES: Record<string, string[]> = { pods: ['eviction'] };

export function apiVersionOf(type: ResourceType): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

export function resourceByKind(apiVersion: string, kind: string): ResourceType | undefined {
  return RESOURCES.find((r) => apiVersionOf(r) === apiVersion && r.kind === kind);
}

export function resourceByName(group: string, resource: string): ResourceType | undefined {
  return RESOURCES.find((r) => r.group === group && r.resource === resource);
}

export interface Route {
  type: ResourceType;
  /** Null for cluster-scoped resources and for lists across all namespaces. */
  namespace: string | null;
  name: string | null;
  subresource: string | null;
}

/** A URL path → the resource it names; a KubeStatusError-ready problem string when it names none. */
export function parsePath(pathname: string): Route | { problem: string } {
  let parts: string[];
  try {
    parts = pathname
      .split('/')
      .filter((p) => p !== '')
      .map(decodeURIComponent);
  } catch {
    return { problem: `the path ${JSON.stringify(pathname)} is not validly percent-encoded` };
  }
  let group: string;
  let version: string | undefined;
  let rest: string[];
  if (parts[0] === 'api') {
    group = '';
    version = parts[1];
    rest = parts.slice(2);
  } else if (parts[0] === 'apis') {
    group = parts[1] ?? '';
    version = parts[2];
    rest = parts.slice(3);
  } else {
    return { problem: 'the server could not find the requested resource' };
  }
  let namespace: string | null = null;
  // `/api/v1/namespaces/NS` is the Namespace itself; `/api/v1/namespaces/NS/pods` a resource in it.
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1]!;
    rest = rest.slice(2);
  }
  const [resource, name, subresource, ...extra] = rest;
  const type = resource === undefined ? undefined : resourceByName(group, resource);
  if (type === undefined || type.version !== version || extra.length > 0) {
    return { problem: 'the server could not find the requested resource' };
  }
  if (namespace !== null && !type.namespaced) return { problem: 'the server could not find the requested resource' };
  if (subresource !== undefined && !(SUBRESOURCES[type.resource] ?? []).includes(subresource)) {
    return { problem: `the server could not find the requested resource (${type.resource}/${subresource})` };
  }
  // A namespaced resource addressed by name needs its namespace.
  if (type.namespaced && namespace === null && name !== undefined) return { problem: 'the server could not find the requested resource' };
  return { type, namespace, name: name ?? null, subresource: subresource ?? null };
}

/** The RBAC verb of an HTTP method on a route, as the API server's request-info resolver names it. */
export function verbOf(method: string, route: Route, query: URLSearchParams): string | null {
  const one = route.name !== null;
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (query.get('watch') === 'true' || query.get('watch') === '1') return 'watch';
      return one ? 'get' : 'list';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return one ? 'delete' : 'deletecollection';
    default:
      return null;
  }
}
