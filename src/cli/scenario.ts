// `forewarn scenario list | validate FILE | run NAME|FILE`: scripted maintenance stories.
import { existsSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { stringify as stringifyYaml } from 'yaml';
import type { Command } from 'commander';
import { Emulator } from '../emulator/emulator.js';
import { TIMING_PROFILES, parseTimingFactor } from '../emulator/engine/timing.js';
import type { ScenarioRun } from '../emulator/control/schemas.js';
import type { Scenario, ScenarioReport, StepReport } from '../emulator/scenarios/format.js';
import { builtinScenarios, loadBuiltinScenario } from '../emulator/scenarios/library.js';
import { ScenarioError, loadScenarioFile } from '../emulator/scenarios/load.js';
import { runScenario } from '../emulator/scenarios/runner.js';
import { scenarioFromRecording } from '../emulator/scenarios/from-recording.js';
import { parseHostPort, type HostPort } from './address.js';
import { DEFAULT_IMDS } from './emulator.js';
import { callControl, resolveToken } from './control-api.js';
import { CliError, UsageError, type Io } from './errors.js';
import { loadRecording } from './replay.js';

/** [choice] A manual-clock run posted to an emulator should answer at once; this covers a slow machine. */
const REQUEST_TIMEOUT_MS = 60_000;
/** How often a system-clock run on a remote emulator is polled for new steps. */
const POLL_MS = 500;
/** The shell's code for a command ended by Ctrl-C (128 + SIGINT). */
export const INTERRUPTED_EXIT_CODE = 130;

export interface RawScenarioRunFlags {
  timing?: string;
  clock?: string;
  imds?: string;
  control?: string;
  token?: string;
  tokenFile?: string;
  json?: boolean;
}

export interface ScenarioRunRequest {
  scenario: Scenario;
  /** As given, for the control API; undefined means the default. */
  timing: string | undefined;
  timingFactor: number;
  clock: 'manual' | 'system';
  imds: HostPort;
  controlUrl: string | undefined;
  token: string | undefined;
  /** About how the token was given (on argv, in a file others can read). */
  warnings?: string[];
  json: boolean;
}

/** A built-in's name or a file's path; problems are UsageErrors (exit 2). */
export function resolveScenario(target: string): Scenario {
  if (existsSync(target)) {
    try {
      return loadScenarioFile(target);
    } catch (err) {
      if (err instanceof ScenarioError) throw new UsageError(err.message);
      throw err;
    }
  }
  const builtin = loadBuiltinScenario(target);
  if (builtin) return builtin;
  if (/[/\\]|\.(ya?ml|json)$/i.test(target)) throw new UsageError(`${target}: no such file`);
  throw new UsageError(`"${target}" is neither a built-in scenario nor a file; \`forewarn scenario list\` names the built-ins`);
}

/** Checks the arguments and reads the scenario; problems are UsageErrors (exit 2). */
export function parseScenarioRunArgs(target: string, flags: RawScenarioRunFlags, env: Io['env'] = {}): ScenarioRunRequest {
  let timingFactor: number;
  try {
    timingFactor = parseTimingFactor(flags.timing ?? 'realistic');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (flags.clock !== undefined && flags.clock !== 'manual' && flags.clock !== 'system') {
    throw new UsageError(`--clock must be manual or system, got "${flags.clock}"`);
  }
  const clock = flags.clock ?? 'manual';
  let controlUrl: string | undefined;
  if (flags.control !== undefined) {
    if (flags.clock !== undefined) throw new UsageError('--clock applies to runs here; the emulator at --control runs on its own clock');
    if (flags.imds !== undefined) throw new UsageError('--imds applies to runs here; the emulator at --control has its own IMDS');
    controlUrl = flags.control.replace(/\/+$/, '');
    let url: URL;
    try {
      url = new URL(controlUrl);
    } catch {
      throw new UsageError(`--control must be a URL such as http://127.0.0.1:8170, got "${flags.control}"`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UsageError(`--control must be an http(s) URL, got "${flags.control}"`);
  } else if (flags.imds !== undefined && clock !== 'system') {
    throw new UsageError('--imds needs --clock system: a manual-clock run is instant, with no IMDS to watch');
  }
  const imds = parseHostPort(flags.imds ?? DEFAULT_IMDS, '--imds');
  const { token, warnings } = resolveToken(flags, env);
  return {
    scenario: resolveScenario(target),
    timing: flags.timing,
    timingFactor,
    clock,
    imds,
    controlUrl,
    token,
    warnings,
    json: flags.json ?? false,
  };
}

function timingName(factor: number): string {
  const named = Object.entries(TIMING_PROFILES).find(([, f]) => f === factor)?.[0];
  return `x${factor}${named ? ` (${named})` : ''}`;
}

export function formatStep(step: StepReport): string {
  const head = `  ${step.ok ? 'ok  ' : 'FAIL'}  ${step.at.padEnd(8)} ${step.summary}`;
  if (!step.ok) return `${head}\n${' '.repeat(16)}${step.message ?? ''}\n`;
  return `${head}${step.action === 'operation' && step.message ? ` (${step.message})` : ''}\n`;
}

export function formatSummary(report: ScenarioReport): string {
  const failed = report.steps.filter((s) => !s.ok).length;
  if (report.passed) return `passed: all ${report.steps.length} steps\n`;
  const parts = [];
  if (failed > 0) parts.push(`${failed} of ${report.steps.length} steps failed`);
  if (report.aborted) parts.push('stopped before the end');
  return `FAILED: ${parts.join(', ')}\n`;
}

/** Runs a scenario here or on a remote emulator and prints it; a failed run is a CliError (exit 1). */
export async function runScenarioCommand(request: ScenarioRunRequest, io: Io): Promise<ScenarioReport> {
  const { scenario } = request;
  const print = (text: string) => {
    if (!request.json) io.stdout(text);
  };
  print(`scenario ${scenario.name}: ${scenario.description}\n`);
  const interrupted: Interruption = { controller: new AbortController(), signal: null };
  let report: ScenarioReport;
  if (request.controlUrl !== undefined) {
    report = await whileInterruptible(interrupted, io, (signal) => runRemote(request, print, signal, io));
  } else if (request.clock === 'manual') {
    print(`timing ${timingName(request.timingFactor)}, manual clock\n`);
    report = await runScenario(scenario, {
      clock: 'manual',
      timingFactor: request.timingFactor,
      onStep: (step) => print(formatStep(step)),
    });
  } else {
    report = await whileInterruptible(interrupted, io, (signal) => runLive(request, print, signal));
  }
  if (request.json) io.stdout(`${JSON.stringify(report, null, 2)}\n`);
  else print(formatSummary(report));
  if (interrupted.signal !== null) {
    // [choice] Ctrl-C is not a failed expectation: exit 130 as a shell does, after the report so far.
    throw Object.assign(new CliError(`scenario ${scenario.name} stopped by ${interrupted.signal}`), { exitCode: INTERRUPTED_EXIT_CODE });
  }
  if (!report.passed) throw new CliError(`scenario ${scenario.name} failed`);
  return report;
}

/** SIGINT/SIGTERM while a run plays: abort it instead of dying with a half-told story. */
interface Interruption {
  controller: AbortController;
  signal: NodeJS.Signals | null;
}

async function whileInterruptible<T>(interrupted: Interruption, io: Io, body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const stop = (signal: NodeJS.Signals) => {
    if (interrupted.signal !== null) return;
    interrupted.signal = signal;
    io.stderr(`forewarn: ${signal}: stopping the scenario\n`);
    interrupted.controller.abort();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    return await body(interrupted.controller.signal);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/** The system clock: an emulator serves the story on IMDS while it unfolds, so an app can watch it. */
async function runLive(request: ScenarioRunRequest, print: (text: string) => void, signal: AbortSignal): Promise<ScenarioReport> {
  const { scenario } = request;
  const emulator = await Emulator.create({ fleet: scenario.fleet, clock: 'system', timingFactor: request.timingFactor, logger: false });
  let urls: { imdsUrl: string; controlUrl: string };
  try {
    urls = await emulator.listen({ imds: request.imds, control: { host: '127.0.0.1', port: 0 } });
  } catch (err) {
    await emulator.close();
    const e = err as NodeJS.ErrnoException;
    throw new CliError(
      `cannot listen on ${request.imds.host}:${request.imds.port}: ${e.code === 'EADDRINUSE' ? 'the address is already in use' : e.message}`,
    );
  }
  const vms = scenario.fleet.map((vm) => vm.name);
  print(`timing ${timingName(request.timingFactor)}, system clock; IMDS at ${urls.imdsUrl}\n`);
  print(
    vms.length === 1
      ? `VM ${vms[0]} is the only VM: plain /metadata/scheduledevents is its document\n`
      : `VMs ${vms.join(', ')}: ${urls.imdsUrl}/vms/NAME/metadata/scheduledevents\n`,
  );
  print(`control API and dashboard at ${urls.controlUrl}; Ctrl-C stops the run\n`);
  try {
    return await runScenario(scenario, {
      emulator,
      replaceFleet: false,
      signal,
      onStep: (step) => print(formatStep(step)),
    });
  } finally {
    await emulator.close();
  }
}

interface RunAnswer {
  run: string;
  status: ScenarioRun['status'];
  report: ScenarioReport;
}

async function runRemote(request: ScenarioRunRequest, print: (text: string) => void, signal: AbortSignal, io: Io): Promise<ScenarioReport> {
  const base = request.controlUrl!;
  const timing =
    request.timing === undefined ? undefined : Number.isFinite(Number(request.timing)) ? Number(request.timing) : request.timing;
  const body = { scenario: request.scenario.source, ...(timing !== undefined ? { timing } : {}) };
  let answer = await call(base, '/v1/scenarios', request.token, body);
  print(`timing ${timingName(answer.report.timing)}, the ${answer.report.clock} clock of ${base}\n`);
  if (answer.status === 'running') print(`run ${answer.run}: ${base}/v1/scenarios/${answer.run}; Ctrl-C cancels it\n`);
  let shown = 0;
  const show = () => {
    for (; shown < answer.report.steps.length; shown++) print(formatStep(answer.report.steps[shown]!));
  };
  show();
  while (answer.status === 'running') {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, POLL_MS);
      signal.addEventListener('abort', done, { once: true });
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
    });
    answer = signal.aborted
      ? await cancelRemote(base, answer, request.token, io)
      : await call(base, `/v1/scenarios/${answer.run}`, request.token);
    show();
  }
  return answer.report;
}

/** Ctrl-C on a remote run: it would play on without us, so cancel it there. */
async function cancelRemote(base: string, answer: RunAnswer, token: string | undefined, io: Io): Promise<RunAnswer> {
  try {
    const cancelled = await call(base, `/v1/scenarios/${answer.run}/cancel`, token, {});
    io.stderr(`forewarn: cancelled run ${answer.run} on ${base}\n`);
    return cancelled;
  } catch (err) {
    // 409: it ended on its own meanwhile; show how.
    if (err instanceof UsageError && / 409\b|already ended/.test(err.message)) return call(base, `/v1/scenarios/${answer.run}`, token);
    throw err;
  }
}

async function call(controlUrl: string, path: string, token: string | undefined, body?: unknown): Promise<RunAnswer> {
  const url = `${controlUrl}${path}`;
  const { data, text } = await callControl({
    method: body === undefined ? 'GET' : 'POST',
    url,
    controlUrl,
    body,
    token,
    timeoutMs: REQUEST_TIMEOUT_MS,
    // The emulator judged the scenario or the flags: a usage problem, like a bad file here.
    usageStatuses: [400, 404, 409],
  });
  const answer = data as RunAnswer | undefined;
  if (!answer || typeof answer.run !== 'string' || typeof answer.report !== 'object')
    throw new CliError(`unexpected answer from ${url}: ${text.slice(0, 200)}`);
  return answer;
}

export function registerScenarioCommand(program: Command, io: Io): void {
  const scenario = program.command('scenario').description('scripted maintenance stories: list, validate and run them');
  scenario
    .command('list')
    .description('the built-in scenarios')
    .option('--json', 'print names and descriptions as JSON')
    .action((flags: { json?: boolean }) => {
      const all = builtinScenarios();
      if (flags.json) {
        io.stdout(
          `${JSON.stringify(
            all.map((s) => ({ name: s.name, description: s.description })),
            null,
            2,
          )}\n`,
        );
        return;
      }
      const width = Math.max(...all.map((s) => s.name.length));
      for (const s of all) io.stdout(`${s.name.padEnd(width)}  ${s.description}\n`);
    });
  scenario
    .command('from-recording')
    .description('turn a recording (forewarn record) into a scenario whose expectations are what the VM saw')
    .argument('<FILE>', 'the recording')
    .option('--name <NAME>', 'the scenario name (default: the file name)')
    .option('--output <FILE>', 'write the scenario here (a new file) instead of stdout')
    .action((file: string, flags: { name?: string; output?: string }) => {
      const recording = loadRecording(file);
      const name = flags.name ?? basename(file).replace(/\.[^.]*$/, '');
      let text: string;
      try {
        text = stringifyYaml(scenarioFromRecording(recording, name));
      } catch (err) {
        throw new UsageError(`${file}: ${(err as Error).message}`);
      }
      if (flags.output === undefined) return io.stdout(text);
      try {
        writeFileSync(flags.output, text, { flag: 'wx' });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') throw new UsageError(`--output ${flags.output} already exists; name a new file`);
        throw new CliError(`cannot write ${flags.output}: ${code ?? (err as Error).message}`);
      }
      io.stderr(`forewarn: wrote scenario ${name} (${recording.changes.length} documents) to ${flags.output}\n`);
    });
  scenario
    .command('validate')
    .description('check a scenario file; errors name file:line:col')
    .argument('<FILE>')
    .action((file: string) => {
      let loaded: Scenario;
      try {
        loaded = loadScenarioFile(file);
      } catch (err) {
        if (err instanceof ScenarioError) throw new UsageError(err.message);
        throw err;
      }
      io.stdout(`${file}: valid (scenario ${loaded.name}, ${loaded.steps.length} steps, ${loaded.fleet.length} VMs)\n`);
    });
  scenario
    .command('run')
    .description('play a built-in or a file; exit 0 when every expectation holds, 1 when one fails')
    .argument('<NAME|FILE>')
    .option(
      `--timing <${Object.keys(TIMING_PROFILES).join('|')}|FACTOR>`,
      `realistic (default), dev (${TIMING_PROFILES.dev}x faster) or a factor`,
    )
    .option('--clock <manual|system>', 'manual runs instantly (default); system plays it in real time on an emulator')
    .option('--imds <HOST:PORT>', `with --clock system: where its IMDS listens (default ${DEFAULT_IMDS})`)
    .option('--control <URL>', 'run it on the emulator at this control API instead')
    .option('--token <TOKEN>', 'bearer token of that control API; `ps` shows it, so prefer env FOREWARN_TOKEN or --token-file')
    .option('--token-file <FILE>', 'read the bearer token from FILE, so it stays out of `ps`')
    .option('--json', 'print the report as JSON')
    .action(async (target: string, flags: RawScenarioRunFlags) => {
      const request = parseScenarioRunArgs(target, flags, io.env);
      for (const warning of request.warnings ?? []) io.stderr(`forewarn: warning: ${warning}\n`);
      await runScenarioCommand(request, io);
    });
}
