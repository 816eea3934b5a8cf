// Everything the control API can do, as forms: operations, faults, scenarios, the clock and reset.
import { useEffect, useState } from 'preact/hooks';
import type { TargetedSubmitEvent } from 'preact';
import { useApi } from '../context.js';
import { Picker, usePick } from './Picker.js';
import type { AdvanceBody, FaultBody, FaultResponse, OperationBody } from '../../emulator/control/schemas.js';
import { HOST_OPERATIONS, OPERATION_TYPES, type OperationType } from '../../protocol/control.js';
import type { ClockResponse, Fault, FleetResponse, ScenarioInfo, ScenarioRun } from '../api.js';

/** Runs one control call; the App reports its outcome and keeps buttons disabled meanwhile. */
export type Run = (what: string, call: () => Promise<unknown>) => Promise<boolean>;

type Target = 'vms' | 'host' | 'tenant';

function targetsOf(type: OperationType): Target[] {
  // host-update rolls over a tenant or runs on a host; host jobs may also target VMs or a tenant.
  if (type === 'host-update') return ['tenant', 'host'];
  return HOST_OPERATIONS.has(type) ? ['vms', 'tenant', 'host'] : ['vms', 'tenant'];
}

const TARGET_LABEL: Record<Target, string> = { vms: 'Selected VMs', host: 'A host', tenant: 'A tenant' };

