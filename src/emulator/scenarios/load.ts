// Reads a scenario (YAML or JSON) and checks it whole; every error names file:line:col, the field and the problem.
import { isMap, isNode, isPair, isScalar, type Document, type Node } from 'yaml';
import type { z } from 'zod';
import type { VmSpec } from '../engine/fleet.js';
import { FleetFileError, parseFleet } from '../fleet/file.js';
import {
  CheckedDocument,
  DocumentError,
  errorTelling,
  type Located,
  MISSING,
  formatPath,
  issueProblems,
  readDocumentFile,
  type Path,
  type Problem,
} from '../../shared/checked-document.js';
import {
  ACTIONS,
  OFFSET_HELP,
  ScenarioDocumentSchema,
  parseOffset,
  formatOffset,
  type Action,
  type EventRef,
  type ExpectedEvent,
  type Scenario,
  type ScenarioDocument,
  type ScenarioStep,
  type TimeSpec,
} from './format.js';

/** A problem in a scenario: file, line, col, the field path (`steps[2].approve.vm`, empty for the whole) and the problem. */
export class ScenarioError extends DocumentError {
  override name = 'ScenarioError';
}

export function loadScenarioFile(path: string): Scenario {
  return parseScenario(readDocumentFile(path, 'scenario', ScenarioError), path);
}

/** A scenario given as data (a control API body); errors name `label` and the path. */
export function scenarioFromObject(value: unknown, label = 'scenario'): Scenario {
  // Going through text gives the same checks and messages as a file; its lines mean nothing to the sender.
  const scenario = parseScenario(JSON.stringify(value ?? null, null, 2), label);
  return { ...scenario, steps: scenario.steps.map((step) => ({ ...step, line: 0 })) };
}

export function parseScenario(text: string, file: string): Scenario {
  const source = new CheckedDocument(text, file, {
    error: ScenarioError,
    empty: 'the scenario is empty; expected a mapping with name, fleet and steps',
  });
  const parsed = ScenarioDocumentSchema.safeParse(source.data);
  // The fleet is checked even when the steps are not, so one run lists every problem in file order.
  let fleet: VmSpec[] = [];
  let fleetProblems: readonly Located[] = [];
  try {
    fleet = loadFleet(source, text);
  } catch (err) {
    if (!(err instanceof ScenarioError) || parsed.success) throw err;
    fleetProblems = err.located;
  }
  if (!parsed.success) {
    const located = [...source.locate(issueProblems(parsed.error.issues, scenarioWording)), ...fleetProblems];
    throw errorTelling(
      ScenarioError,
      located.sort((a, b) => a.line - b.line || a.col - b.col),
    );
  }
  const written = parsed.data;
  const checked = checkSteps(written, fleet);
  if (checked.problems.length > 0) throw source.all(checked.problems);
  return {
    name: written.name,
    description: written.description ?? '',
    file,
    fleet,
    steps: checked.steps.map((step) => ({ ...step, line: source.lineOf(['steps', step.index]) })),
    source: source.data as ScenarioDocument,
  };
}

/** The scenario's own words for some of zod's issues; undefined keeps the shared wording. */
function scenarioWording(issue: z.core.$ZodIssue, path: Path): string | undefined {
  if (issue.code === 'unrecognized_keys') {
    // A step's extra key is almost always a misspelt or invented action.
    const isStep = path.length === 3 && path[0] === 'steps' && typeof path[1] === 'number';
    return isStep ? `unknown action "${String(path[2])}"; a step takes at, as and one of ${ACTIONS.join(', ')}` : undefined;
  }
  if (issue.code === 'invalid_union' && path.at(-1) === 'at') return `expected ${OFFSET_HELP}`;
  if (issue.code === 'invalid_type' && path.at(-1) === 'notBefore') {
    // YAML reads +30 as the number 30, so a relative time has to be quoted.
    return `expected a string: "" (Started), "+OFFSET" or "OFFSET"; quote it, e.g. "+30s"`;
  }
  return undefined;
}

/**
 * The fleet is checked by the fleet file's own parser, on the file's text with everything
 * outside the fleet blanked: the offsets stay, so its errors point into this file.
 */
