// POST /v1/scenarios, GET /v1/scenarios/:id and POST /v1/scenarios/:id/cancel: play a scenario on the emulator's own engine, clock and faults.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ControlContext } from '../context.js';
import { formatIso } from '../../protocol/time.js';
import { parseTimingFactor } from '../engine/timing.js';
import type { Scenario, ScenarioReport } from '../scenarios/format.js';
import { builtinScenarioNames, builtinScenarios, loadBuiltinScenario } from '../scenarios/library.js';
import { ScenarioError, scenarioFromObject } from '../scenarios/load.js';
import { MAX_FLEET_VMS, requestFleetTooBig } from '../fleet/file.js';
import { runScenario } from '../scenarios/runner.js';
import { HttpError } from '../http/error-map.js';
import { ScenarioBody, describeIssues, issuesField, type ScenarioRun } from './schemas.js';

/** Finished runs kept for GET; the oldest go first. */
const MAX_FINISHED_RUNS = 20;

// The scenario itself is checked by the scenario loader, which names the path and problem.
const Body = ScenarioBody.extend({ scenario: z.unknown().optional() });

interface RunEntry extends ScenarioRun {
  controller: AbortController | null;
  /** Settles once a system-clock run has stopped and its report is final. */
  done: Promise<void>;
}

/** What the rest of the control API may do to runs: POST /v1/reset stops them. */
export interface ScenarioRuns {
  /** Stops every running run between steps; each ends `aborted`. */
  stopAll(): Promise<void>;
}

export interface ScenarioRouteOptions {
  /** The most VMs a posted scenario's fleet may have; MAX_FLEET_VMS by default. */
  maxRequestVms?: number | undefined;
}