export function OperationForm({
  fleet,
  selected,
  now,
  run,
  busy,
}: {
  fleet: FleetResponse | null;
  selected: ReadonlySet<string>;
  now: number;
  run: Run;
  busy: boolean;
}) {
  const [type, setType] = useState<OperationType>('restart');
  const [target, setTarget] = useState<Target>('vms');
  const [noticeMinutes, setNoticeMinutes] = useState('');
  const [durationSeconds, setDurationSeconds] = useState('');
  const [description, setDescription] = useState('');
  const [force, setForce] = useState(false);
  const api = useApi();

  const allowed = targetsOf(type);
  const chosenTarget = allowed.includes(target) ? target : allowed[0]!;
  const hosts = fleet?.hosts.map((h) => h.name) ?? [];
  const tenants = fleet?.tenants.map((t) => t.name) ?? [];
  const [chosenHost, setHost] = usePick(hosts);
  const [chosenTenant, setTenant] = usePick(tenants);
  const selection = [...selected].filter((name) => fleet?.vms.some((v) => v.name === name));

  const submit = (ev: TargetedSubmitEvent<HTMLFormElement>) => {
    ev.preventDefault();
    const body: OperationBody = { type };
    if (chosenTarget === 'vms') body.vms = selection;
    else if (chosenTarget === 'host') body.host = chosenHost;
    else body.tenant = chosenTenant;
    if (noticeMinutes.trim() !== '') body.notBefore = new Date(now + Number(noticeMinutes) * 60_000).toISOString();
    if (durationSeconds.trim() !== '') body.durationInSeconds = Number(durationSeconds);
    if (description.trim() !== '') body.description = description;
    if (force) body.force = true;
    const on = chosenTarget === 'vms' ? selection.join(', ') : chosenTarget === 'host' ? `host ${chosenHost}` : `tenant ${chosenTenant}`;
    void run(`${type} on ${on}`, () => api.request('POST', '/v1/operations', body));
  };

  return (
    <form class="form" onSubmit={submit} aria-label="Trigger an operation">
      <label>
        Operation{' '}
        <select name="type" value={type} onChange={(e) => setType(e.currentTarget.value as OperationType)}>
          {OPERATION_TYPES.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </label>
      <fieldset>
        <legend>Target</legend>
        {allowed.map((t) => (
          <label key={t} class="inline">
            <input type="radio" name="target" value={t} checked={chosenTarget === t} onChange={() => setTarget(t)} /> {TARGET_LABEL[t]}
          </label>
        ))}
      </fieldset>
      {chosenTarget === 'vms' && (
        <p class="muted small" data-selection>
          {selection.length === 0 ? 'Tick VMs in the fleet to target them.' : `Targets ${selection.join(', ')}`}
        </p>
      )}
      {chosenTarget === 'host' && <Picker label="Host" value={chosenHost} options={hosts} onPick={setHost} />}
      {chosenTarget === 'tenant' && <Picker label="Tenant" value={chosenTenant} options={tenants} onPick={setTenant} />}
      <details>
        <summary>More options</summary>
        <label>
          NotBefore in (minutes){' '}
          <input
            type="number"
            min="0"
            step="any"
            inputMode="decimal"
            value={noticeMinutes}
            placeholder="minimum notice"
            onInput={(e) => setNoticeMinutes(e.currentTarget.value)}
          />
        </label>
        <label>
          DurationInSeconds{' '}
          <input
            type="number"
            min="-1"
            step="1"
            value={durationSeconds}
            placeholder="default"
            onInput={(e) => setDurationSeconds(e.currentTarget.value)}
          />
        </label>
        <label>
          Description <input type="text" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </label>
        <label class="inline">
          <input type="checkbox" checked={force} onChange={(e) => setForce(e.currentTarget.checked)} /> Allow less than the minimum notice
        </label>
      </details>
      <button type="submit" disabled={busy || (chosenTarget === 'vms' && selection.length === 0)}>
        Trigger
      </button>
    </form>
  );
}

/** Every fault status the emulator knows; the Record fails to compile if one is missing. */
const FAULT_STATUS_TEXT: Record<NonNullable<FaultResponse['status']>, string> = {
  410: '410 Gone',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
};

export function FaultForm({ fleet, faults, run, busy }: { fleet: FleetResponse | null; faults: Fault[]; run: Run; busy: boolean }) {
  const [vm, setVm] = useState('');
  const [status, setStatus] = useState('');
  const [latency, setLatency] = useState('');
  const [drop, setDrop] = useState(false);
  const [count, setCount] = useState('1');
  const api = useApi();

  const submit = (ev: TargetedSubmitEvent<HTMLFormElement>) => {
    ev.preventDefault();
    const body: FaultBody = {};
    if (vm !== '') body.vm = vm;
    if (status !== '') body.status = Number(status) as NonNullable<FaultBody['status']>;
    if (latency.trim() !== '') body.latencyMs = Number(latency);
    if (drop) body.drop = true;
    if (count.trim() !== '') body.count = Number(count);
    void run('inject a fault', () => api.request('POST', '/v1/faults', body));
  };

  return (
    <div>
      <form class="form" onSubmit={submit} aria-label="Inject a fault">
        <label>
          VM{' '}
          <select value={vm} onChange={(e) => setVm(e.currentTarget.value)}>
            <option value="">any VM</option>
            {fleet?.vms.map((v) => (
              <option key={v.name}>{v.name}</option>
            ))}
          </select>
        </label>
        <label>
          Answer with{' '}
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">the real answer</option>
            {Object.entries(FAULT_STATUS_TEXT).map(([code, text]) => (
              <option key={code} value={code}>
                {text}
              </option>
            ))}
          </select>
        </label>
        <label>
          Latency (ms) <input type="number" min="0" step="1" value={latency} onInput={(e) => setLatency(e.currentTarget.value)} />
        </label>
        <label class="inline">
          <input type="checkbox" checked={drop} onChange={(e) => setDrop(e.currentTarget.checked)} /> Drop the connection
        </label>
        <label>
          For how many requests <input type="number" min="1" step="1" value={count} onInput={(e) => setCount(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy}>
          Inject
        </button>
      </form>
      {faults.length > 0 && (
        <div>
          <ul class="faults" aria-label="Pending faults">
            {faults.map((f) => (
              <li key={f.id}>
                {f.vm ?? 'any VM'}:{' '}
                {[f.status !== null && `${f.status}`, f.latencyMs > 0 && `+${f.latencyMs} ms`, f.drop && 'drop'].filter(Boolean).join(', ')}{' '}
                · {f.remaining} left
              </li>
            ))}
          </ul>
          <button
            type="button"
            class="secondary"
            disabled={busy}
            onClick={() => void run('clear faults', () => api.request('DELETE', '/v1/faults'))}
          >
            Clear faults
          </button>
        </div>
      )}
    </div>
  );
}

export function ScenarioPanel({ scenarios, version, run, busy }: { scenarios: ScenarioInfo[]; version: number; run: Run; busy: boolean }) {
  const [chosen, setName] = usePick(scenarios.map((s) => s.name));
  const [runId, setRunId] = useState<string | null>(null);
  const [report, setReport] = useState<ScenarioRun | null>(null);
  const api = useApi();
  const info = scenarios.find((s) => s.name === chosen);

  // The stream says when a run starts or ends; only then is its report read again.
  useEffect(() => {
    if (runId === null) return;
    let live = true;
    api
      .scenarioRun(runId)
      .then((r) => live && setReport(r))
      .catch(() => live && setReport(null));
    return () => {
      live = false;
    };
  }, [api, runId, version]);

  const start = async (ev: TargetedSubmitEvent<HTMLFormElement>) => {
    ev.preventDefault();
    await run(`run scenario ${chosen}`, async () => {
      const r = await api.request<ScenarioRun>('POST', '/v1/scenarios', { name: chosen });
      setRunId(r.run);
      setReport(r);
    });
  };

  const failed = report?.report.steps.filter((s) => s.ok === false) ?? [];
  return (
    <div>
      <form class="form" onSubmit={start} aria-label="Run a built-in scenario">
        <Picker label="Scenario" value={chosen} options={scenarios.map((s) => s.name)} onPick={setName} />
        {info && <p class="muted small">{info.description}</p>}
        <p class="muted small">Running a scenario replaces the fleet with its own.</p>
        <button type="submit" disabled={busy || chosen === ''}>
          Run scenario
        </button>
      </form>
      {report && (
        <p class={`scenario-status status-${report.status}`} data-scenario-status={report.status} role="status">
          {report.report.name}: {report.status}
          {report.status !== 'running' && ` (${report.report.steps.length} steps)`}
          {failed.length > 0 && ` — step ${failed[0]!.index} (${failed[0]!.at}): ${failed[0]!.message ?? failed[0]!.summary}`}
        </p>
      )}
    </div>
  );
}

const ADVANCE_PRESETS: readonly [string, number][] = [
  ['+1 min', 60],
  ['+5 min', 300],
  ['+15 min', 900],
  ['+1 h', 3600],
];

export function ClockControls({ mode, run, busy }: { mode: ClockResponse['mode'] | undefined; run: Run; busy: boolean }) {
  const [seconds, setSeconds] = useState('60');
  const api = useApi();
  if (mode !== 'manual') {
    return <p class="muted small">The clock is system time; start the emulator with --clock manual to move it from here.</p>;
  }
  const advance = (s: number) => {
    const body: AdvanceBody = { seconds: s };
    void run(`advance the clock ${s} s`, () => api.request('POST', '/v1/clock/advance', body));
  };
  return (
    <form
      class="form clock-form"
      aria-label="Advance the manual clock"
      onSubmit={(ev) => {
        ev.preventDefault();
        advance(Number(seconds));
      }}
    >
      <div class="row">
        {ADVANCE_PRESETS.map(([label, s]) => (
          <button
            key={label}
            type="button"
            class="secondary"
            disabled={busy}
            onClick={() => advance(s)}
            aria-label={`Advance the clock ${label.slice(1)}`}
          >
            {label}
          </button>
        ))}
      </div>
      <label>
        Seconds <input type="number" min="1" step="any" value={seconds} onInput={(e) => setSeconds(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={busy}>
        Advance
      </button>
    </form>
  );
}
