// Live events: what each VM is told, who has approved, and the buttons that move an event on.
import { useState } from 'preact/hooks';
import type { EventResponse } from '../api.js';
import { countdown, dateTime, DAYS_AFTER_MS, duration, fullTime, ms, shortId } from '../format.js';

interface Props {
  events: EventResponse[];
  /** Every VM of each tenant: any of them may approve, as a standby for the one named. */
  tenantVms: ReadonlyMap<string, readonly string[]>;
  now: number;
  busy: boolean;
  onApprove(event: string, vm: string): void;
  onCancel(event: string): void;
  onComplete(event: string): void;
}

export function EventsView({ events, tenantVms, now, busy, onApprove, onCancel, onComplete }: Props) {
  if (events.length === 0)
    return (
      <p class="muted" data-empty="events">
        No live events.
      </p>
    );
  return (
    <div class="scroll">
      <table class="events">
        <caption class="sr-only">Live events</caption>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Type, source</th>
            <th scope="col">Status</th>
            <th scope="col">Resources</th>
            <th scope="col">NotBefore</th>
            <th scope="col">Duration</th>
            <th scope="col">Approved by</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => (
            <EventRow
              key={e.id}
              event={e}
              approvers={[...new Set([...e.resources, ...(tenantVms.get(e.tenant) ?? [])])]}
              now={now}
              busy={busy}
              onApprove={onApprove}
              onCancel={onCancel}
              onComplete={onComplete}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function EventRow({
  event: e,
  approvers,
  now,
  busy,
  onApprove,
  onCancel,
  onComplete,
}: Omit<Props, 'events' | 'tenantVms'> & { event: EventResponse; approvers: string[] }) {
  const [approver, setApprover] = useState(approvers[0] ?? '');
  const scheduled = e.status === 'Scheduled';
  const notBefore = ms(e.notBefore);
  const shared = e.job.tenants.length > 1;
  /** Started by a hardware failure the moment it was created: it was never Scheduled, so no approval was possible. */
  const arrivedStarted = e.startedBy === 'failure';
  const approverId = `approver-${e.id}`;
  return (
    <tr data-event={e.id} data-status={e.status} data-type={e.type}>
      <td data-label="Event">
        <code title={e.id}>{shortId(e.id)}</code>
        <div class="muted small" title={e.description}>
          {e.tenant}
        </div>
      </td>
      <td data-label="Type, source">
        {e.type}
        <div class="muted small">{e.source}</div>
      </td>
      <td data-label="Status">
        <span class={`status status-${e.status.toLowerCase()}`}>{e.status}</span>
        {e.startedBy && <div class="muted small">by {e.startedBy === 'notBefore' ? 'NotBefore' : e.startedBy}</div>}
      </td>
      <td data-label="Resources">{e.resources.join(', ')}</td>
      <td data-label="NotBefore" title={fullTime(notBefore)}>
        {scheduled ? (
          <>
            <span class="countdown" data-countdown={notBefore - now}>
              {countdown(notBefore - now)}
            </span>
            {notBefore - now > DAYS_AFTER_MS && <div class="muted small">{dateTime(notBefore)}</div>}
          </>
        ) : (
          <span class="muted">{e.endsAt ? `ends in ${countdown(ms(e.endsAt) - now)}` : '—'}</span>
        )}
      </td>
      <td data-label="Duration">{duration(e.durationInSeconds)}</td>
      <td data-label="Approved by" class="approvals">
        {arrivedStarted ? (
          // Nothing was ever asked of anyone: the event was Started when it appeared, and cannot be approved.
          <span class="muted" title="This event arrived already Started (a hardware failure): there was nothing to approve.">
            not needed (arrived Started)
          </span>
        ) : (
          <>
            {e.approvals.length === 0 && !shared && <span class="muted">nobody</span>}
            {e.approvals.map((a) => (
              <span key={a.vm} class="approval" title={fullTime(ms(a.at))}>
                {a.vm}
              </span>
            ))}
            {shared && (
              <ul class="job" aria-label="Tenants in this job">
                {e.job.tenants.map((t) => (
                  <li key={t.tenant} class={t.approved ? 'approved' : scheduled ? 'waiting' : 'muted'}>
                    {t.tenant}: {t.approved ? 'approved' : scheduled ? 'waiting' : 'did not approve'}
                  </li>
                ))}
              </ul>
            )}
          </>
        )}
      </td>
      <td data-label="Actions">
        <div class="actions">
          {scheduled && (
            <div class="approve">
              <label for={approverId} class="sr-only">
                Approve as
              </label>
              <select id={approverId} value={approver} title={approver} onChange={(ev) => setApprover(ev.currentTarget.value)}>
                {approvers.map((vm) => (
                  <option key={vm} value={vm}>
                    {vm}
                  </option>
                ))}
              </select>
              <button type="button" disabled={busy || approver === ''} onClick={() => onApprove(e.id, approver)}>
                Approve
              </button>
            </div>
          )}
          {scheduled && (
            <button type="button" class="secondary" disabled={busy} onClick={() => onCancel(e.id)}>
              Cancel
            </button>
          )}
          {!scheduled && (
            <button type="button" class="secondary" disabled={busy} onClick={() => onComplete(e.id)}>
              Complete now
            </button>
          )}
        </div>
      </td>
    </tr>
  );
}
