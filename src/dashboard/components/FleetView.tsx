// Tenants, then fault domains, then VMs; and the hosts with the tenants they carry.
import type { DeletedVmResponse, FleetResponse, ImpactEntry, VmResponse } from '../api.js';

interface Props {
  fleet: FleetResponse | null;
  /** The last real impact on each VM's bound process. */
  impacts?: Readonly<Record<string, ImpactEntry>>;
  selected: ReadonlySet<string>;
  onToggle(vm: string): void;
  onSelectOnly(vms: readonly string[]): void;
}

type Row = { kind: 'live'; vm: VmResponse } | { kind: 'deleted'; vm: DeletedVmResponse };

const ACTIVATION_LABEL = { enabled: 'activated', enabling: 'activating', disabled: 'not activated' } as const;

export function FleetView({ fleet, impacts = {}, selected, onToggle, onSelectOnly }: Props) {
  if (!fleet) return <p class="muted">Loading the fleet…</p>;
  const tenants = new Map<string, { kind: string; faultDomainCount: number; rows: Row[] }>();
  for (const t of fleet.tenants) tenants.set(t.name, { kind: t.kind, faultDomainCount: t.faultDomainCount, rows: [] });
  for (const vm of fleet.vms) tenants.get(vm.tenant)?.rows.push({ kind: 'live', vm });
  // A tenant whose last VM was deleted is gone from the fleet; its deleted VMs still show under its name.
  for (const vm of fleet.deleted) {
    let t = tenants.get(vm.tenant);
    if (!t) tenants.set(vm.tenant, (t = { kind: 'gone', faultDomainCount: vm.faultDomain + 1, rows: [] }));
    t.rows.push({ kind: 'deleted', vm });
  }
  if (tenants.size === 0) return <p class="muted">The fleet is empty.</p>;

  return (
    <div class="fleet">
      <ul class="tenants" aria-label="Tenants">
        {[...tenants.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([name, t]) => {
            const domains = new Map<number, Row[]>();
            for (const row of t.rows) {
              const list = domains.get(row.vm.faultDomain);
              if (list) list.push(row);
              else domains.set(row.vm.faultDomain, [row]);
            }
            const live = t.rows.filter((r) => r.kind === 'live').map((r) => r.vm.name);
            return (
              <li class="tenant" key={name} data-tenant={name}>
                <div class="tenant-head">
                  <span class="tenant-name">{name}</span>
                  <span class="muted">
                    {t.kind === 'gone'
                      ? 'no VMs left'
                      : `${t.kind}, ${t.faultDomainCount} fault domain${t.faultDomainCount === 1 ? '' : 's'}`}
                  </span>
                  {live.length > 1 && (
                    <button type="button" class="link" onClick={() => onSelectOnly(live)} aria-label={`Select every VM of ${name}`}>
                      select all
                    </button>
                  )}
                </div>
                <ul class="domains">
                  {[...domains.entries()]
                    .sort(([a], [b]) => a - b)
                    .map(([fd, rows]) => (
                      <li key={fd} class="domain" data-fault-domain={fd}>
                        <span class="fd-label">FD {fd}</span>
                        <ul class="vms">
                          {rows.map((row) => (
                            <VmItem
                              key={row.vm.name}
                              row={row}
                              checked={selected.has(row.vm.name)}
                              impact={impacts[row.vm.name]}
                              onToggle={onToggle}
                            />
                          ))}
                        </ul>
                      </li>
                    ))}
                </ul>
              </li>
            );
          })}
      </ul>
      <h3>Hosts</h3>
      <ul class="hosts" aria-label="Hosts">
        {fleet.hosts.map((h) => (
          <li key={h.name} data-host={h.name}>
            <span class="host-name">{h.name}</span>{' '}
            <span class="muted">
              {h.vms.length} VM{h.vms.length === 1 ? '' : 's'} · {h.tenants.length > 1 ? 'shared by ' : 'carries '}
              {h.tenants.join(', ')}
            </span>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** `SIGSTOP pid 4242`, `started pid 4250`, `exited pid 4242`: what real impact last did. */
export function impactLabel(entry: ImpactEntry): string {
  const what = entry.signal ?? (entry.action === 'start' ? 'started' : entry.action === 'exit' ? 'exited' : entry.action);
  return entry.pid === null ? what : `${what} pid ${entry.pid}`;
}

function VmItem({
  row,
  checked,
  impact,
  onToggle,
}: {
  row: Row;
  checked: boolean;
  impact?: ImpactEntry | undefined;
  onToggle(vm: string): void;
}) {
  if (row.kind === 'deleted') {
    return (
      <li class="vm deleted" data-vm={row.vm.name} data-state="deleted">
        <span class="vm-name">{row.vm.name}</span> <span class="state state-deleted">deleted</span>
      </li>
    );
  }
  const vm = row.vm;
  const id = `vm-select-${vm.name}`;
  return (
    <li class="vm" data-vm={vm.name} data-state={vm.state}>
      <input type="checkbox" id={id} checked={checked} onChange={() => onToggle(vm.name)} />
      <label for={id} class="vm-name">
        {vm.name}
      </label>{' '}
      <span class={`state state-${vm.state}`}>{vm.state}</span>{' '}
      <span class="muted" title="DocumentIncarnation this VM sees now">
        inc {vm.incarnation}
      </span>{' '}
      <span class={`activation activation-${vm.scheduledEvents}`} title="Scheduled Events activation">
        {ACTIVATION_LABEL[vm.scheduledEvents]}
      </span>
      {vm.priority === 'Spot' && <span class="tag">Spot</span>}
      {impact && (
        <span class={`impact impact-${impact.action}`} title={`${impact.detail} (${impact.at})`}>
          {impactLabel(impact)}
        </span>
      )}
    </li>
  );
}
