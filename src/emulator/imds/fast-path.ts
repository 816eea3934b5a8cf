// The hot path: GET /metadata/scheduledevents answered by a bare node:http listener placed before
// fastify. It answers only requests in their plainest form that pass every request rule (SPEC §1,
// §4), plus the 429 of the rate limit; anything else (an error to answer, a fault to inject, an
// encoded or unusual URL, a repeated header) goes on untouched to fastify's routes, which own every
// other answer. Per request it allocates nothing of its own beyond the version and VM name strings.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { ifNoneMatchHits } from '../../protocol/etag.js';
import { featuresOf, isApiVersion, type ApiVersion } from '../../protocol/versions.js';
import type { ImdsContext } from '../context.js';
import { EngineError } from '../engine/errors.js';
import type { Caller, Callers } from './callers.js';
import { activationHoldMs, holdUntil, isMetadataTrue } from './request-rules.js';
import { ERROR_BODIES, writeEngineError, writeJson } from './responses.js';

/** True if the request was answered (or is being held); false hands it on untouched. */
export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

const EVENTS = '/metadata/scheduledevents';
const PREFIX = '/vms/';
const QUERY = '?api-version=';

export interface FastPathOptions {
  callers: Callers;
  /** Where an unexpected error is reported before the 500 answer. */
  logError: (error: unknown) => void;
}

export function eventsFastPath(ctx: ImdsContext, { callers, logError }: FastPathOptions): FastPath {
  const { engine, faults, rateLimiter } = ctx;

  function answer(res: ServerResponse, caller: Caller, version: ApiVersion, ifNoneMatch: string | undefined): void {
    try {
      const doc = callers.answer(caller, version);
      if (ifNoneMatch !== undefined && ifNoneMatchHits(ifNoneMatch, doc.incarnation)) {
        res.writeHead(304, doc.notModifiedHeaders);
        res.end();
        return;
      }
      res.writeHead(200, doc.headers);
      res.end(doc.body);
    } catch (err) {
      fail(res, err);
    }
  }

  function fail(res: ServerResponse, err: unknown): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof EngineError) return writeEngineError(res, err);
    logError(err);
    writeJson(res, 500, ERROR_BODIES.internal);
  }

  return function fastPath(req, res) {
    if (req.method !== 'GET') return false;
    const url = req.url ?? '';
    // The query is exactly `api-version=V` with V a known version; anything else is the routes' to judge.
    const q = url.indexOf('?');
    if (q < 0 || !url.startsWith(QUERY, q)) return false;
    const version = url.slice(q + QUERY.length);
    if (!isApiVersion(version)) return false;
    let name: string | undefined;
    if (q !== EVENTS.length || !url.startsWith(EVENTS)) {
      const end = q - EVENTS.length;
      if (end <= PREFIX.length || !url.startsWith(PREFIX) || !url.startsWith(EVENTS, end)) return false;
      name = url.slice(PREFIX.length, end);
      // A name the router would decode, or not take as one segment, is left to it.
      if (name.includes('/') || name.includes('%')) return false;
    }

    let metadata: string | undefined;
    let ifNoneMatch: string | undefined;
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const header = raw[i]!;
      if (header.length === 8 && sameName(header, 'metadata')) {
        if (metadata !== undefined) return false;
        metadata = raw[i + 1];
      } else if (header.length === 13 && sameName(header, 'if-none-match')) {
        if (ifNoneMatch !== undefined) return false;
        ifNoneMatch = raw[i + 1];
      } else if (header.length === 15 && sameName(header, 'x-forwarded-for')) {
        return false;
      }
    }
    if (featuresOf(version).metadataHeaderRequired && !isMetadataTrue(metadata)) return false;

    let caller: Caller | undefined;
    try {
      caller = callers.of(req.socket.remoteAddress, name);
      // Faults are injected by the routes alone; nothing has been counted against the VM yet.
      if (caller === undefined || faults.size > 0) return false;
      if (!rateLimiter.take(caller.bucket)) {
        writeJson(res, 429, ERROR_BODIES.tooManyRequests);
        return true;
      }
      const holdMs = activationHoldMs(engine, caller.vm.name);
      if (holdMs > 0) {
        const held = caller;
        holdUntil(engine, engine.now() + holdMs, () => answer(res, held, version, ifNoneMatch));
        return true;
      }
    } catch (err) {
      fail(res, err);
      return true;
    }
    answer(res, caller, version, ifNoneMatch);
    return true;
  };
}

/** Puts `fast` in front of fastify's own request listener on `server`: what it does not answer goes on to fastify. */
export function placeBefore(server: Server, fast: FastPath): void {
  const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  if (listeners.length !== 1) throw new Error(`expected fastify's one request listener, found ${listeners.length}`);
  const routes = listeners[0]!;
  server.removeListener('request', routes);
  server.on('request', function onRequest(this: Server, req: IncomingMessage, res: ServerResponse) {
    if (!fast(req, res)) routes.call(this, req, res);
  });
}

/** A header name against a lowercase one of the same length, ignoring case, without allocating. */
function sameName(name: string, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    // Header names are tokens: of the letters and '-' here, `| 0x20` matches only their own two cases.
    if ((name.charCodeAt(i) | 0x20) !== lower.charCodeAt(i)) return false;
  }
  return true;
}
