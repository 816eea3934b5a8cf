// Plays a scenario's timeline against an engine and reports each step; a failed expectation is a result, not an exception.
import { setTimeout as sleep } from 'node:timers/promises';
import { formatIso } from '../../protocol/time.js';
import type { EventView } from '../../protocol/types.js';
import { ManualClock, SystemClock, type Clock } from '../../shared/clock.js';
import { Engine } from '../engine/engine.js';
import { EngineError } from '../engine/errors.js';
import type { VmSpec } from '../engine/fleet.js';
import { Timing } from '../engine/timing.js';
import { FaultRegistry } from '../imds/faults.js';
import {
  describeAction,
  describeExpected,
  formatOffset,
  formatTimeSpec,
  type Action,
  type EventRef,
  type ExpectedEvent,
  type Scenario,
  type ScenarioReport,
  type ScenarioStep,
  type StepReport,
  type TimeSpec,
} from './format.js';

export interface RunOptions {
  /** A fresh engine's clock: manual runs instantly, system sleeps real (scaled) time. Default manual. */
  clock?: 'manual' | 'system';
  /** A fresh engine's timing factor: 1 realistic, 60 dev. Default 1. */
  timingFactor?: number;
  /** Run on this engine (its clock and timing) instead of a fresh one. */
  engine?: Engine;
  /** Run on an emulator's engine, with its IMDS faults. */
  emulator?: { engine: Engine; faults: FaultRegistry };
  /** Faults for a bare engine; without them fault steps are recorded but nothing consumes them. */
  faults?: FaultRegistry;
  /** Replace the given engine's fleet with the scenario's first (default true). */
  replaceFleet?: boolean;
  /** Called once the run has started, with the report it fills in as it goes. */
  onStart?: (report: ScenarioReport) => void;
  /** Called after each step, with the report so far. */
  onStep?: (step: StepReport, report: ScenarioReport) => void;
  /** Stops a system-clock run between steps; the report says aborted. */
  signal?: AbortSignal;
}

/**
 * [choice] On the system clock actions run this much before their offset and expectations this
 * much after, so an operation at 0 gets the exact NotBefore (the engine rounds it up to a second)
 * and an expectation at a transition sees it done, despite the event loop's lateness.
 */
export const SYSTEM_CLOCK_MARGIN_MS = 50;

/** [choice] NotBefore is rounded up to a whole second, so expectations about it allow one second of slack. */
export const NOT_BEFORE_TOLERANCE_MS = 1000;

/** Never sleep longer than this at once, so a clock jump is noticed. */
const MAX_SLEEP_MS = 60_000;

const ENGINE_STATUS = { invalid: 400, 'not-found': 404, conflict: 409 } as const;

/** Replaces an engine's fleet, events and operations: a reset to another fleet. Incarnations keep rising. */
/** Puts the scenario's fleet in place of the emulator's; [choice] POST /v1/reset still goes back to the emulator's own. */
export function installFleet(engine: Engine, fleet: readonly VmSpec[]): void {
  engine.reset(fleet, { keepStartFleet: true });
}

export async function runScenario(scenario: Scenario, options: RunOptions = {}): Promise<ScenarioReport> {
  const given = options.emulator?.engine ?? options.engine;
  let engine: Engine;
  if (given) {
    engine = given;
    if (options.timingFactor !== undefined && options.timingFactor !== engine.timing.factor) {
      throw new RangeError(`the engine runs at timing x${engine.timing.factor}, not x${options.timingFactor}`);
    }
    if (options.clock !== undefined && options.clock !== engine.clock.mode) {
      throw new RangeError(`the engine's clock is ${engine.clock.mode}, not ${options.clock}`);
    }
    if (options.replaceFleet !== false) installFleet(engine, scenario.fleet);
  } else {
    const clock: Clock = (options.clock ?? 'manual') === 'manual' ? new ManualClock() : new SystemClock();
    engine = new Engine({ clock, timing: new Timing(options.timingFactor ?? 1), fleet: scenario.fleet });
  }
  const ownFaults = options.emulator?.faults ?? options.faults;
  const faults = ownFaults ?? new FaultRegistry();
  if (given && options.replaceFleet !== false) faults.clear();
  const run = new Run(scenario, engine, faults, ownFaults !== undefined);
  return run.play(options);
}

