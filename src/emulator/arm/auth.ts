// Who may call the ARM routes: ARM's own rule, a bearer token always, whatever the control API's
// own token setting is. A token is taken when this emulator signed it for ARM's audience, or when it
// is the control token (--token) the emulator was given.
import { ARM_AUDIENCES, ARM_AUTH_ERRORS, type ArmErrorBody } from '../../protocol/arm.js';
import { bearerMatcher } from '../../shared/bearer.js';
import type { TokenIssuer } from '../imds/managed-identity.js';

/** Why a request is refused: always 401, ARM's body, and RFC 6750's challenge. */
export interface ArmAuthRefusal {
  status: 401;
  body: ArmErrorBody;
  /** [choice] RFC 6750 §3: `Bearer`, with `error="invalid_token"` once a token was sent. */
  wwwAuthenticate: string;
}

export interface ArmAuthOptions {
  /** The emulator's managed identity issuer; without one, only the control token is taken. */
  tokens: TokenIssuer | undefined;
  /** The control API's token, when the emulator has one. */
  controlToken: string | undefined;
}

// RFC 6750's b64token after "Bearer", any case, spaces around.
const BEARER = /^Bearer[ \t]+([A-Za-z0-9\-._~+/]+=*)[ \t]*$/i;

/** Returns a check of an Authorization header: undefined when the caller is let in, else ARM's refusal. */
export function armAuthenticator(options: ArmAuthOptions): (header: string | undefined) => ArmAuthRefusal | undefined {
  const isControlToken = options.controlToken ? bearerMatcher(options.controlToken) : () => false;
  // [azure] ARM compares audiences exactly, trailing slash included (AzureAD/azure-activedirectory-library-for-python#60).
  const audiences = new Set(ARM_AUDIENCES);
  return (header) => {
    if (header === undefined || header === '') return refuse(ARM_AUTH_ERRORS.missingHeader(), false);
    // [choice] The control token opens the ARM routes too: whoever may drive the control API may approve through it.
    if (isControlToken(header)) return undefined;
    const token = BEARER.exec(header)?.[1];
    if (token === undefined) return refuse(ARM_AUTH_ERRORS.invalidHeader(), false);
    // [choice] A token that is not this emulator's, or not valid yet (nbf ahead), is "invalid", as ARM calls one it cannot use.
    const check = options.tokens?.verify(token);
    if (check === undefined || (!check.ok && check.reason !== 'expired')) return refuse(ARM_AUTH_ERRORS.invalidToken(), true);
    if (!check.ok) return refuse(ARM_AUTH_ERRORS.expired(check.expiredAt, check.now), true);
    const aud = check.claims.aud;
    if (typeof aud !== 'string' || !audiences.has(aud)) return refuse(ARM_AUTH_ERRORS.wrongAudience(String(aud)), true);
    return undefined;
  };
}

function refuse(body: ArmErrorBody, tokenSent: boolean): ArmAuthRefusal {
  const challenge = tokenSent ? `Bearer error="invalid_token", error_description="${body.error.message.replace(/"/g, "'")}"` : 'Bearer';
  return { status: 401, body, wwwAuthenticate: challenge };
}
