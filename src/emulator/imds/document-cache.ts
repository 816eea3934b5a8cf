// Each VM's answer per api-version, prepared once per change: the body's bytes, its ETag and the
// response headers, so a GET only looks them up. Entries go when the engine reports the VM's
// document changed; the incarnation is checked on every read too, so no path that moves it unreported
// (a restored state) can serve an old answer.
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

interface VmEntry {
  incarnation: number;
  versions: Map<ApiVersion, RenderedDocument>;
}

export class DocumentCache {
  readonly #byVm = new Map<string, VmEntry>();
  readonly #unsubscribe: () => void;

  constructor(private readonly engine: Engine) {
    // Changed and removed VMs are forgotten at once, so the cache never outgrows the fleet.
    this.#unsubscribe = engine.onChange((vms) => {
      for (const name of vms) this.#byVm.delete(name);
    });
  }

  /** The VM's answer now; throws the engine's not-found error if the VM is gone. */
  get(vm: string, version: ApiVersion): RenderedDocument {
    const incarnation = this.engine.incarnationOf(vm);
    const entry = this.#byVm.get(vm);
    if (entry !== undefined && entry.incarnation === incarnation) {
      const hit = entry.versions.get(version);
      if (hit !== undefined) return hit;
    }
    return this.#render(vm, version);
  }

  /** Stops listening to the engine. */
  close(): void {
    this.#unsubscribe();
    this.#byVm.clear();
  }

  #render(vm: string, version: ApiVersion): RenderedDocument {
    // The document's own incarnation is the key: it is read together with its events.
    const doc = this.engine.documentFor(vm);
    const body = Buffer.from(documentBody(this.engine, doc, version));
    const etag = etagOf(doc.incarnation);
    const rendered: RenderedDocument = {
      incarnation: doc.incarnation,
      etag,
      body,
      // In the order fastify's routes write them, so both paths answer the same bytes.
      headers: Object.freeze({ etag, 'content-type': JSON_CONTENT_TYPE, 'content-length': body.length }),
      notModifiedHeaders: Object.freeze({ etag }),
    };
    let entry = this.#byVm.get(vm);
    if (entry === undefined || entry.incarnation !== doc.incarnation) {
      entry = { incarnation: doc.incarnation, versions: new Map() };
      this.#byVm.set(vm, entry);
    }
    entry.versions.set(version, rendered);
    return rendered;
  }
}

/** The JSON a VM's document shows at `version`: what IMDS answers, and what any view of "what the VM sees" should show. */
export function documentBody(engine: Engine, doc: DocumentState, version: ApiVersion): string {
  const fleet = engine.fleet;
  // [seed] Events are delivered per tenant, so every resource in this VM's document is in its
  // tenant: role instances of a cloud service, or IaaS VMs (2017-03-01's underscore is theirs alone).
  const roleInstances = fleet.tenantOf(fleet.get(doc.vm)).kind === 'cloudService';
  return serializeDocument(renderDocument(doc.incarnation, doc.events, version, () => roleInstances));
}
