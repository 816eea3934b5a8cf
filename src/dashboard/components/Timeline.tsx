// Past and present events per VM on one time axis: the notice as a light bar, the Started part solid.
import type { EndedEventResponse, EventResponse, FleetResponse } from '../api.js';
import { clockTime, dateTime, fullTime, monthDay, ms } from '../format.js';

interface Props {
  fleet: FleetResponse | null;
  events: EventResponse[];
  /** The latest to end first, TIMELINE_HISTORY of them at most. */
  history: EndedEventResponse[];
  now: number;
}

/** [choice] The most recent ended events drawn, and all the page fetches; older ones stay in GET /v1/history. */
export const TIMELINE_HISTORY = 200;

interface Span {
  id: string;
  vm: string;
  type: string;
  created: number;
  started: number | null;
  end: number;
  outcome: 'scheduled' | 'started' | 'completed' | 'cancelled';
}

const STEPS_S = [1, 5, 15, 30, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400];
const DAY_MS = 86400 * 1000;
const WEEK_MS = 7 * DAY_MS;

/**
 * [choice] The axis reaches at most this far past now: Azure's longest usual notice (degraded hardware's
 * 7 days) fits, a NotBefore years ahead does not.
 */
const HORIZON_MS = 14 * DAY_MS;

/**
 * [choice] An end more than this many times further from the axis's start than the axis reaches so far
 * is an outlier: drawn at scale, it would leave every nearer event a sliver.
 */
const OUTLIER_FACTOR = 4;

/** [choice] Less past than this on the axis sets no scale yet: the first end after now does. */
const SCALE_BASE_MS = 3600 * 1000;

/**
 * Where the axis starts and ends. It covers every event's creation, now, and every end up to the first
 * outlier (past HORIZON_MS, or OUTLIER_FACTOR times the axis so far); later ends run off its right edge.
 */
function timelineWindow(all: readonly Span[], now: number): { start: number; end: number } {
  const start = Math.min(now, ...all.map((s) => s.created));
  let end = now;
  for (const t of all.map((s) => s.end).sort((a, b) => a - b)) {
    if (t <= end) continue;
    const soFar = end - start;
    const outlier = (end > now || soFar >= SCALE_BASE_MS) && t - start > OUTLIER_FACTOR * soFar;
    if (t - now > HORIZON_MS || outlier) break;
    end = t;
  }
  // When nothing nearer sets the scale, some room past now for the bars that run off the edge.
  if (end === now && all.some((s) => s.end > now)) end = now + Math.max((now - start) / OUTLIER_FACTOR, SCALE_BASE_MS);
  return { start, end: Math.max(end, start + 1000) };
}

/** Ticks at most 6 steps apart across the axis, days apart at the widest. */
function tickStep(width: number): number {
  const step = STEPS_S.find((s) => width / 1000 / s <= 6);
  return step === undefined ? Math.ceil(width / 6 / WEEK_MS) * WEEK_MS : step * 1000;
}

function spans(events: EventResponse[], history: EndedEventResponse[], now: number): Span[] {
  const out: Span[] = [];
  for (const e of history.slice(0, TIMELINE_HISTORY)) {
    const ended = ms(e.endedAt);
    const started = e.startedAt === null ? null : ms(e.startedAt);
    for (const vm of e.resources) {
      out.push({ id: e.id, vm, type: e.type, created: ms(e.createdAt), started, end: ended, outcome: e.outcome });
    }
  }
  for (const e of events) {
    const started = e.startedAt === null ? null : ms(e.startedAt);
    const end = e.endsAt !== null ? ms(e.endsAt) : Math.max(ms(e.notBefore), now);
    for (const vm of e.resources) {
      out.push({
        id: e.id,
        vm,
        type: e.type,
        created: ms(e.createdAt),
        started,
        end,
        outcome: e.status === 'Started' ? 'started' : 'scheduled',
      });
    }
  }
  return out;
}

