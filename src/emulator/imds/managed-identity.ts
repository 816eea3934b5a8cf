// /metadata/identity/oauth2/token: an access token for the VM's managed identity, as IMDS hands one out,
// so @azure/identity's ManagedIdentityCredential works against the emulator and Azurite (--oauth basic) takes
// the token. The request rules all IMDS paths share (X-Forwarded-For, the VM, rate limit, faults) stay in server.ts.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { checkInstanceApiVersion } from '../../protocol/versions.js';
import { wallClock } from '../../shared/clock.js';
import type { Vm } from '../engine/fleet.js';
import { armIdsOf } from './compute.js';
import { stableGuid } from './instance-defaults.js';

/** [imds] The docs' "use version 2018-02-01 or greater"; the later instance api-versions are taken too. */
export const IDENTITY_MIN_API_VERSION = '2018-02-01';

/**
 * [choice] Azure does not document the identity endpoint's answer to a bad api-version: it gets IMDS's
 * own (as /metadata/instance does), and an instance api-version older than 2018-02-01 counts as invalid.
 */
export function checkIdentityApiVersion(raw: unknown): ReturnType<typeof checkInstanceApiVersion> {
  const check = checkInstanceApiVersion(raw);
  return check.ok && check.version < IDENTITY_MIN_API_VERSION ? TOO_OLD : check;
}
/** Not a string, so IMDS's "invalid" body rather than its "missing" one. */
const TOO_OLD = checkInstanceApiVersion(null);

/** [imds] The identity endpoint answers errors in OAuth's shape, not IMDS's `{"error": message}`. */
const oauthError = (description: string) => JSON.stringify({ error: 'invalid_request', error_description: description });

export const IDENTITY_ERROR_BODIES = {
  metadataHeader: oauthError('Required metadata header not specified'),
  resourceMissing: oauthError('Required audience parameter not specified'),
  identityNotFound: oauthError('Identity not found'),
} as const;

/**
 * [choice] Fleets cannot name a Microsoft Entra tenant, so every managed identity is in this one (all zeros,
 * as the default subscription is).
 */
export const DEFAULT_TENANT_ID = '00000000-0000-0000-0000-000000000000';

/** [imds] Managed identity tokens last 24 hours; `expires_in` counts from issue. */
const LIFETIME_S = 86_399;
/** [choice] iat and nbf lie 5 minutes back, as Entra ID's do, so a verifier's clock running behind still takes the token. */
const SKEW_S = 300;

export interface ManagedIdentity {
  tenantId: string;
  /** The application id (`appid`, `client_id`). */
  clientId: string;
  /** The service principal's object id (`oid`, `sub`). */
  objectId: string;
  /** What `xms_mirid` names: the VM, or its scale set, for a system-assigned identity. */
  resourceId: string;
}

/**
 * [choice] Every VM has a system-assigned identity: fleet files cannot describe identities yet. [imds] A
 * scale set's VMs share the scale set's, which `xms_mirid` names. [choice] Its ids derive from that
 * resource id, so they stay the same across restarts (and for a VM re-created under the same name).
 */
export function systemIdentity(vm: Vm): ManagedIdentity {
  const { scaleSetId, resourceId } = armIdsOf(vm);
  const owner = scaleSetId === '' ? resourceId : scaleSetId;
  // ARM ids are case-insensitive.
  const seed = `${owner.toLowerCase()}/managed-identity`;
  return {
    tenantId: DEFAULT_TENANT_ID,
    clientId: stableGuid(`${seed}/client`),
    objectId: stableGuid(`${seed}/object`),
    resourceId: owner,
  };
}

type Query = Record<string, unknown>;

/**
 * The identity the query picks, or undefined ("Identity not found"). [imds] `client_id`, `object_id` and
 * `msi_res_id` pick a user-assigned identity; [choice] `mi_res_id` is taken as `msi_res_id`, a VM without
 * user-assigned identities finds its system identity by its own ids (ARM ids and GUIDs without case),
 * and every id given must name it.
 */
export function pickIdentity(vm: Vm, query: Query): ManagedIdentity | undefined {
  const identity = systemIdentity(vm);
  const wanted: [unknown, string][] = [
    [query.client_id, identity.clientId],
    [query.object_id, identity.objectId],
    [query.msi_res_id, identity.resourceId],
    [query.mi_res_id, identity.resourceId],
  ];
  for (const [given, own] of wanted) {
    if (given === undefined) continue;
    if (typeof given !== 'string' || given.toLowerCase() !== own.toLowerCase()) return undefined;
  }
  return identity;
}