interface Observed {
  tenant: string;
  createdAt: number;
}

class Run {
  readonly clock: Clock;
  readonly factor: number;
  start = 0;
  readonly report: ScenarioReport;
  /** Operation ids by `as` name; null when its step failed. */
  readonly #operations = new Map<string, string | null>();
  /** A readable name for each event id, for messages. */
  readonly #labels = new Map<string, string>();
  readonly #observed = new Map<string, Observed>();
  readonly #incarnations = new Map<string, number>();

  constructor(
    readonly scenario: Scenario,
    readonly engine: Engine,
    readonly faults: FaultRegistry,
    readonly imdsFaults: boolean,
  ) {
    this.clock = engine.clock;
    this.factor = engine.timing.factor;
    this.report = {
      name: scenario.name,
      description: scenario.description,
      passed: false,
      timing: this.factor,
      clock: this.clock.mode,
      startedAt: formatIso(this.clock.now()),
      finishedAt: null,
      aborted: false,
      steps: [],
    };
  }

  /** Simulated ms for nominal seconds. */
  ms(seconds: number): number {
    return Math.round((seconds * 1000) / this.factor);
  }

  /** Nominal seconds for simulated ms. */
  nominal(ms: number): number {
    return Math.round((ms * this.factor) / 10) / 100;
  }

  async play(options: RunOptions): Promise<ScenarioReport> {
    const manual = this.clock.mode === 'manual';
    if (manual && !(this.clock instanceof ManualClock)) throw new TypeError('a manual-clock run needs a ManualClock it can advance');
    // Start on a whole second, as the engine's NotBefore values are, so offsets land exactly.
    if (manual) this.start = (this.clock as ManualClock).advanceTo(Math.ceil(this.clock.now() / 1000) * 1000);
    else this.start = Math.ceil((this.clock.now() + SYSTEM_CLOCK_MARGIN_MS) / 1000) * 1000;
    this.report.startedAt = formatIso(this.start);
    for (const vm of this.engine.fleet.vms.keys()) this.#incarnations.set(vm, this.engine.incarnationOf(vm));
    options.onStart?.(this.report);

    for (const step of this.scenario.steps) {
      const target = this.start + this.ms(step.at);
      if (manual) {
        (this.clock as ManualClock).advanceTo(target);
        this.engine.tick();
      } else {
        const margin = step.action.kind === 'expect' ? SYSTEM_CLOCK_MARGIN_MS : -SYSTEM_CLOCK_MARGIN_MS;
        const ran = await this.#sleepUntil(target + margin, options.signal);
        if (!ran) break;
      }
      if (options.signal?.aborted) break;
      const result = this.#step(step, target);
      this.report.steps.push(result);
      options.onStep?.(result, this.report);
    }
    this.report.aborted = this.report.steps.length < this.scenario.steps.length;
    this.report.passed = !this.report.aborted && this.report.steps.every((s) => s.ok);
    this.report.finishedAt = formatIso(this.clock.now());
    return this.report;
  }

