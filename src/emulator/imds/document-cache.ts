// Serialized documents per (VM, api-version), re-rendered only when the VM's incarnation moves.
import type { Engine } from '../engine/engine.js';
import { renderDocument, serializeDocument } from '../../protocol/render.js';
import type { ApiVersion } from '../../protocol/versions.js';
import { etagOf } from '../../protocol/etag.js';

export interface RenderedDocument {
  incarnation: number;
  /** The ETag header value: the tag quoted. */
  etag: string;
  body: Buffer;
}

interface VmEntry {
  incarnation: number;
  versions: Map<ApiVersion, RenderedDocument>;
}

/** Entries of VMs no longer in the fleet are swept once the cache outgrows the fleet by this much. */
const SWEEP_SLACK = 64;

export class DocumentCache {
  readonly #byVm = new Map<string, VmEntry>();

  constructor(private readonly engine: Engine) {}

  get(vm: string, version: ApiVersion): RenderedDocument {
    const incarnation = this.engine.incarnationOf(vm);
    const entry = this.#byVm.get(vm);
    if (entry !== undefined && entry.incarnation === incarnation) {
      const hit = entry.versions.get(version);
      if (hit !== undefined) return hit;
    }
    return this.#render(vm, version);
  }

  #render(vm: string, version: ApiVersion): RenderedDocument {
    // The document's own incarnation is the key: it is read together with its events.
    const doc = this.engine.documentFor(vm);
    const rendered: RenderedDocument = {
      incarnation: doc.incarnation,
      etag: etagOf(doc.incarnation),
      body: Buffer.from(serializeDocument(renderDocument(doc.incarnation, doc.events, version))),
    };
    let entry = this.#byVm.get(vm);
    if (entry === undefined || entry.incarnation !== doc.incarnation) {
      entry = { incarnation: doc.incarnation, versions: new Map() };
      this.#byVm.set(vm, entry);
      if (this.#byVm.size > this.engine.fleet.size + SWEEP_SLACK) this.#sweep();
    }
    entry.versions.set(version, rendered);
    return rendered;
  }

  #sweep(): void {
    for (const name of this.#byVm.keys()) if (!this.engine.fleet.vms.has(name)) this.#byVm.delete(name);
  }
}