export type TokenAnswer = { status: 200 | 400; body: string };

/** What verify() makes of a token: its claims, or why it is refused (`expiredAt` in ms for an expired one). */
export type TokenCheck =
  | { ok: true; claims: Record<string, unknown> }
  | { ok: false; reason: 'invalid' }
  | { ok: false; reason: 'expired'; expiredAt: number; now: number }
  | { ok: false; reason: 'not-yet-valid' };

/**
 * Signs tokens with a key of its own, made at start. [choice] HS256 with a random per-emulator key rather
 * than Entra ID's RS256: nothing outside the emulator can verify either, and Azurite's basic OAuth reads the
 * claims without checking the signature, but every JWT parser takes a signed token.
 */
export class TokenIssuer {
  readonly #key: Buffer;
  readonly #now: () => number;

  /** [choice] `now` is real time, not the emulator's clock: the services that check a token's times (Azurite) run on real time. */
  constructor(options: { key?: Buffer; now?: () => number } = {}) {
    this.#key = options.key ?? randomBytes(32);
    this.#now = options.now ?? wallClock;
  }

  /** The answer to a token request from `vm` that has passed the request rules. */
  answer(vm: Vm, query: Query): TokenAnswer {
    const resource = query.resource;
    if (typeof resource !== 'string' || resource === '') return { status: 400, body: IDENTITY_ERROR_BODIES.resourceMissing };
    const identity = pickIdentity(vm, query);
    if (identity === undefined) return { status: 400, body: IDENTITY_ERROR_BODIES.identityNotFound };
    return { status: 200, body: JSON.stringify(this.issue(identity, resource)) };
  }

  /**
   * The token response, numbers as strings as IMDS sends them. [choice] Each request gets a new token,
   * where IMDS hands out a cached one until near its expiry.
   */
  issue(identity: ManagedIdentity, resource: string) {
    const now = Math.floor(this.#now() / 1000);
    const notBefore = now - SKEW_S;
    const expiresOn = now + LIFETIME_S;
    const issuer = `https://sts.windows.net/${identity.tenantId}/`;
    // An Entra ID v1 app-only token's claims, as a managed identity's carries them.
    const claims = {
      aud: resource,
      iss: issuer,
      iat: notBefore,
      nbf: notBefore,
      exp: expiresOn,
      appid: identity.clientId,
      appidacr: '2',
      idp: issuer,
      idtyp: 'app',
      oid: identity.objectId,
      sub: identity.objectId,
      tid: identity.tenantId,
      uti: randomBytes(16).toString('base64url'),
      ver: '1.0',
      xms_mirid: identity.resourceId,
    };
    return {
      access_token: this.sign(claims),
      client_id: identity.clientId,
      expires_in: String(LIFETIME_S),
      expires_on: String(expiresOn),
      ext_expires_in: String(LIFETIME_S),
      not_before: String(notBefore),
      resource,
      token_type: 'Bearer',
    };
  }

  /**
   * Checks a token this issuer signed: a compact JWS with header alg HS256, its signature under this key,
   * and `exp`/`nbf` (seconds) against the issuer's clock. The audience is the caller's to judge.
   */
  verify(token: string): TokenCheck {
    const parts = token.split('.');
    if (parts.length !== 3) return INVALID;
    const [header, payload, signature] = parts as [string, string, string];
    const expected = createHmac('sha256', this.#key).update(`${header}.${payload}`).digest();
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return INVALID;
    const head = parseJson(header);
    const claims = parseJson(payload);
    if (head?.alg !== 'HS256' || claims === undefined) return INVALID;
    const now = this.#now();
    const { exp, nbf } = claims;
    if (typeof exp !== 'number' || (nbf !== undefined && typeof nbf !== 'number')) return INVALID;
    if (exp * 1000 <= now) return { ok: false, reason: 'expired', expiredAt: exp * 1000, now };
    if (typeof nbf === 'number' && nbf * 1000 > now) return { ok: false, reason: 'not-yet-valid' };
    return { ok: true, claims };
  }

  /** A compact JWS (HS256) of `claims`. */
  sign(claims: object): string {
    const header = base64url({ typ: 'JWT', alg: 'HS256' });
    const input = `${header}.${base64url(claims)}`;
    return `${input}.${createHmac('sha256', this.#key).update(input).digest('base64url')}`;
  }
}

const INVALID: TokenCheck = { ok: false, reason: 'invalid' };

/** A base64url JSON object, or undefined when the text is not one. */
function parseJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function base64url(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}
