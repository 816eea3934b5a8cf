// [seed] "Virtual machines in different fault domains will not be affected by routine maintenance at
// the same time": which routine operations hold which fault domains of each tenant, and the check
// that refuses one that would touch another fault domain of a held tenant.
import { conflict } from './errors.js';

export class MaintenanceHolds {
  /** The routine operations running over each tenant, and the fault domains each holds there. */
  readonly #byTenant = new Map<string, Map<string, readonly number[]>>();
  /** The tenants each operation holds, so a release needs no scan. */
  readonly #byOperation = new Map<string, string[]>();

  /**
   * Refuses fault domains of a tenant another running operation holds a different fault domain of
   * ([choice] 409; the same fault domain may share). `typeOf` names the holder in the message.
   */
  check(domains: ReadonlyMap<string, readonly number[]>, typeOf: (operationId: string) => string | undefined): void {
    for (const [tenant, fds] of domains) {
      for (const [running, held] of this.#byTenant.get(tenant) ?? []) {
        if (new Set([...held, ...fds]).size === 1) continue;
        const what = typeOf(running)?.replace('-', ' ') ?? 'routine maintenance';
        throw conflict(`a ${what} is already in progress for tenant '${tenant}' (operation ${running}); one at a time`);
      }
    }
  }

  hold(operationId: string, domains: ReadonlyMap<string, readonly number[]>): void {
    for (const [tenant, fds] of domains) {
      let running = this.#byTenant.get(tenant);
      if (!running) this.#byTenant.set(tenant, (running = new Map()));
      running.set(operationId, fds);
    }
    this.#byOperation.set(operationId, [...domains.keys()]);
  }

  release(operationId: string): void {
    for (const tenant of this.#byOperation.get(operationId) ?? []) {
      const running = this.#byTenant.get(tenant);
      if (running?.delete(operationId) && running.size === 0) this.#byTenant.delete(tenant);
    }
    this.#byOperation.delete(operationId);
  }

  clear(): void {
    this.#byTenant.clear();
    this.#byOperation.clear();
  }
}
