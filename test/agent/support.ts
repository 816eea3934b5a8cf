// The agent in-process for its loop tests: an in-process emulator on a manual clock, rules and a config
// to run the agent with, and a harness that keeps the agent's log and runs it until the test stops it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, afterEach, before, beforeEach } from 'node:test';
import type { Agent } from '../../src/agent/agent.js';
import { DurableJournal } from '../../src/agent/durable-journal.js';
import { Journal, type JournalOptions } from '../../src/agent/journal.js';
import { createLogger, type Logger } from '../../src/agent/logger.js';
import { AgentMetrics } from '../../src/agent/metrics.js';
import type { AgentServices } from '../../src/agent/services.js';
import { sleep } from '../../src/client/retry.js';
import type { Action, ActionContext, ActionResult, AgentConfig, Rule } from '../../src/agent/types.js';
import { normalizeKubernetes } from '../../src/agent/config.js';
import { ScheduledEventsClient } from '../../src/client/index.js';
import { Emulator } from '../../src/emulator/emulator.js';
import { waitFor } from '../support/wait.js';

export { rule } from '../support/fixtures.js';

export type Log = Record<string, unknown>;
export type Behaviour = (ctx: ActionContext) => Promise<ActionResult>;

export interface InProcessEmulator {
  emulator: Emulator;
  imdsUrl: string;
}

/**
 * An emulator in this process on a manual clock, without rate limiting, listening on loopback: it
 * starts before the tests of the file this is called in, and closes after them.
 */
export function inProcessEmulator(): InProcessEmulator {
  const emu = {} as InProcessEmulator;
  before(async () => {
    emu.emulator = await Emulator.create({ clock: 'manual', rateLimit: 0 });
    ({ imdsUrl: emu.imdsUrl } = await emu.emulator.listen({
      imds: { host: '127.0.0.1', port: 0 },
      control: { host: '127.0.0.1', port: 0 },
    }));
  });
  after(() => emu.emulator.close());
  return emu;
}

/** What each test of a suite works in: its own folder, and the harness it runs (if any). */
export interface PerTest<H extends AgentHarness> {
  dir: string;
  harness: H | null;
}

/**
 * Called in a describe body: before each of its tests a fresh folder and an emulator back at its start, no faults;
 * after each, the test's harness (if it set one) stops, then the folder goes.
 */
export function perTest<H extends AgentHarness>(emu: InProcessEmulator, name: string): PerTest<H> {
  const state: PerTest<H> = { dir: '', harness: null };
  beforeEach(() => {
    state.dir = mkdtempSync(join(tmpdir(), `forewarn-${name}-`));
    emu.emulator.engine.reset();
    emu.emulator.faults.clear();
  });
  afterEach(async () => {
    await state.harness?.stop();
    state.harness = null;
    rmSync(state.dir, { recursive: true, force: true });
  });
  return state;
}

export const ok = (durationMs = 0): ActionResult => ({ ok: true, attempts: 1, error: null, durationMs });

export function logAction(name: string): Action {
  return { type: 'log', name, message: name, level: 'info' };
}

/** The agent's config for VM vm0 polling every 50 ms, with no status server unless `over` gives one. */
export function agentConfig(endpoint: string, journal: string, rules: Rule[], over: Partial<AgentConfig> = {}): AgentConfig {
  return {
    endpoint,
    apiVersion: '2020-07-01',
    pollIntervalSeconds: 0.05,
    vmName: 'vm0',
    journal,
    journalUnwritable: { policy: 'prepare-before-notbefore', prepareWithinSeconds: 120 },
    listen: null,
    leader: { mode: 'first', standby: null },
    readyWithinSeconds: 5,
    shutdownGraceSeconds: 0.3,
    rules,
    kubernetes: normalizeKubernetes(),
    budget: null,
    ...over,
  };
}

/** A client that gives up quickly, for the agent under test. */
export function testClient(endpoint: string): ScheduledEventsClient {
  return new ScheduledEventsClient({ endpoint, retry: { maxAttempts: 2, baseDelayMs: 10 } });
}

/** Has `client` tell `seen` of each approval before it sends it. */
export function watchApprovals(client: ScheduledEventsClient, seen: (ids: string) => void): void {
  const approve = client.approve.bind(client);
  client.approve = async (ids, opts) => {
    seen(String(ids));
    return approve(ids, opts);
  };
}

/** One agent under test: its log lines kept in `logs`, run from `start()` until `stop()`. */
export abstract class AgentHarness {
  readonly logs: Log[] = [];
  readonly behaviours = new Map<string, Behaviour>();
  readonly controller = new AbortController();
  abstract readonly agent: Agent;
  done: Promise<void> | null = null;

  /** A debug logger whose lines land in `logs`. */
  protected logger(): Logger {
    const sink = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        for (const line of chunk.toString().split('\n')) if (line) this.logs.push(JSON.parse(line) as Log);
        cb();
      },
    });
    return createLogger({ level: 'debug', destination: sink });
  }

  start(): this {
    this.done = this.agent.run(this.controller.signal);
    return this;
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await this.done;
  }

  /** How many log lines have this message (or one it matches), of this event if one is given. */
  count(msg: string | RegExp, eventId?: string): number {
    return this.logs.filter(
      (l) => (eventId === undefined || l.eventId === eventId) && (typeof msg === 'string' ? l.msg === msg : msg.test(String(l.msg))),
    ).length;
  }
}

/** Polls `probe` every `everyMs` (10 ms) until it gives something other than undefined or false, for up to 5 s. */
export function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 5_000,
  everyMs = 10,
): Promise<T> {
  return waitFor(what, probe, timeoutMs, everyMs);
}

/** The agent's services over a journal at `path` (a fresh folder's when absent), with the background work to wait for. */
export function servicesAt(
  path = join(mkdtempSync(join(tmpdir(), 'forewarn-services-')), 'journal.json'),
  journalOptions: JournalOptions = {},
) {
  const journal = Journal.open(path, journalOptions);
  const work = new Set<Promise<void>>();
  const stop = new AbortController();
  const services: AgentServices = {
    log: createLogger({ level: 'silent' }),
    metrics: new AgentMetrics({ defaultMetrics: false }),
    now: () => Date.now(),
    sleep,
    wait: (ms, signal) =>
      signal.aborted
        ? Promise.resolve(false)
        : sleep(ms, signal).then(
            () => true,
            () => false,
          ),
    stopped: stop.signal,
    track: (w) => {
      work.add(w);
      void w.finally(() => work.delete(w));
    },
    journal: () => journal,
  };
  return { path, journal, services, durable: new DurableJournal({ ...services, path }), stop, work };
}