/** Rows in fleet order (tenant, fault domain, name); VMs no longer in the fleet go last. */
function rowOrder(fleet: FleetResponse | null, names: Set<string>): { vm: string; label: string }[] {
  const known = [
    ...(fleet?.vms ?? []).map((v) => ({ vm: v.name, tenant: v.tenant, fd: v.faultDomain })),
    ...(fleet?.deleted ?? []).map((v) => ({ vm: v.name, tenant: v.tenant, fd: v.faultDomain })),
  ].filter((r) => names.has(r.vm));
  known.sort((a, b) => a.tenant.localeCompare(b.tenant) || a.fd - b.fd || a.vm.localeCompare(b.vm));
  const rows = known.map((r) => ({ vm: r.vm, label: `${r.vm} · FD ${r.fd}` }));
  const placed = new Set(rows.map((r) => r.vm));
  for (const vm of [...names].sort()) if (!placed.has(vm)) rows.push({ vm, label: vm });
  return rows;
}

export function Timeline({ fleet, events, history, now }: Props) {
  const all = spans(events, history, now);
  if (all.length === 0) return <p class="muted">No events yet.</p>;
  const { start, end } = timelineWindow(all, now);
  const width = end - start;
  const x = (t: number) => ((Math.min(t, end) - start) / width) * 100;
  const stepMs = tickStep(width);
  const tickText = stepMs >= DAY_MS ? monthDay : clockTime;
  const ticks: number[] = [];
  for (let t = Math.ceil(start / stepMs) * stepMs; t <= end; t += stepMs) ticks.push(t);
  const rows = rowOrder(fleet, new Set(all.map((s) => s.vm)));

  return (
    // Focusable so a keyboard can scroll it sideways; the bars themselves are read, not tabbed through.
    <div class="timeline" role="group" tabIndex={0} aria-label={`Events from ${fullTime(start)} to ${fullTime(end)}`}>
      <div class="tl-row tl-axis" aria-hidden="true">
        <div class="tl-label" />
        <div class="tl-track">
          {ticks.map((t) => (
            <span key={t} class="tick" style={{ left: `${x(t)}%` }}>
              {tickText(t)}
            </span>
          ))}
        </div>
      </div>
      {rows.map((row) => {
        const own = all.filter((s) => s.vm === row.vm);
        // Past the axis's end, nearest first: one marker at the edge says when the first of them ends.
        const beyond = own.filter((s) => s.end > end).sort((a, b) => a.end - b.end);
        return (
          <div class="tl-row" key={row.vm} data-timeline-vm={row.vm}>
            <div class="tl-label">{row.label}</div>
            <div class="tl-track">
              {own.map((s) => {
                const off = s.end > end;
                const label =
                  `${s.type} on ${s.vm}: created ${clockTime(s.created)}` +
                  (s.started !== null ? `, started ${clockTime(s.started)}` : '') +
                  (s.outcome === 'completed' || s.outcome === 'cancelled' ? `, ${s.outcome} ${clockTime(s.end)}` : `, ${s.outcome}`) +
                  (off ? `, until ${fullTime(s.end)}, past the end of the axis` : '');
                const drawnEnd = Math.min(s.end, end);
                return (
                  <div
                    key={s.id}
                    class={`bar type-${s.type.toLowerCase()} outcome-${s.outcome}${off ? ' beyond' : ''}`}
                    style={{ left: `${x(s.created)}%`, width: `${Math.max(x(drawnEnd) - x(s.created), 0.4)}%` }}
                    data-event={s.id}
                    data-start={s.created}
                    data-end={s.end}
                    role="img"
                    aria-label={label}
                    title={label}
                  >
                    {s.started !== null && (
                      <span
                        class="started"
                        style={{ left: `${((s.started - s.created) / Math.max(drawnEnd - s.created, 1)) * 100}%`, right: '0' }}
                      />
                    )}
                    <span class="bar-text">{s.type}</span>
                  </div>
                );
              })}
              {beyond.length > 0 && (
                // The bars' own labels say as much to a screen reader.
                <span class="off-scale" aria-hidden="true" title={beyond.map((s) => `${s.type} until ${fullTime(s.end)}`).join('\n')}>
                  → {dateTime(beyond[0]!.end)}
                  {beyond.length > 1 && ` +${beyond.length - 1}`}
                </span>
              )}
            </div>
          </div>
        );
      })}
      <div class="tl-row tl-now" aria-hidden="true">
        <div class="tl-label" />
        <div class="tl-track">
          {/* Near the right edge the label sits left of the mark, so it is not cut off. */}
          <span class={`now-mark${x(now) > 90 ? ' at-end' : ''}`} style={{ left: `${x(now)}%` }}>
            now
          </span>
        </div>
      </div>
    </div>
  );
}
