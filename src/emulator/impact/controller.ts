// Real impact: watches what each bound VM goes through and does it to its process. Frozen: SIGSTOP, then SIGCONT;
// rebooting or redeploying: SIGTERM, SIGKILL after the grace, and an owned command starts again once the VM runs;
// deleting, evicting, deallocated or gone from the fleet: terminated for good.
import { spawn, type ChildProcess } from 'node:child_process';
import { formatIso } from '../../protocol/time.js';
import { wallClock } from '../../shared/clock.js';
import type { Engine } from '../engine/engine.js';
import { conflict, invalid, notFound } from '../engine/errors.js';
import type { VmState } from '../engine/vm-state.js';
import { allowlistedEnvironment } from '../../shared/env-allowlist.js';
import { newMarker, type ProcessMarker } from '../../shared/proc.js';
import { checkCwd, identifyBindable, readPidfile, type ProcessSpec } from './binding.js';
import { ImpactLog, type ImpactAction, type ImpactEntry, type ProcessStatus } from './log.js';
import { isSameAlive, markedAlive, signalBound, signalMarked, type ImpactSignal, type ProcessIdentity } from './signals.js';

/** What the process should be, given its VM's state. */
type Condition = 'running' | 'frozen' | 'down' | 'gone';

function conditionOf(state: VmState): Condition {
  switch (state) {
    case 'running':
      return 'running';
    case 'frozen':
      return 'frozen';
    case 'rebooting':
    case 'redeploying':
      return 'down';
    default:
      return 'gone';
  }
}

/** Event types whose impact ends the process and, for an owned command, starts it again. */
const RESTARTING = new Set(['Reboot', 'Redeploy']);

/** [choice] How long the emulator's close waits for owned commands after SIGTERM before SIGKILL, whatever their grace. */
const CLOSE_GRACE_MS = 3_000;
/** How long to wait for a process to go after SIGKILL before giving up on it. */
const KILL_WAIT_MS = 5_000;
/** [choice] The end of an owned command's stderr kept, to say why it exited. */
const STDERR_TAIL_CHARS = 2_000;
/** How often to look whether a process (or any of an owned command's) is still there. */
const EXIT_POLL_MS = 50;
/** The variable that marks every process an owned command starts, whatever group or session it moves to. */
export const IMPACT_MARKER_VARIABLE = 'FOREWARN_IMPACT_MARKER';

/** What the process routes answer (403) while real impact is off. */
export const IMPACT_OFF_MESSAGE =
  'real impact is off: start the emulator with --impact and a control token (--token-file, --token or env FOREWARN_TOKEN); ' +
  'in the library, impact: true with token';

/** Why real impact cannot start without a token: anyone who may call the control API could run commands as the emulator's user. */
export const IMPACT_NEEDS_TOKEN =
  'real impact runs and signals real processes, so it needs a control token: give --token-file FILE, --token TOKEN or env FOREWARN_TOKEN (token in the library)';

export interface ImpactOptions {
  /** Real impact was asked for (--impact): without it nothing is bound and no signal is ever sent. */
  enabled?: boolean;
}

export interface ProcessView {
  vm: string;
  kind: ProcessSpec['kind'];
  /** The process now (or last), null when an owned command is not running. */
  pid: number | null;
  pidfile?: string;
  command?: string[];
  cwd?: string;
  graceSeconds: number;
  /** Forewarn started it, so it signals its whole process group and starts it again after a reboot. */
  owned: boolean;
  status: ProcessStatus;
  boundAt: string;
  /** The end of an owned command's stderr. */
  stderr?: string;
  log: ImpactEntry[];
}

interface Bound {
  vm: string;
  spec: ProcessSpec;
  owned: boolean;
  /** The process now (or last): for a pid or pidfile binding, `who` holds the proof that it is the one bound. */
  pid: number | null;
  who: ProcessIdentity | null;
  /** A pidfile's pids must all belong to the user the first one did. */
  uid: number | null;
  /** An owned command's marker: in the environment of every process it starts. */
  marker: ProcessMarker | null;
  child: ChildProcess | null;
  status: ProcessStatus;
  /** What the last VM state asked for; transitions are queued from it. */
  desired: Condition;
  /** Started Reboot/Redeploy events already acted on, so one that came and went between two looks still restarts. */
  seen: Set<string>;
  chain: Promise<void>;
  log: ImpactLog;
  boundAt: number;
  stderr: string;
  /** An exit Forewarn asked for, not one to report as a crash. */
  expectingExit: boolean;
}