function loadFleet(source: CheckedDocument<ScenarioError>, text: string): VmSpec[] {
  const doc: Document = source.doc;
  const node = isMap(doc.contents)
    ? doc.contents.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === 'fleet')?.value
    : undefined;
  const range = isNode(node) ? (node as Node).range : undefined;
  if (!range) throw source.error({ path: ['fleet'], message: MISSING });
  const [start, , end] = range;
  let masked = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    masked += (i >= start && i < end) || c === '\n' || c === '\r' ? c : ' ';
  }
  // Read as YAML whatever the file's extension: the scenario's own parse has judged its syntax.
  try {
    return parseFleet(masked, `${source.file}#fleet.yaml`);
  } catch (err) {
    if (!(err instanceof FleetFileError)) throw err;
    // The fleet's places are this file's; its paths are under `fleet`.
    const located = err.located.map((at) => ({
      file: source.file,
      line: at.line,
      col: at.col,
      path: at.path === '' ? 'fleet' : at.path.startsWith('[') ? `fleet${at.path}` : `fleet.${at.path}`,
      problem: at.problem,
    }));
    throw errorTelling(ScenarioError, located);
  }
}

const NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const REF = /^([A-Za-z_][A-Za-z0-9_-]*)(?:\.(.+)|#(\d+))?$/;

type WrittenStep = ScenarioDocument['steps'][number];

/** The checks that need the whole scenario: offsets, order, one action, names and references. */
function checkSteps(written: ScenarioDocument, fleet: readonly VmSpec[]): { steps: Omit<ScenarioStep, 'line'>[]; problems: Problem[] } {
  const problems: Problem[] = [];
  const vms = new Set(fleet.map((vm) => vm.name));
  const tenants = new Set(fleet.map((vm) => vm.tenant ?? vm.name));
  const hosts = new Set(fleet.map((vm) => vm.host ?? `host-${vm.name}`));
  /** Operation names, with the step that defines each. */
  const named = new Map<string, number>();
  written.steps.forEach((step, i) => {
    if (step.operation && step.as !== undefined && NAME.test(step.as) && !named.has(step.as)) named.set(step.as, i);
  });

  const vm = (name: string, path: Path) => {
    if (!vms.has(name)) problems.push({ path, message: `no VM named '${name}' in the scenario's fleet` });
  };
  const ref = (text: string, path: Path, i: number): EventRef => {
    const m = REF.exec(text);
    if (!m) {
      problems.push({ path, message: `"${text}" is not an event reference; write NAME, NAME.TENANT or NAME#K` });
      return { text, name: text };
    }
    const [, name, tenant, index] = m;
    const definedAt = named.get(name!);
    if (definedAt === undefined) {
      problems.push({ path, message: `unknown reference "${text}": no operation step has "as: ${name}"` });
    } else if (definedAt >= i) {
      problems.push({
        path,
        message: `"${text}" refers to ${formatPath(['steps', definedAt])}, which comes ${definedAt === i ? 'in this step' : 'later'}`,
      });
    }
    if (tenant !== undefined && !tenants.has(tenant))
      problems.push({ path, message: `"${text}": no tenant named '${tenant}' in the scenario's fleet` });
    return { text, name: name!, tenant, index: index === undefined ? undefined : Number(index) };
  };
  const timeSpec = (text: string, path: Path, what: string): TimeSpec | undefined => {
    const relative = text.trim().startsWith('+');
    const seconds = parseOffset(relative ? text.trim().slice(1) : text);
    if (seconds === null) {
      problems.push({ path, message: `bad ${what} "${text}": expected "+OFFSET" or "OFFSET", with OFFSET ${OFFSET_HELP}` });
      return undefined;
    }
    return { relative, seconds };
  };

  const steps: Omit<ScenarioStep, 'line'>[] = [];
  let previous: { at: number; index: number } | undefined;
  written.steps.forEach((step, i) => {
    const at: Path = ['steps', i];
    const offset = parseOffset(step.at);
    if (offset === null) {
      problems.push({ path: [...at, 'at'], message: `bad offset ${JSON.stringify(step.at)}: expected ${OFFSET_HELP}` });
    } else if (previous && offset < previous.at) {
      problems.push({
        path: [...at, 'at'],
        message: `at ${formatOffset(offset)} is earlier than ${formatOffset(previous.at)} of steps[${previous.index}]; steps run in order, so at never decreases`,
      });
    }
    if (offset !== null) previous = { at: offset, index: i };
    const present = ACTIONS.filter((a) => step[a] !== undefined);
    if (present.length === 0) {
      problems.push({ path: at, message: `a step needs one action: ${ACTIONS.join(', ')}` });
      return;
    }
    if (present.length > 1) {
      problems.push({
        path: [...at, present[1]!],
        key: present[1],
        message: `a step has exactly one action; this one has ${present.join(' and ')}`,
      });
      return;
    }
    if (step.as !== undefined) {
      if (!step.operation) problems.push({ path: [...at, 'as'], message: "as names an operation's events; this step has no operation" });
      else if (!NAME.test(step.as))
        problems.push({ path: [...at, 'as'], message: `"${step.as}" must be letters, digits, '_' or '-', starting with a letter or '_'` });
      else if (named.get(step.as) !== i)
        problems.push({ path: [...at, 'as'], message: `"${step.as}" already names steps[${named.get(step.as)}]` });
    }
    const action = checkAction(step, at, i, { vm, ref, timeSpec, problems, tenants, hosts, offset: offset ?? 0 });
    if (action) steps.push({ index: i, at: offset ?? 0, action });
  });
  return { steps, problems };
}

interface Checkers {
  vm(name: string, path: Path): void;
  ref(text: string, path: Path, i: number): EventRef;
  timeSpec(text: string, path: Path, what: string): TimeSpec | undefined;
  problems: Problem[];
  tenants: ReadonlySet<string>;
  hosts: ReadonlySet<string>;
  offset: number;
}

function checkAction(step: WrittenStep, at: Path, i: number, c: Checkers): Action | undefined {
  if (step.operation) {
    const o = step.operation;
    const p: Path = [...at, 'operation'];
    const targets = [o.vms, o.host, o.tenant].filter((t) => t !== undefined).length;
    if (targets !== 1) c.problems.push({ path: p, message: 'an operation needs exactly one target: vms, host or tenant' });
    o.vms?.forEach((name, j) => c.vm(name, [...p, 'vms', j]));
    if (o.host !== undefined && !c.hosts.has(o.host))
      c.problems.push({ path: [...p, 'host'], message: `no host named '${o.host}' in the scenario's fleet` });
    if (o.tenant !== undefined && !c.tenants.has(o.tenant)) {
      c.problems.push({ path: [...p, 'tenant'], message: `no tenant named '${o.tenant}' in the scenario's fleet` });
    }
    let notBefore: TimeSpec | undefined;
    if (o.notBefore !== undefined) {
      notBefore = c.timeSpec(o.notBefore, [...p, 'notBefore'], 'notBefore');
      if (notBefore && !notBefore.relative && notBefore.seconds < c.offset) {
        c.problems.push({ path: [...p, 'notBefore'], message: `notBefore ${formatOffset(notBefore.seconds)} is before this step's at` });
      }
    }
    const { notBefore: _nb, ...rest } = o;
    return { kind: 'operation', as: step.as, ...rest, notBefore };
  }
  if (step.approve) {
    const a = step.approve;
    const p: Path = [...at, 'approve'];
    c.vm(a.vm, [...p, 'vm']);
    return {
      kind: 'approve',
      vm: a.vm,
      events: a.events.map((r, j) => c.ref(r, [...p, 'events', j], i)),
      expectStatus: a.expectStatus ?? 200,
    };
  }
  for (const kind of ['cancel', 'complete'] as const) {
    const e = step[kind];
    if (e === undefined) continue;
    const p: Path = [...at, kind];
    if (typeof e === 'string') return { kind, event: c.ref(e, p, i), expectStatus: 200 };
    return { kind, event: c.ref(e.event, [...p, 'event'], i), expectStatus: e.expectStatus ?? 200 };
  }
  if (step.fault) {
    const f = step.fault;
    const p: Path = [...at, 'fault'];
    if (f.vm !== undefined) c.vm(f.vm, [...p, 'vm']);
    if (f.status === undefined && f.latencyMs === undefined && f.drop !== true) {
      c.problems.push({ path: p, message: 'a fault needs at least one of status, latencyMs or drop: true' });
    }
    return { kind: 'fault', fault: f };
  }
  const e = step.expect!;
  const p: Path = [...at, 'expect'];
  c.vm(e.vm, [...p, 'vm']);
  const gone = e.gone ?? false;
  if (gone && e.events !== undefined)
    c.problems.push({ path: [...p, 'events'], message: 'a VM that is gone has no document; drop events or gone' });
  if (gone && e.incarnation !== undefined)
    c.problems.push({ path: [...p, 'incarnation'], message: 'a VM that is gone has no incarnation' });
  if (!gone && e.events === undefined) {
    c.problems.push({ path: p, message: 'expect needs events (the whole document; [] for none) or gone: true' });
  }
  const events = e.events?.map((x, j): ExpectedEvent => {
    const q: Path = [...p, 'events', j];
    const { ref, notBefore, ...rest } = x;
    let nb: ExpectedEvent['notBefore'];
    if (notBefore !== undefined) nb = notBefore === '' ? 'started' : c.timeSpec(notBefore, [...q, 'notBefore'], 'notBefore');
    return { ...rest, ref: ref === undefined ? undefined : c.ref(ref, [...q, 'ref'], i), notBefore: nb };
  });
  return { kind: 'expect', vm: e.vm, events, gone, incarnation: e.incarnation };
}
