// What IMDS keeps for each VM that asks: the VM, its rate-limit bucket and its answers rendered
// since its document last changed, found with one lookup by name. With 10k VMs each lookup by name
// costs a request a few cache misses (0.1-0.3 µs each, measured by `npm run bench`), and a whole
// answer may cost only about 2 µs more than a bare server's, so the hot path makes one lookup, not five.
// A caller is dropped when the engine reports its VM's document changed, which it does for every
// change, removal and restore; a read trusts that and checks nothing else.
import type { ApiVersion } from '../../protocol/versions.js';
import type { Engine } from '../engine/engine.js';
import type { Vm } from '../engine/fleet.js';
import { renderAnswer, type RenderedDocument } from './answers.js';
import type { Identifier } from './identity.js';
import type { Bucket, RateLimiter } from './rate-limit.js';

export interface Caller {
  readonly vm: Vm;
  /** The VM's bucket in the rate limiter: the same one for as long as the limiter lives. */
  readonly bucket: Bucket;
  /** Answers by api-version; null once the VM's document has changed (a held request may still hold the caller). */
  answers: Map<ApiVersion, RenderedDocument> | null;
}

export class Callers {
  readonly #byName = new Map<string, Caller>();
  readonly #unsubscribe: () => void;

  constructor(
    private readonly engine: Engine,
    private readonly identifier: Identifier,
    private readonly rateLimiter: RateLimiter,
  ) {
    // Changed and removed VMs are forgotten at once, so the table never outgrows the fleet.
    this.#unsubscribe = engine.onChange((vms) => {
      for (const name of vms) {
        const caller = this.#byName.get(name);
        if (caller === undefined) continue;
        caller.answers = null;
        this.#byName.delete(name);
      }
    });
  }

  /** The VM asking (SPEC §4, as `Identifier.vmOf`), or undefined: then `identifier.refusal` says why. */
  of(remoteAddress: string | undefined, prefixName: string | undefined): Caller | undefined {
    // A source address that names a VM comes first; only when it names none does the prefix count.
    if (prefixName !== undefined && (remoteAddress === undefined || this.engine.fleet.byAddress(remoteAddress) === undefined)) {
      return this.#byName.get(prefixName) ?? this.#enter(this.engine.fleet.vms.get(prefixName));
    }
    const vm = this.identifier.vmOf(remoteAddress, prefixName);
    if (vm === undefined) return undefined;
    const caller = this.#byName.get(vm.name);
    return caller !== undefined && caller.vm === vm ? caller : this.#enter(vm);
  }

  /** The caller's answer now; throws the engine's not-found error if its VM is gone. */
  answer(caller: Caller, version: ApiVersion): RenderedDocument {
    // Transitions now due are applied first; their changes drop the callers they make stale.
    this.engine.tick();
    const hit = caller.answers?.get(version);
    if (hit !== undefined) return hit;
    const rendered = renderAnswer(this.engine, caller.vm.name, version);
    caller.answers?.set(version, rendered);
    return rendered;
  }

  /** Stops listening to the engine. */
  close(): void {
    this.#unsubscribe();
    this.#byName.clear();
  }

  #enter(vm: Vm | undefined): Caller | undefined {
    if (vm === undefined) return undefined;
    const caller: Caller = { vm, bucket: this.rateLimiter.bucket(vm.name), answers: new Map() };
    this.#byName.set(vm.name, caller);
    return caller;
  }
}