/** The markers of owned commands bound in any controller, for the exit backstop. */
const LIVE_MARKERS = new Set<ProcessMarker>();
let exitHookInstalled = false;

/** A process leaving without close() must not leave orphans: every process of its owned commands is killed. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const marker of LIVE_MARKERS) signalMarked(marker, 'SIGKILL');
  });
}

export class ImpactController {
  readonly #engine: Engine;
  readonly #enabled: boolean;
  readonly #bindings = new Map<string, Bound>();
  readonly #listeners = new Set<(entry: ImpactEntry) => void>();
  #unsubscribe: (() => void) | undefined;
  #reconciling = false;
  #again = false;
  #closing: Promise<void> | undefined;

  constructor(engine: Engine, options: ImpactOptions = {}) {
    this.#engine = engine;
    this.#enabled = options.enabled === true;
  }

  /** Whether real impact was asked for; the routes answer 403 otherwise. */
  get enabled(): boolean {
    return this.#enabled;
  }

  /** Called with every entry any binding logs, e.g. for the stream. */
  onImpact(listener: (entry: ImpactEntry) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Binds `vm` to a process, replacing (and stopping, if owned) any earlier binding, and applies the VM's state now. */
  async bind(vm: string, spec: ProcessSpec): Promise<ProcessView> {
    // The routes refuse first; this guards every other caller.
    if (!this.#enabled) throw new Error(IMPACT_OFF_MESSAGE);
    if (this.#closing) throw invalid('the emulator is shutting down');
    this.#engine.fleet.get(vm);
    const now = this.#stateOf(vm);
    // [choice] A process starts out running: bound mid-reboot it would be killed at once, or started on a VM that is down.
    if (now !== 'running' && now !== 'frozen') throw conflict(`VM '${vm}' is ${now}; bind a process to it while it runs`);
    // Checked before the old binding goes, so a bad request changes nothing.
    let who: ProcessIdentity | null = null;
    if (spec.kind === 'pid') who = identifyBindable(spec.pid, 'pid');
    else if (spec.kind === 'pidfile') who = identifyBindable(readPidfile(spec.pidfile), 'pidfile', `the pid in ${spec.pidfile}`);
    else checkCwd(spec.cwd);
    if (this.#bindings.has(vm)) await this.unbind(vm);
    const b: Bound = {
      vm,
      spec,
      owned: spec.kind === 'command',
      pid: who?.pid ?? null,
      who,
      uid: who?.uid ?? null,
      marker: spec.kind === 'command' ? newMarker(IMPACT_MARKER_VARIABLE) : null,
      child: null,
      status: 'running',
      desired: 'running',
      seen: new Set(this.#restartingEvents().get(vm) ?? []),
      chain: Promise.resolve(),
      log: new ImpactLog(),
      boundAt: wallClock(),
      stderr: '',
      expectingExit: false,
    };
    if (spec.kind === 'command') {
      const started = await this.#spawn(b, now, 'bound');
      if (!started.ok) throw invalid(`command: cannot start ${JSON.stringify(spec.command[0])}: ${started.reason}`, 'command');
    } else {
      this.#log(b, 'bind', b.pid, null, true, now, `bound to ${spec.kind === 'pid' ? `pid ${b.pid}` : `${spec.pidfile} (pid ${b.pid})`}`);
    }
    this.#bindings.set(vm, b);
    // Every transition, the end of an impact included, is a mutation: one look after each is enough.
    // [choice] Watched only while something is bound, so the engine pays nothing otherwise.
    this.#unsubscribe ??= this.#engine.onMutation(() => this.#reconcile());
    this.#reconcile();
    return this.#view(b);
  }

  /** The binding of `vm` and its impact log; 404 when it has none. */
  binding(vm: string): ProcessView {
    const b = this.#bindings.get(vm);
    if (b) return this.#view(b);
    this.#engine.fleet.get(vm);
    throw notFound(`VM '${vm}' is bound to no process`);
  }

  /** Every binding, for views that show them all. */
  bindings(): ProcessView[] {
    return [...this.#bindings.values()].map((b) => this.#view(b));
  }

  /** Ends the binding: an owned command is terminated, a process Forewarn stopped is continued. */
  async unbind(vm: string): Promise<ProcessView> {
    const b = this.#bindings.get(vm);
    if (!b) {
      this.#engine.fleet.get(vm);
      throw notFound(`VM '${vm}' is bound to no process`);
    }
    this.#bindings.delete(vm);
    if (this.#bindings.size === 0) this.#stopWatching();
    await this.#enqueue(b, () => this.#release(b, b.spec.graceSeconds * 1000, 'unbound'));
    return this.#view(b);
  }

  /** Resolves once every queued action has run: for tests and for close. */
  async idle(): Promise<void> {
    await Promise.all([...this.#bindings.values()].map((b) => b.chain));
  }

  /** Stops owned commands (SIGTERM, then SIGKILL) and continues stopped processes; nothing is signalled after. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stopWatching();
      const all = [...this.#bindings.values()];
      this.#bindings.clear();
      await Promise.all(all.map((b) => this.#release(b, Math.min(b.spec.graceSeconds * 1000, CLOSE_GRACE_MS), 'the emulator closed')));
    })();
    return this.#closing;
  }

  // ---- watching the engine ----

  #stopWatching(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  #reconcile(): void {
    if (this.#bindings.size === 0 || this.#closing) return;
    // Reading the engine may tick it, and a tick calls back here: look again once this look is done.
    if (this.#reconciling) {
      this.#again = true;
      return;
    }
    this.#reconciling = true;
    try {
      do {
        this.#again = false;
        this.#look();
      } while (this.#again);
    } finally {
      this.#reconciling = false;
    }
  }

  #look(): void {
    const states = this.#engine.vmStates();
    const restarting = this.#restartingEvents();
    for (const b of this.#bindings.values()) {
      if (b.desired === 'gone') continue;
      const state: VmState = this.#engine.fleet.vms.has(b.vm) ? (states.get(b.vm) ?? 'running') : 'deleted';
      const next = conditionOf(state);
      const events = restarting.get(b.vm) ?? [];
      for (const id of events) {
        if (b.seen.has(id)) continue;
        // A reboot whose whole impact fell between two looks (a long clock advance) still happened to the VM.
        if (next !== 'down' && next !== 'gone') this.#move(b, 'down', 'rebooting');
      }
      b.seen = new Set(events);
      this.#move(b, next, state);
    }
  }

  /** VM → Started Reboot/Redeploy events that name it. */
  #restartingEvents(): Map<string, string[]> {
    const byVm = new Map<string, string[]>();
    for (const e of this.#engine.events()) {
      if (e.status !== 'Started' || !RESTARTING.has(e.type)) continue;
      for (const vm of e.resources) byVm.set(vm, [...(byVm.get(vm) ?? []), e.id]);
    }
    return byVm;
  }

  #stateOf(vm: string): VmState {
    return this.#engine.fleet.vms.has(vm) ? (this.#engine.vmStates().get(vm) ?? 'running') : 'deleted';
  }

  #move(b: Bound, next: Condition, state: VmState): void {
    const from = b.desired;
    if (from === next || from === 'gone') return;
    b.desired = next;
    void this.#enqueue(b, () => this.#transition(b, from, next, state));
  }

  /** Actions on one process run one at a time, in the order the VM went through its states. */
  #enqueue(b: Bound, action: () => Promise<void>): Promise<void> {
    b.chain = b.chain.then(action).catch((err: unknown) => {
      this.#log(b, 'skip', b.pid, null, false, this.#stateOf(b.vm), `failed: ${(err as Error).message}`);
    });
    return b.chain;
  }

  async #transition(b: Bound, from: Condition, to: Condition, state: VmState): Promise<void> {
    if (this.#closing) return;
    switch (to) {
      case 'frozen':
        if (from === 'down') await this.#restart(b, state);
        if (b.status === 'running' && this.#signal(b, 'SIGSTOP', 'stop', state, 'the VM is frozen')) b.status = 'stopped';
        return;
      case 'running':
        if (from === 'frozen' && b.status === 'stopped') {
          if (this.#signal(b, 'SIGCONT', 'continue', state, 'the freeze is over')) b.status = 'running';
        } else if (from === 'down') await this.#restart(b, state);
        return;
      case 'down':
        await this.#terminate(b, b.spec.graceSeconds * 1000, state, `the VM is ${state}`);
        if (b.status !== 'exited' || b.owned) b.status = 'down';
        return;
      case 'gone':
        if (from !== 'down') await this.#terminate(b, b.spec.graceSeconds * 1000, state, `the VM is ${state}; for good`);
        b.status = 'ended';
        return;
    }
  }

  // ---- doing it to the process ----

  async #restart(b: Bound, state: VmState): Promise<void> {
    if (!b.owned) {
      b.status = 'ended';
      this.#log(b, 'skip', b.pid, null, true, state, 'not started again: Forewarn did not start it (bind a command to have it restarted)');
      return;
    }
    await this.#spawn(b, state, 'started again: the VM runs again');
  }

  /** SIGTERM (and SIGCONT, so a stopped process can act on it), then SIGKILL if it is still there after `graceMs`. */
  async #terminate(b: Bound, graceMs: number, state: VmState, why: string): Promise<void> {
    this.#followPidfile(b);
    if (!this.#alive(b)) {
      this.#log(b, 'skip', b.pid, null, true, state, `nothing to terminate: the process has already exited (${why})`);
      return;
    }
    b.expectingExit = true;
    const wasStopped = b.status === 'stopped';
    if (!this.#signal(b, 'SIGTERM', 'terminate', state, why)) return;
    if (wasStopped) this.#signal(b, 'SIGCONT', 'continue', state, 'so that it can act on SIGTERM');
    if (await this.#waitForExit(b, graceMs)) return;
    this.#signal(b, 'SIGKILL', 'kill', state, `still running ${graceMs / 1000} s after SIGTERM`);
    await this.#waitForExit(b, KILL_WAIT_MS);
  }

  /** Ends a binding: an owned command terminated, a process left stopped continued. */
  async #release(b: Bound, graceMs: number, why: string): Promise<void> {
    const state = this.#stateOf(b.vm);
    if (b.owned) {
      await this.#terminate(b, graceMs, state, why);
      b.status = 'ended';
    } else if (b.status === 'stopped' && b.pid !== null) {
      if (this.#signal(b, 'SIGCONT', 'continue', state, `${why}: a process Forewarn stopped is not left stopped`)) b.status = 'running';
    }
    this.#log(b, 'unbind', b.pid, null, true, state, why);
    if (b.marker !== null) LIVE_MARKERS.delete(b.marker);
  }

  /**
   * A pidfile is read again before each action, so a process that restarts itself and rewrites it is
   * followed; but only to a process of the same user as the first, and one that may be bound at all.
   */
  #followPidfile(b: Bound): void {
    if (b.spec.kind !== 'pidfile') return;
    const { pidfile } = b.spec;
    let pid: number;
    try {
      pid = readPidfile(pidfile);
    } catch {
      // Unreadable now (its process may have removed it on exit): the process read last stands.
      return;
    }
    if (pid === b.pid) return;
    let who: ProcessIdentity;
    try {
      who = identifyBindable(pid, 'pidfile', `the pid in ${pidfile}`);
    } catch (err) {
      this.#log(b, 'skip', b.pid, null, false, this.#stateOf(b.vm), `not followed: ${(err as Error).message}`);
      return;
    }
    if (who.uid !== b.uid) {
      const why = `not followed: the pid in ${pidfile} now belongs to user ${who.uid}, not ${b.uid} as the first one did`;
      this.#log(b, 'skip', b.pid, null, false, this.#stateOf(b.vm), why);
      return;
    }
    b.who = who;
    b.pid = pid;
  }

  /** Whether the bound process (any process of an owned command) still runs, and is still the one bound. */
  #alive(b: Bound): boolean {
    // The leader counts until Node has reaped it, so its exit is logged before a caller hears it ended.
    if (b.marker !== null) return markedAlive(b.marker) || (b.child !== null && b.child.exitCode === null && b.child.signalCode === null);
    return b.who !== null && isSameAlive(b.who);
  }

  async #waitForExit(b: Bound, ms: number): Promise<boolean> {
    const end = wallClock() + ms;
    while (this.#alive(b)) {
      if (wallClock() >= end) return false;
      await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_MS));
    }
    return true;
  }

  #signal(b: Bound, signal: ImpactSignal, action: ImpactAction, state: VmState, why: string): boolean {
    if (b.marker === null) this.#followPidfile(b);
    if (b.marker === null && b.who === null) {
      this.#log(b, action, null, signal, false, state, `${why}; but no process is running`);
      return false;
    }
    const result = b.marker !== null ? signalMarked(b.marker, signal) : signalBound(b.who!, signal);
    const target = result.ok ? (result.target === 'processes' ? 'groups of its processes' : result.target) : '';
    this.#log(
      b,
      action,
      b.pid,
      signal,
      result.ok,
      state,
      result.ok ? `${why} (${signal} to the ${target})` : `${why}; refused: ${result.reason}`,
    );
    return result.ok;
  }

  /** Starts the bound command detached (its own process group), and answers once it has started or failed to. */
  async #spawn(b: Bound, state: VmState, why: string): Promise<{ ok: true } | { ok: false; reason: string }> {
    if (b.spec.kind !== 'command') return { ok: false, reason: 'not a command' };
    const [file, ...args] = b.spec.command;
    let child: ChildProcess;
    try {
      // [choice] The allowlist the agent's exec actions get, never the emulator's token or secrets, and the marker.
      const env = { ...allowlistedEnvironment(process.env), [b.marker!.name]: b.marker!.value };
      child = spawn(file!, args, { cwd: b.spec.cwd, env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (err) {
      return { ok: false, reason: (err as Error).message };
    }
    const started = await new Promise<{ ok: true } | { ok: false; reason: string }>((resolve) => {
      child.once('spawn', () => resolve({ ok: true }));
      child.once('error', (err) => resolve({ ok: false, reason: err.message }));
    });
    if (!started.ok || child.pid === undefined) {
      b.status = 'exited';
      this.#log(b, 'start', null, null, false, state, `cannot start ${JSON.stringify(file)}: ${started.ok ? 'no pid' : started.reason}`);
      return started.ok ? { ok: false, reason: 'no pid' } : started;
    }
    const pid = child.pid;
    LIVE_MARKERS.add(b.marker!);
    installExitHook();
    b.child = child;
    b.pid = pid;
    b.status = 'running';
    b.expectingExit = false;
    b.stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => (b.stderr = (b.stderr + text).slice(-STDERR_TAIL_CHARS)));
    // The emulator's own exit must not wait for its commands: close() or the exit hook ends them.
    child.unref();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    child.once('exit', (code, signal) => {
      if (b.child === child) b.child = null;
      const how = signal !== null ? `killed by ${signal}` : `exited with code ${code}`;
      if (!b.expectingExit && b.status !== 'ended') b.status = 'exited';
      const tail = !b.expectingExit && b.stderr.trim() !== '' ? `; stderr ends: ${b.stderr.trim().split('\n').slice(-3).join(' | ')}` : '';
      this.#log(b, 'exit', pid, null, true, this.#stateOf(b.vm), `${how}${tail}`);
    });
    this.#log(b, 'start', pid, null, true, state, `${why}: ${b.spec.command.join(' ')}`);
    // Closed while it started: it must not outlive the emulator.
    if (this.#closing) await this.#release(b, CLOSE_GRACE_MS, 'the emulator closed');
    return { ok: true };
  }

  #log(
    b: Bound,
    action: ImpactAction,
    pid: number | null,
    signal: ImpactSignal | null,
    ok: boolean,
    vmState: VmState,
    detail: string,
  ): void {
    const entry: ImpactEntry = {
      vm: b.vm,
      action,
      pid,
      signal,
      ok,
      vmState,
      at: formatIso(wallClock()),
      simulatedAt: formatIso(this.#engine.now()),
      detail,
    };
    b.log.add(entry);
    for (const listener of this.#listeners) listener(entry);
  }

  #view(b: Bound): ProcessView {
    const { spec } = b;
    return {
      vm: b.vm,
      kind: spec.kind,
      pid: b.pid,
      ...(spec.kind === 'pidfile' ? { pidfile: spec.pidfile } : {}),
      ...(spec.kind === 'command' ? { command: [...spec.command], ...(spec.cwd !== undefined ? { cwd: spec.cwd } : {}) } : {}),
      graceSeconds: spec.graceSeconds,
      owned: b.owned,
      status: b.status,
      boundAt: formatIso(b.boundAt),
      ...(b.owned && b.stderr !== '' ? { stderr: b.stderr } : {}),
      log: b.log.entries(),
    };
  }
}
