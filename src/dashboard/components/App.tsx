// The whole page: header with the clock and the link, then fleet, events, timeline, document and actions.
import { useCallback, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { ApiContext } from '../context.js';
import { fullTime } from '../format.js';
import { useDashboard, useNow } from '../state.js';
import { ClockControls, FaultForm, OperationForm, ScenarioPanel, type Run } from './Actions.js';
import { DocumentView } from './DocumentView.js';
import { EventsView } from './EventsView.js';
import { FleetView } from './FleetView.js';
import { Timeline } from './Timeline.js';
import { TokenDialog } from './TokenDialog.js';

const LINK_TEXT = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'emulator unreachable, reconnecting…',
  unauthorized: 'needs a token',
} as const;

interface Notice {
  kind: 'ok' | 'error';
  text: string;
}

export function App() {
  const d = useDashboard();
  const { model, api } = d;
  const now = useNow(model);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<Notice | null>(null);

  const run: Run = useCallback(async (what, call) => {
    setBusy(true);
    try {
      await call();
      setNotice({ kind: 'ok', text: `Done: ${what}.` });
      return true;
    } catch (err) {
      setNotice({ kind: 'error', text: `Could not ${what}: ${err instanceof Error ? err.message : String(err)}` });
      return false;
    } finally {
      setBusy(false);
    }
  }, []);

  const toggle = (vm: string) =>
    setSelected((s) => {
      const next = new Set(s);
      if (!next.delete(vm)) next.add(vm);
      return next;
    });

  const scheduled = model.events.filter((e) => e.status === 'Scheduled').length;
  return (
    <ApiContext.Provider value={api}>
      <a class="skip" href="#events">
        Skip to events
      </a>
      <header class="top">
        <h1>Forewarn emulator</h1>
        <div class="clock" aria-label="Emulator clock">
          <span class="now" data-now={Math.round(now)}>
            {model.clock ? fullTime(now) : '…'}
          </span>
          {model.clock && (
            <span class="muted small">
              {' '}
              {model.clock.mode} clock · timing ×{model.clock.factor}
              {model.clock.activation === 'realistic' && ' · realistic activation'}
            </span>
          )}
        </div>
        <div class={`link link-${d.link}`} role="status" aria-live="polite" data-link={d.link}>
          {LINK_TEXT[d.link]}
        </div>
      </header>

      {d.needsToken && <TokenDialog hadToken={api.token !== null} onSubmit={d.submitToken} />}

      <div class="notices" aria-live="polite">
        {notice && (
          <p class={`notice notice-${notice.kind}`} role={notice.kind === 'error' ? 'alert' : 'status'}>
            {notice.text}{' '}
            <button type="button" class="link" onClick={() => setNotice(null)} aria-label="Dismiss this message">
              dismiss
            </button>
          </p>
        )}
        {d.loadError && (
          <p class="notice notice-error" role="alert">
            Could not load the emulator's state: {d.loadError}
          </p>
        )}
      </div>

      <main class="grid">
        <Panel id="fleet" title="Fleet" className="area-fleet">
          <FleetView
            fleet={model.fleet}
            impacts={model.impacts}
            selected={selected}
            onToggle={toggle}
            onSelectOnly={(vms) => setSelected(new Set(vms))}
          />
        </Panel>

        <Panel
          id="events"
          title={`Events${model.events.length > 0 ? ` (${scheduled} Scheduled, ${model.events.length - scheduled} Started)` : ''}`}
          className="area-events"
        >
          <EventsView
            events={model.events}
            tenantVms={new Map(model.fleet?.tenants.map((t) => [t.name, t.vms]) ?? [])}
            now={now}
            busy={busy}
            onApprove={(id, vm) => void run(`approve ${id} as ${vm}`, () => api.request('POST', `/v1/events/${id}/approve`, { vm }))}
            onCancel={(id) => void run(`cancel ${id}`, () => api.request('POST', `/v1/events/${id}/cancel`))}
            onComplete={(id) => void run(`complete ${id}`, () => api.request('POST', `/v1/events/${id}/complete`))}
          />
          <RollingProgress operations={model.operations} />
        </Panel>

        <Panel id="timeline" title="Timeline" className="area-timeline">
          <Timeline fleet={model.fleet} events={model.events} history={model.history} now={now} />
        </Panel>

        <Panel id="document" title="Document" className="area-document">
          <DocumentView api={api} fleet={model.fleet} version={d.documentVersion} />
        </Panel>

        <Panel id="actions" title="Actions" className="area-actions">
          <h3>Clock</h3>
          <ClockControls mode={model.clock?.mode} run={run} busy={busy} />
          <h3>Operation</h3>
          <OperationForm fleet={model.fleet} selected={selected} now={now} run={run} busy={busy} />
          <h3>Scenario</h3>
          <ScenarioPanel scenarios={model.scenarios} version={d.scenarioVersion} run={run} busy={busy} />
          <h3>Fault</h3>
          <FaultForm fleet={model.fleet} faults={model.faults} run={run} busy={busy} />
          <h3>Reset</h3>
          <button
            type="button"
            class="secondary"
            disabled={busy}
            onClick={() => void run('reset the emulator', () => api.request('POST', '/v1/reset'))}
          >
            Reset to the start fleet
          </button>
        </Panel>
      </main>
    </ApiContext.Provider>
  );
}

function Panel({ id, title, className, children }: { id: string; title: string; className: string; children: ComponentChildren }) {
  return (
    <section id={id} class={`panel ${className}`} aria-labelledby={`${id}-title`} tabIndex={-1}>
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
    </section>
  );
}

/** Rolling host updates in progress: which fault domain is up, and how many are done. */
function RollingProgress({ operations }: { operations: ReturnType<typeof useDashboard>['model']['operations'] }) {
  const rolling = operations.filter((o) => o.steps !== null && o.status === 'running');
  if (rolling.length === 0) return null;
  return (
    <ul class="rolling" aria-label="Rolling updates in progress">
      {rolling.map((o) => {
        const current = o.steps!.find((s) => s.status === 'scheduled' || s.status === 'started');
        return (
          <li key={o.id} data-operation={o.id}>
            Host update of {o.tenant}: {o.progress!.done}/{o.progress!.total} fault domains done
            {current ? `, FD ${current.faultDomain} ${current.status}` : ', next fault domain soon'}
          </li>
        );
      })}
    </ul>
  );
}
