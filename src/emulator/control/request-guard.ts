// Who may drive the control API without a token: clients on this machine (or named by the user),
// not other web pages. A page on any site can send a bodiless POST to 127.0.0.1 (Origin, Sec-Fetch-Site)
// and a DNS-rebinding name makes the browser treat the API as that site's own (Host).
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorBody } from '../http/error-map.js';

/** What the guard looks at in a request; a plain object so the rules can be tested without a server. */
export interface RequestFacts {
  method: string;
  host: string | undefined;
  origin: string | undefined;
  secFetchSite: string | undefined;
  secFetchMode: string | undefined;
  /** The local address the connection arrived on, when there is a real socket. */
  localAddress: string | undefined;
}

// A Host header is a name or an address, with an optional port; anything else (userinfo, a path) is refused.
const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{0,5}))?$/;

/**
 * The form names are compared in: lower case, IPv4 dotted (127.1 → 127.0.0.1, as browsers and
 * inet_aton read it), IPv6 compressed in brackets, IPv4-mapped IPv6 as IPv4, no trailing dot.
 * Undefined when `name` is not a host name or address.
 */
function canonicalName(name: string): string | undefined {
  let hostname: string;
  try {
    hostname = new URL(`http://${name}/`).hostname;
  } catch {
    return undefined;
  }
  const mapped = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(hostname);
  if (mapped) {
    const hi = parseInt(mapped[1]!, 16);
    const lo = parseInt(mapped[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
}

/**
 * Names and addresses that reach only this machine. [choice] `*.localhost` counts: RFC 6761 reserves
 * it for loopback, browsers resolve it to loopback themselves, and nobody can register it to rebind it.
 */
export function isLoopbackName(canonical: string): boolean {
  return (
    canonical === 'localhost' ||
    canonical.endsWith('.localhost') ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(canonical) ||
    canonical === '[::1]' ||
    canonical === '[::ffff:7f00:1]'
  );
}

/** Whether a bind address or host name (bracketed IPv6 or not) reaches only this machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  const canonical = canonicalName(isIP(bare) === 6 ? `[${bare}]` : bare);
  return canonical !== undefined && isLoopbackName(canonical);
}

/** Checks a name for `--allow-host` / `allowHosts` and returns it as compared; throws saying what is wrong. */
export function normalizeAllowedHost(text: string): string {
  const trimmed = text.trim();
  // A bare IPv6 address is accepted without its brackets.
  const bracketed = isIP(trimmed) === 6 ? `[${trimmed}]` : trimmed;
  const m = HOST_HEADER.exec(bracketed);
  if (m?.[2] !== undefined) throw new Error(`"${text}" has a port; give the name or address without a port`);
  const canonical = m ? canonicalName(m[1]!) : undefined;
  if (canonical === undefined || canonical === '') throw new Error(`"${text}" is not a host name or address`);
  return canonical;
}

function canonicalEntry(entry: string): string | undefined {
  try {
    return normalizeAllowedHost(entry);
  } catch {
    return undefined;
  }
}

/** The local address of a socket as a Host name would give it. */
function canonicalAddress(address: string | undefined): string | undefined {
  if (address === undefined || isIP(address) === 0) return undefined;
  return canonicalName(isIP(address) === 6 ? `[${address}]` : address);
}

/** Sec-Fetch-Site values a browser sends for the API's own page, or for an address the user typed. */
const OWN_SITES = new Set(['same-origin', 'none']);

/** The way out that always works, when the emulator has no token yet. */
const SET_A_TOKEN = ' Or give the emulator a token (FOREWARN_TOKEN or --token-file) and send it.';

/**
 * Why the request is refused, or undefined when it may go on. `allowHosts` are names as the user gave them;
 * `tokenSet` leaves out the advice to set one. [choice] The Host's port is not compared: port forwarding
 * changes it, and rebinding is about the name.
 */
export function refusal(facts: RequestFacts, allowHosts: readonly string[], tokenSet = false): string | undefined {
  const orToken = tokenSet ? '' : SET_A_TOKEN;
  // [choice] No Host at all (HTTP/1.0) cannot come from a browser, which is what the guard is about.
  if (facts.host !== undefined) {
    const m = HOST_HEADER.exec(facts.host);
    const name = m ? canonicalName(m[1]!) : undefined;
    if (name === undefined || name === '') return `Host "${facts.host}" is not a host name or address`;
    const allowed =
      isLoopbackName(name) || allowHosts.some((entry) => canonicalEntry(entry) === name) || name === canonicalAddress(facts.localAddress);
    if (!allowed) {
      return (
        `Host "${facts.host}" is not a loopback name or address, nor one this emulator was told to allow: ` +
        'a web page may be using DNS rebinding to reach the control API. ' +
        `To use this name, start the emulator with --allow-host ${name} (allowHosts in the library).${orToken}`
      );
    }
  }
  if (facts.origin !== undefined) {
    // The page's own requests carry its origin: http:// and the Host it was loaded from.
    const own = facts.host === undefined ? undefined : ownOrigin(facts.host);
    if (own === undefined || !sameOrigin(facts.origin, own)) {
      return (
        `Origin "${facts.origin}" is not the control API's own origin (${own ?? 'unknown without a Host header'}): ` +
        'requests from other web pages are refused. Call it without an Origin header (curl, forewarn trigger) ' +
        `or from the dashboard at its own address.${orToken}`
      );
    }
  }
  const site = facts.secFetchSite?.toLowerCase();
  if (site !== undefined && !OWN_SITES.has(site)) {
    // [choice] A link followed from another site shows the answer to the user, never to that site, and GET changes nothing.
    const navigation = (facts.method === 'GET' || facts.method === 'HEAD') && facts.secFetchMode?.toLowerCase() === 'navigate';
    if (!navigation) {
      return (
        `Sec-Fetch-Site "${facts.secFetchSite}": requests from other web pages are refused. ` +
        `Use the dashboard at its own address or a client that is not a browser (curl, forewarn trigger).${orToken}`
      );
    }
  }
  return undefined;
}

function ownOrigin(host: string): string | undefined {
  try {
    return new URL(`http://${host}/`).origin;
  } catch {
    return undefined;
  }
}

/** Origins compared as browsers serialize them: scheme, host and port, the default port left out; `null` never matches. */
function sameOrigin(origin: string, own: string): boolean {
  try {
    const url = new URL(origin);
    return url.origin === own && url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

export function factsOf(request: FastifyRequest): RequestFacts {
  const h = request.headers;
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : v);
  return {
    method: request.method,
    host: one(h.host),
    origin: one(h.origin),
    secFetchSite: one(h['sec-fetch-site']),
    secFetchMode: one(h['sec-fetch-mode']),
    localAddress: request.socket?.localAddress,
  };
}

export interface RequestGuardOptions {
  /**
   * Extra names or addresses for the Host header (see normalizeAllowedHost). Read at each request,
   * so the emulator can add the name it listens on once it knows it.
   */
  allowHosts: readonly string[];
  /** Requests a configured token decides on instead: the guard lets them through to the token check. */
  tokenDecides?: ((request: FastifyRequest) => boolean) | undefined;
  /**
   * Requests that always need a token of their own, whether the API has one or not (ARM's routes): the
   * guard lets them through to that check, as it does when a token decides.
   */
  ownToken?: ((request: FastifyRequest) => boolean) | undefined;
}

/** Refuses, with 403 and a reason, requests from other web pages and under names that are not this machine's. */
export function registerRequestGuard(app: FastifyInstance, options: RequestGuardOptions): void {
  options.allowHosts.forEach((entry, i) => {
    try {
      normalizeAllowedHost(entry);
    } catch (err) {
      throw new Error(`allowHosts[${i}]: ${(err as Error).message}`, { cause: err });
    }
  });
  app.addHook('onRequest', async (request, reply) => {
    if (options.tokenDecides?.(request) || options.ownToken?.(request)) return;
    const why = refusal(factsOf(request), options.allowHosts, options.tokenDecides !== undefined);
    if (why === undefined) return;
    reply.code(403);
    return reply.send(errorBody(why));
  });
}
