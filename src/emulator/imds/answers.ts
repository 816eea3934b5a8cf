// A VM's Scheduled Events answer at one api-version, prepared whole: the body's bytes, its ETag and
// the response headers, so serving it again only writes them (callers.ts keeps them per VM).
import type { OutgoingHttpHeaders } from 'node:http';
import type { DocumentState, Engine } from '../engine/engine.js';
import { renderDocument, serializeDocument } from '../../protocol/render.js';
import type { ApiVersion } from '../../protocol/versions.js';
import { etagOf } from '../../protocol/etag.js';
import { JSON_CONTENT_TYPE } from './responses.js';

export interface RenderedDocument {
  incarnation: number;
  /** The ETag header value: the tag quoted. */
  etag: string;
  body: Buffer;
  /** The headers of a 200 answer with `body`. */
  headers: Readonly<OutgoingHttpHeaders>;
  /** The headers of a 304 answer. */
  notModifiedHeaders: Readonly<OutgoingHttpHeaders>;
}

/** The VM's answer now; throws the engine's not-found error if the VM is gone. */
export function renderAnswer(engine: Engine, vm: string, version: ApiVersion): RenderedDocument {
  // The document's own incarnation tags it: it is read together with its events.
  const doc = engine.documentFor(vm);
  const body = Buffer.from(documentBody(engine, doc, version));
  const etag = etagOf(doc.incarnation);
  return {
    incarnation: doc.incarnation,
    etag,
    body,
    // In the order fastify's routes write them, so both paths answer the same bytes.
    headers: Object.freeze({ etag, 'content-type': JSON_CONTENT_TYPE, 'content-length': body.length }),
    notModifiedHeaders: Object.freeze({ etag }),
  };
}

/** The JSON a VM's document shows at `version`: what IMDS answers, and what any view of "what the VM sees" should show. */
export function documentBody(engine: Engine, doc: DocumentState, version: ApiVersion): string {
  const fleet = engine.fleet;
  // [seed] Events are delivered per tenant, so every resource in this VM's document is in its
  // tenant: role instances of a cloud service, or IaaS VMs (2017-03-01's underscore is theirs alone).
  const roleInstances = fleet.tenantOf(fleet.get(doc.vm)).kind === 'cloudService';
  return serializeDocument(renderDocument(doc.incarnation, doc.events, version, () => roleInstances));
}