  async #sleepUntil(at: number, signal: AbortSignal | undefined): Promise<boolean> {
    for (let left = at - this.clock.now(); left > 0; left = at - this.clock.now()) {
      if (signal?.aborted) return false;
      try {
        await sleep(Math.min(left, MAX_SLEEP_MS), undefined, signal ? { signal } : {});
      } catch (err) {
        if ((err as Error).name === 'AbortError') return false;
        throw err;
      }
    }
    return !signal?.aborted;
  }

  #step(step: ScenarioStep, target: number): StepReport {
    this.#observe();
    const base: StepReport = {
      index: step.index,
      at: formatOffset(step.at),
      line: step.line,
      time: formatIso(this.clock.now()),
      action: step.action.kind,
      summary: describeAction(step.action),
      ok: true,
    };
    const outcome = this.#act(step.action, target);
    this.#observe();
    return { ...base, ...outcome };
  }

  #act(action: Action, target: number): Pick<StepReport, 'ok' | 'message' | 'expected' | 'actual'> {
    switch (action.kind) {
      case 'operation':
        return this.#operation(action, target);
      case 'approve': {
        const ids: string[] = [];
        for (const ref of action.events) {
          const r = this.#resolve(ref);
          if ('error' in r) return { ok: false, message: r.error };
          ids.push(r.id);
        }
        return this.#call(action.expectStatus, () => this.engine.approve(action.vm, ids), `approved by ${action.vm}`);
      }
      case 'cancel':
      case 'complete': {
        const r = this.#resolve(action.event);
        if ('error' in r) return { ok: false, message: r.error };
        const verb = action.kind === 'cancel' ? 'cancelled' : 'completed';
        return this.#call(action.expectStatus, () => void this.engine[action.kind](r.id), `${verb} ${this.#label(r.id)}`);
      }
      case 'fault': {
        if (action.fault.vm !== undefined && !this.engine.fleet.vms.has(action.fault.vm)) {
          return { ok: false, message: `no VM named '${action.fault.vm}' (it may have been deleted)` };
        }
        const fault = this.faults.add(action.fault);
        return {
          ok: true,
          message: this.imdsFaults ? `fault ${fault.id} injected` : 'recorded; no IMDS serves this run, so nothing consumes it',
        };
      }
      case 'expect':
        return this.#expect(action);
    }
  }

  #operation(action: Extract<Action, { kind: 'operation' }>, target: number): Pick<StepReport, 'ok' | 'message'> {
    const notBefore = action.notBefore === undefined ? undefined : this.#time(action.notBefore, target);
    try {
      const op = this.engine.createOperation({
        type: action.type,
        vms: action.vms,
        host: action.host,
        tenant: action.tenant,
        notBefore,
        durationInSeconds: action.durationInSeconds,
        description: action.description,
        force: action.force,
      });
      if (action.as !== undefined) this.#operations.set(action.as, op.id);
      this.#observe();
      const parts = [`operation ${op.id}`];
      parts.push(op.events.length === 0 ? 'no events' : `events ${op.events.map((id) => this.#label(id)).join(', ')}`);
      if (op.removedVms.length > 0) parts.push(`removed at once: ${op.removedVms.join(', ')}`);
      if (op.reimagedVms.length > 0) parts.push(`reimaged at once: ${op.reimagedVms.join(', ')}`);
      return { ok: true, message: parts.join('; ') };
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
      if (action.as !== undefined) this.#operations.set(action.as, null);
      return { ok: false, message: `the operation was refused (${ENGINE_STATUS[err.code]}): ${err.message}` };
    }
  }

  /** Runs an engine call as its HTTP surface would answer it, and checks the status. */
  #call(expectStatus: number, call: () => void, done: string): Pick<StepReport, 'ok' | 'message' | 'expected' | 'actual'> {
    let status = 200;
    let error: string | undefined;
    try {
      call();
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
      status = ENGINE_STATUS[err.code];
      error = err.message;
    }
    if (status === expectStatus) return { ok: true, message: status === 200 ? done : `${status} as expected: ${error}` };
    return {
      ok: false,
      message: `expected ${expectStatus}, got ${status}${error !== undefined ? `: ${error}` : ''}`,
      expected: { status: expectStatus },
      actual: { status, ...(error !== undefined ? { error } : {}) },
    };
  }

  #expect(action: Extract<Action, { kind: 'expect' }>): Pick<StepReport, 'ok' | 'message' | 'expected' | 'actual'> {
    const exists = this.engine.fleet.vms.has(action.vm);
    if (action.gone) {
      if (!exists) return { ok: true };
      const doc = this.engine.documentFor(action.vm);
      return {
        ok: false,
        message: `expected ${action.vm} to be gone, but it is still in the fleet (${doc.events.length} event(s) in its document)`,
        expected: { gone: true },
        actual: { gone: false, incarnation: doc.incarnation, events: doc.events.map((e) => this.#view(e)) },
      };
    }
    if (!exists)
      return {
        ok: false,
        message: `${action.vm} is gone: the VM is no longer in the fleet`,
        expected: { gone: false },
        actual: { gone: true },
      };
    const doc = this.engine.documentFor(action.vm);
    const expected = action.events ?? [];
    const problems: string[] = [];
    const previous = this.#incarnations.get(action.vm);
    this.#incarnations.set(action.vm, doc.incarnation);
    if (action.incarnation !== undefined && previous !== undefined) {
      const changed = doc.incarnation !== previous;
      if (changed !== (action.incarnation === 'changed')) {
        problems.push(
          `incarnation expected ${action.incarnation}, but it ${changed ? `went from ${previous} to ${doc.incarnation}` : `stayed ${previous}`}`,
        );
      }
    }
    if (doc.events.length !== expected.length) {
      const want =
        expected.length === 0
          ? 'no events'
          : `${expected.length} event${expected.length > 1 ? 's' : ''} [${expected.map(describeExpected).join('; ')}]`;
      const got = doc.events.length === 0 ? 'none' : `${doc.events.length}: [${doc.events.map((e) => this.#summary(e)).join('; ')}]`;
      problems.push(`expected ${want}, got ${got}`);
    } else {
      expected.forEach((want, i) => {
        const diffs = this.#compare(want, doc.events[i]!);
        if (diffs.length > 0) problems.push(`event ${i + 1} (${this.#label(doc.events[i]!.id)}): ${diffs.join('; ')}`);
      });
    }
    if (problems.length === 0) return { ok: true, message: `incarnation ${doc.incarnation}` };
    return {
      ok: false,
      message: `${action.vm}: ${problems.join('; ')}`,
      expected: { events: expected.map((e) => this.#expectedJson(e)), ...(action.incarnation ? { incarnation: action.incarnation } : {}) },
      actual: { incarnation: doc.incarnation, previousIncarnation: previous, events: doc.events.map((e) => this.#view(e)) },
    };
  }

  #compare(want: ExpectedEvent, got: EventView): string[] {
    const diffs: string[] = [];
    const field = (name: string, expected: unknown, actual: unknown) => {
      if (expected !== undefined && JSON.stringify(expected) !== JSON.stringify(actual)) {
        diffs.push(`${name} expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
      }
    };
    if (want.ref) {
      const r = this.#resolve(want.ref);
      if ('error' in r) diffs.push(r.error);
      else if (r.id !== got.id) diffs.push(`expected ${want.ref.text} (${r.id}), got ${this.#label(got.id)}`);
    }
    field('type', want.type, got.type);
    field('status', want.status, got.status);
    field('source', want.source, got.source);
    field('durationInSeconds', want.durationInSeconds, got.durationInSeconds);
    field('description', want.description, got.description);
    if (want.resources) field('resources', [...want.resources].sort(), [...got.resources].sort());
    if (want.notBefore !== undefined) {
      const shown = this.#notBeforeText(got, want.notBefore);
      if (want.notBefore === 'started') {
        if (got.notBefore !== null) diffs.push(`notBefore expected "" (Started), got ${shown}`);
      } else {
        const created = this.#observed.get(got.id)?.createdAt ?? this.start;
        const expectedAt = want.notBefore.relative
          ? created + this.ms(want.notBefore.seconds)
          : this.start + this.ms(want.notBefore.seconds);
        if (got.notBefore === null || Math.abs(got.notBefore - expectedAt) > NOT_BEFORE_TOLERANCE_MS) {
          diffs.push(`notBefore expected "${formatTimeSpec(want.notBefore)}", got ${shown}`);
        }
      }
    }
    return diffs;
  }

  /** An actual NotBefore in the same terms as the expectation: after creation, or from the start. */
  #notBeforeText(got: EventView, like: TimeSpec | 'started'): string {
    if (got.notBefore === null) return '"" (Started)';
    const relative = like === 'started' || like.relative;
    const from = relative ? (this.#observed.get(got.id)?.createdAt ?? this.start) : this.start;
    return `"${relative ? '+' : ''}${formatOffset(this.nominal(got.notBefore - from))}"`;
  }

  #expectedJson(e: ExpectedEvent): Record<string, unknown> {
    const { ref, notBefore, ...rest } = e;
    return {
      ...(ref ? { ref: ref.text } : {}),
      ...rest,
      ...(notBefore !== undefined ? { notBefore: notBefore === 'started' ? '' : formatTimeSpec(notBefore) } : {}),
    };
  }

  #view(e: EventView): Record<string, unknown> {
    return {
      event: this.#label(e.id),
      id: e.id,
      type: e.type,
      status: e.status,
      resources: [...e.resources],
      source: e.source,
      durationInSeconds: e.durationInSeconds,
      notBefore: e.notBefore === null ? '' : this.#notBeforeText(e, { relative: true, seconds: 0 }).slice(1, -1),
    };
  }

  #summary(e: EventView): string {
    return `${this.#label(e.id)} ${e.type} ${e.status} [${e.resources.join(',')}]`;
  }

  #label(id: string): string {
    return this.#labels.get(id) ?? id;
  }

  /** A time given as "+X" after `target`, or "X" from the start. */
  #time(spec: TimeSpec, target: number): number {
    return (spec.relative ? target : this.start) + this.ms(spec.seconds);
  }

  /** Learns the tenant and creation time of live events, and names the events of named operations. */
  #observe(): void {
    for (const e of this.engine.events()) {
      if (!this.#observed.has(e.id)) this.#observed.set(e.id, { tenant: e.tenant, createdAt: e.createdAt });
    }
    for (const [name, opId] of this.#operations) {
      if (opId === null) continue;
      const op = this.engine.operation(opId);
      op.events.forEach((id, k) => {
        if (this.#labels.has(id)) return;
        const tenant = this.#observed.get(id)?.tenant ?? op.tenant;
        this.#labels.set(id, op.steps ? `${name}#${k}` : op.events.length > 1 && tenant ? `${name}.${tenant}` : name);
      });
    }
  }

  #resolve(ref: EventRef): { id: string } | { error: string } {
    const opId = this.#operations.get(ref.name);
    if (opId === undefined) return { error: `${ref.text}: the operation named ${ref.name} has not run yet` };
    if (opId === null) return { error: `${ref.text}: the operation named ${ref.name} was refused, so it has no events` };
    const op = this.engine.operation(opId);
    const events = op.events;
    if (ref.index !== undefined) {
      const id = events[ref.index];
      if (id === undefined) {
        return {
          error: `${ref.text} has not been created yet: ${ref.name} has created ${events.length} event${events.length === 1 ? '' : 's'} so far`,
        };
      }
      return { id };
    }
    if (ref.tenant !== undefined) {
      const tenantOf = (id: string) => this.#observed.get(id)?.tenant ?? op.tenant;
      const id = events.find((e) => tenantOf(e) === ref.tenant);
      if (id === undefined) {
        const have = [...new Set(events.map(tenantOf))].join(', ') || 'none';
        return { error: `${ref.text}: ${ref.name} has no event for tenant '${ref.tenant}' (its tenants: ${have})` };
      }
      return { id };
    }
    const id = events[0];
    if (id === undefined) return { error: `${ref.text}: ${ref.name} created no events` };
    return { id };
  }
}
