// Errors as the API server sends them: a metav1 Status object with the HTTP code, reason and message
// a real server would use, so client-node's ApiException carries what the agent sees on a cluster.
import { aggregate, errorBody, type FieldError } from './validation.js';

export interface StatusCause {
  reason?: string;
  message: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
}

export class KubeStatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }

  toStatus(): Record<string, unknown> {
    return failureStatus(this.code, this.reason, this.message, this.details);
  }
}

export function failureStatus(code: number, reason: string, message: string, details?: StatusDetails): Record<string, unknown> {
  // metav1.Status: an empty reason (StatusReasonUnknown) is left out, as omitempty leaves it.
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...(reason !== '' ? { reason } : {}),
    ...(details ? { details } : {}),
    code,
  };
}

export function successStatus(code: number, details?: StatusDetails): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', ...(details ? { details } : {}), code };
}

/** The reason a real server gives with each code, for faults a test injects by code alone. */
export function reasonFor(code: number): string {
  const reasons: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    409: 'Conflict',
    410: 'Expired',
    413: 'RequestEntityTooLarge',
    415: 'UnsupportedMediaType',
    422: 'Invalid',
    429: 'TooManyRequests',
    500: 'InternalError',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  return reasons[code] ?? 'Unknown';
}

/** How a resource is named in messages: `pods`, `leases.coordination.k8s.io`. */
export function qualified(resource: string, group: string): string {
  return group === '' ? resource : `${resource}.${group}`;
}

export function notFound(resource: string, group: string, name: string): KubeStatusError {
  return new KubeStatusError(404, 'NotFound', `${qualified(resource, group)} "${name}" not found`, { name, group, kind: resource });
}

export function alreadyExists(resource: string, group: string, name: string): KubeStatusError {
  return new KubeStatusError(409, 'AlreadyExists', `${qualified(resource, group)} "${name}" already exists`, {
    name,
    group,
    kind: resource,
  });
}

export function conflict(resource: string, group: string, name: string, why: string): KubeStatusError {
  return new KubeStatusError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(resource, group)} "${name}": ${why}`, {
    name,
    group,
    kind: resource,
  });
}

export const MODIFIED = 'the object has been modified; please apply your changes to the latest version and try again';

export function badRequest(message: string): KubeStatusError {
  return new KubeStatusError(400, 'BadRequest', message);
}

/**
 * errors.NewInvalid: 422 `Kind.group "name" is invalid: field: body` (several errors as `[a, b]`), each
 * error a cause. `kind` is the group-qualified kind's Kind (for the store's own checks, the resource).
 */
export function invalid(kind: string, group: string, name: string, errors: FieldError[]): KubeStatusError {
  const qualifiedKind = group === '' ? kind : `${kind}.${group}`;
  const message =
    errors.length === 0 ? `${qualifiedKind} "${name}" is invalid` : `${qualifiedKind} "${name}" is invalid: ${aggregate(errors)}`;
  return new KubeStatusError(422, 'Invalid', message, {
    ...(name !== '' ? { name } : {}),
    ...(group !== '' ? { group } : {}),
    ...(kind !== '' ? { kind } : {}),
    causes: errors.map((e) => ({ reason: e.type, message: errorBody(e), field: e.field })),
  });
}

/** errors.NewGenericServerResponse(422, …): what a JSON patch that does not apply gets, its reason dropped. */
export function patchNotApplied(): KubeStatusError {
  return new KubeStatusError(422, 'Invalid', 'the server rejected our request due to an error in our request', {});
}

/** An error that is no Status (e.g. from storage): 500 with the error's text and no reason. */
export function internalError(message: string): KubeStatusError {
  return new KubeStatusError(500, '', message);
}

/** negotiation.NewUnsupportedMediaTypeError. */
export function unsupportedMediaType(accepted: string[]): KubeStatusError {
  return new KubeStatusError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );
}
