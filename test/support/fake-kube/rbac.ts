// RBAC as the API server's authorizer decides it, for one ServiceAccount: the rules of the Roles and
// ClusterRoles bound to it (ClusterRoleBindings everywhere, RoleBindings in their own namespace).
import { qualified } from './status.js';

export interface Subject {
  kind: 'ServiceAccount';
  namespace: string;
  name: string;
}

/** What a request needed: `resource` carries the subresource (`pods/eviction`); namespace null at cluster scope. */
export interface Permission {
  verb: string;
  group: string;
  resource: string;
  namespace: string | null;
}

type Json = Record<string, unknown>;

export interface RbacObjects {
  clusterRoles: Json[];
  clusterRoleBindings: Json[];
  roles: Json[];
  roleBindings: Json[];
}

export function userName(subject: Subject): string {
  return `system:serviceaccount:${subject.namespace}:${subject.name}`;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function meta(object: Json): { name?: unknown; namespace?: unknown } {
  return typeof object.metadata === 'object' && object.metadata !== null ? (object.metadata as Json) : {};
}

/** Whether a binding's subjects include the ServiceAccount, directly or through its groups. */
function names(binding: Json, subject: Subject, bindingNamespace: string | null): boolean {
  const subjects = Array.isArray(binding.subjects) ? (binding.subjects as Json[]) : [];
  const groups = ['system:serviceaccounts', `system:serviceaccounts:${subject.namespace}`, 'system:authenticated'];
  return subjects.some((s) => {
    if (s.kind === 'ServiceAccount') return s.name === subject.name && (s.namespace ?? bindingNamespace) === subject.namespace;
    if (s.kind === 'User') return s.name === userName(subject);
    if (s.kind === 'Group') return groups.includes(String(s.name));
    return false;
  });
}

function ruleAllows(rule: Json, permission: Permission, name: string | null): boolean {
  const [resource, sub] = permission.resource.split('/') as [string, string | undefined];
  const verbs = strings(rule.verbs);
  const groups = strings(rule.apiGroups);
  const resources = strings(rule.resources);
  const resourceNames = strings(rule.resourceNames);
  const resourceMatches = resources.some(
    (r) => r === '*' || r === permission.resource || (sub !== undefined && (r === `${resource}/*` || r === `*/${sub}`)),
  );
  return (
    (verbs.includes('*') || verbs.includes(permission.verb)) &&
    (groups.includes('*') || groups.includes(permission.group)) &&
    resourceMatches &&
    (resourceNames.length === 0 || (name !== null && resourceNames.includes(name)))
  );
}

function rulesOf(role: Json | undefined): Json[] {
  return role && Array.isArray(role.rules) ? (role.rules as Json[]) : [];
}

/** Whether `subject` may do `permission` (on the object `name`, when the request names one). */
export function allows(objects: RbacObjects, subject: Subject, permission: Permission, name: string | null): boolean {
  const clusterRole = (roleName: unknown) => objects.clusterRoles.find((r) => meta(r).name === roleName);
  const grants = (rules: Json[]) => rules.some((rule) => ruleAllows(rule, permission, name));
  for (const binding of objects.clusterRoleBindings) {
    const ref = (binding.roleRef ?? {}) as Json;
    if (ref.kind === 'ClusterRole' && names(binding, subject, null) && grants(rulesOf(clusterRole(ref.name)))) return true;
  }
  if (permission.namespace === null) return false;
  for (const binding of objects.roleBindings) {
    const namespace = meta(binding).namespace;
    if (namespace !== permission.namespace || !names(binding, subject, permission.namespace)) continue;
    const ref = (binding.roleRef ?? {}) as Json;
    const role =
      ref.kind === 'ClusterRole'
        ? clusterRole(ref.name)
        : objects.roles.find((r) => meta(r).name === ref.name && meta(r).namespace === namespace);
    if (grants(rulesOf(role))) return true;
  }
  return false;
}

/** The real server's words: `pods "x" is forbidden: User "system:serviceaccount:ns:sa" cannot create resource "pods/eviction" in API group "" in the namespace "ns"`. */
export function forbiddenMessage(subject: Subject, permission: Permission, name: string | null): string {
  const base = permission.resource.split('/')[0]!;
  const what = `${qualified(base, permission.group)}${name === null ? '' : ` "${name}"`}`;
  const scope = permission.namespace === null ? 'at the cluster scope' : `in the namespace "${permission.namespace}"`;
  return `${what} is forbidden: User "${userName(subject)}" cannot ${permission.verb} resource "${permission.resource}" in API group "${permission.group}" ${scope}`;
}

export function permissionKey(p: Permission): string {
  return `${p.verb} ${p.group}/${p.resource} ${p.namespace ?? '*'}`;
}