/** `notify` tells the live stream a run began or ended; the engine, clock and faults report their own changes. */
export function registerScenarioRoutes(
  app: FastifyInstance,
  ctx: ControlContext,
  notify: (topic: 'scenarios') => void = () => {},
  options: ScenarioRouteOptions = {},
): ScenarioRuns {
  const maxRequestVms = options.maxRequestVms ?? MAX_FLEET_VMS;
  if (!Number.isSafeInteger(maxRequestVms) || maxRequestVms < 1)
    throw new RangeError(`maxRequestVms must be a whole number of 1 or more, got ${maxRequestVms}`);
  const { engine, faults, rateLimiter } = ctx;
  const runs = new Map<string, RunEntry>();
  const json = (entry: RunEntry): ScenarioRun => ({ run: entry.run, status: entry.status, report: entry.report });

  const stopAll = async () => {
    const stopping = [...runs.values()].filter((entry) => entry.controller !== null);
    for (const entry of stopping) entry.controller!.abort();
    await Promise.all(stopping.map((entry) => entry.done));
  };

  app.addHook('onClose', stopAll);

  app.post('/v1/scenarios', async (request, reply) => {
    const parsed = Body.safeParse(request.body);
    if (!parsed.success) throw new HttpError(400, describeIssues(parsed.error.issues, request.body), issuesField(parsed.error.issues));
    const body = parsed.data;
    if ((body.name === undefined) === (body.scenario === undefined)) {
      throw new HttpError(400, 'give exactly one of "name" (a built-in scenario) or "scenario" (a scenario object)');
    }
    if (body.timing !== undefined) {
      const factor = typeof body.timing === 'number' ? body.timing : parseTimingFactor(body.timing);
      if (factor !== engine.timing.factor) {
        throw new HttpError(
          409,
          `this emulator runs at timing x${engine.timing.factor}, not x${factor}; restart it with --timing ${body.timing}, or leave timing out`,
          'timing',
        );
      }
    }
    let scenario: Scenario;
    if (body.name !== undefined) {
      const builtin = loadBuiltinScenario(body.name);
      if (!builtin)
        throw new HttpError(404, `no built-in scenario named '${body.name}'; built-ins: ${builtinScenarioNames().join(', ')}`, 'name');
      scenario = builtin;
    } else {
      // Counted on the raw body before anything is parsed or generated: a few bytes can ask for a million VMs.
      const fleet = typeof body.scenario === 'object' && body.scenario !== null ? (body.scenario as { fleet?: unknown }).fleet : undefined;
      const tooBig = requestFleetTooBig(fleet, maxRequestVms);
      if (tooBig) throw new HttpError(413, `scenario.fleet: ${tooBig}`, ['scenario', 'fleet']);
      try {
        scenario = scenarioFromObject(body.scenario);
      } catch (err) {
        if (!(err instanceof ScenarioError)) throw err;
        const field = `scenario${err.path === '' ? '' : err.path.startsWith('[') ? err.path : `.${err.path}`}`;
        throw new HttpError(400, `${field}: ${err.problem}`, field);
      }
    }
    // Checking and installing a fleet are each synchronous: let waiting IMDS requests in between the two.
    await new Promise((resolve) => setImmediate(resolve));

    // [choice] A new scenario replaces the fleet, so a run still going would only fail: stop it.
    for (const entry of runs.values()) entry.controller?.abort();
    rateLimiter.reset();
    const id = randomUUID();
    const entry: RunEntry = { run: id, status: 'running', report: placeholder(scenario, ctx), controller: null, done: Promise.resolve() };
    const finish = (report: ScenarioReport) => {
      entry.report = report;
      entry.status = report.aborted ? 'aborted' : report.passed ? 'passed' : 'failed';
      entry.controller = null;
      notify('scenarios');
    };
    keep(runs, entry);
    notify('scenarios');
    if (ctx.clock.mode === 'manual') {
      finish(await runScenario(scenario, { emulator: { engine, faults } }));
      return reply.code(200).send(json(entry));
    }
    const controller = new AbortController();
    entry.controller = controller;
    entry.done = runScenario(scenario, {
      emulator: { engine, faults },
      signal: controller.signal,
      onStart: (report) => void (entry.report = report),
    }).then(finish, (err: Error) => {
      request.log.error({ err }, `scenario run ${id} failed`);
      entry.status = 'aborted';
      entry.report.aborted = true;
      entry.controller = null;
      notify('scenarios');
    });
    return reply.code(202).header('location', `/v1/scenarios/${id}`).send(json(entry));
  });

  app.get('/v1/scenarios', async () => ({
    scenarios: builtinScenarios().map((s) => ({ name: s.name, description: s.description })),
  }));

  app.get<{ Params: { id: string } }>('/v1/scenarios/:id', async (request) => {
    const entry = runs.get(request.params.id.toLowerCase());
    if (!entry) throw new HttpError(404, `no scenario run with id ${request.params.id}`);
    return json(entry);
  });

  // [choice] Cancelling stops the run between steps and keeps what it did (events it created stay); 409 once it has ended.
  app.post<{ Params: { id: string } }>('/v1/scenarios/:id/cancel', async (request) => {
    const entry = runs.get(request.params.id.toLowerCase());
    if (!entry) throw new HttpError(404, `no scenario run with id ${request.params.id}`);
    if (entry.controller === null) throw new HttpError(409, `scenario run ${entry.run} has already ended: ${entry.status}`);
    entry.controller.abort();
    await entry.done;
    return json(entry);
  });

  return { stopAll };
}

/** The report until the run hands over its own (at once, as it starts). */
function placeholder(scenario: Scenario, ctx: ControlContext): ScenarioReport {
  return {
    name: scenario.name,
    description: scenario.description,
    passed: false,
    timing: ctx.engine.timing.factor,
    clock: ctx.clock.mode,
    startedAt: formatIso(ctx.clock.now()),
    finishedAt: null,
    aborted: false,
    steps: [],
  };
}

function keep(runs: Map<string, RunEntry>, entry: RunEntry): void {
  runs.set(entry.run, entry);
  const finished = [...runs.values()].filter((r) => r.status !== 'running');
  for (const old of finished.slice(0, Math.max(0, finished.length - MAX_FINISHED_RUNS))) runs.delete(old.run);
}
