// The runtime: one engine behind the IMDS and control servers, a timer that keeps time moving, and the state file.
import { isIP, type AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { formatIso } from '../protocol/time.js';
import type { ActivationOptions } from './engine/activation.js';
import { ManualClock, SystemClock, wallClock, type Clock } from '../shared/clock.js';
import { Engine, type EngineSnapshot } from './engine/engine.js';
import { EngineError } from './engine/errors.js';
import type { VmSpec } from './engine/fleet.js';
import { Timing } from './engine/timing.js';
import { buildControlServer } from './control/server.js';
import { IMPACT_NEEDS_TOKEN, ImpactController } from './impact/controller.js';
import { FaultRegistry } from './imds/faults.js';
import { EventGrid } from './eventgrid/event-grid.js';
import { buildImdsServer } from './imds/server.js';
import { TokenIssuer } from './imds/managed-identity.js';
import { DEFAULT_RATE_LIMIT, RateLimiter } from './imds/rate-limit.js';
import { StateFileError, StateFileWriter, readStateFile } from './state/file.js';
import type { FileOps } from '../shared/atomic-file.js';

export interface EmulatorOptions {
  /** Absent: one standalone VM named vm0. */
  fleet?: VmSpec[];
  clock?: 'system' | 'manual' | Clock;
  timingFactor?: number;
  /** Scheduled Events activation; off (every VM sees its events from the start) by default. */
  activation?: ActivationOptions;
  /** Requests a second per VM; 0 turns the limit off. */
  rateLimit?: number;
  /** Ended events, finished operations and deleted VMs kept; DEFAULT_HISTORY_LIMIT by default, 0 keeps none. */
  historyLimit?: number;
  token?: string;
  /** Real impact: bind VMs to local processes and signal them. Needs `token`. */
  impact?: boolean;
  /** Host names or addresses, besides loopback ones and the one it listens on, that the control API answers without a token. */
  allowHosts?: readonly string[];
  statePath?: string;
  /** The state file's file calls; tests inject failures and count fsyncs. */
  stateFileOps?: FileOps;
  /** The most VMs one control API request may build; MAX_FLEET_VMS by default. */
  maxRequestVms?: number;
  /** Streams open at once on GET /v1/stream before 503; DEFAULT_MAX_STREAMS by default. */
  maxStreams?: number;
  /** A stream's unsent backlog past which it is dropped; DEFAULT_STREAM_BUFFER_KIB KiB by default. */
  streamBufferBytes?: number;
  logger?: boolean | object;
  newId?: () => string;
}

export interface ListenOptions {
  imds: { host: string; port: number };
  control: { host: string; port: number };
}

/** [choice] The fleet when none is given, as SPEC §4 says for the CLI. */
export const DEFAULT_FLEET: readonly VmSpec[] = [{ name: 'vm0' }];

/** Never sleep longer than this, so a suspended laptop or a clock jump is caught within a minute. */
const MAX_TIMER_MS = 60_000;

export class Emulator {
  readonly #stateWriter: StateFileWriter | undefined;
  /** The control API's allowed Host names; listen adds the name it binds. */
  #allowHosts: string[] = [];
  #timer: NodeJS.Timeout | undefined;
  #timerAt: number | undefined;
  #unsubscribe: (() => void) | undefined;
  #closing: Promise<void> | undefined;
  #impact!: ImpactController;
  #eventGrid!: EventGrid;

  private constructor(
    readonly engine: Engine,
    readonly clock: Clock,
    readonly faults: FaultRegistry,
    readonly rateLimiter: RateLimiter,
    readonly imds: FastifyInstance,
    readonly control: FastifyInstance,
    /** The state file this run carried on from, if any. */
    readonly restoredFrom: string | undefined,
    stateWriter: StateFileWriter | undefined,
  ) {
    this.#stateWriter = stateWriter;
  }

  static async create(options: EmulatorOptions = {}): Promise<Emulator> {
    const statePath = options.statePath;
    // Read the state first: a corrupt file must stop us before anything could overwrite it.
    const contents = statePath === undefined ? undefined : readStateFile(statePath);
    const snapshot = contents?.snapshot;
    const clock = makeClock(options.clock, snapshot);
    const timing = new Timing(options.timingFactor ?? 1);
    const engine = new Engine({
      clock,
      timing,
      fleet: options.fleet ?? DEFAULT_FLEET,
      ...(options.activation ? { activation: options.activation } : {}),
      ...(options.newId ? { newId: options.newId } : {}),
      ...(options.historyLimit !== undefined ? { historyLimit: options.historyLimit } : {}),
    });
    if (snapshot) {
      try {
        engine.restore(snapshot);
      } catch (err) {
        if (err instanceof EngineError)
          throw new StateFileError(`${statePath}: the saved state cannot be restored: ${err.message}`, statePath!);
        throw err;
      }
    }
    const faults = new FaultRegistry();
    const rateLimiter = new RateLimiter(options.rateLimit ?? DEFAULT_RATE_LIMIT);
    const serverOptions = options.logger === undefined ? {} : { logger: options.logger };
    let writer: StateFileWriter | undefined;
    // With a state file, responses to changes wait for them to be saved (the writer starts below).
    const durable = statePath === undefined ? undefined : () => writer!.durable();
    // One signing key for the VMs' managed identity tokens and the ARM routes that check them.
    const tokens = new TokenIssuer();
    const imds = buildImdsServer({ engine, faults, rateLimiter, durable, tokens }, serverOptions);
    const allowHosts = [...(options.allowHosts ?? [])];
    // Real impact on processes bound to VMs; closed with the emulator, so no command it started outlives it.
    if (options.impact === true && (options.token === undefined || options.token === '')) throw new Error(IMPACT_NEEDS_TOKEN);
    const impact = new ImpactController(engine, { enabled: options.impact === true });
    // Event Grid delivery, fed by the engine; [choice] its subscriptions and pending deliveries live in memory only.
    const eventGrid = new EventGrid({ engine, faults });
    const control = buildControlServer(
      { engine, clock, faults, rateLimiter, token: options.token, allowHosts, durable, tokens },
      {
        ...serverOptions,
        ...(options.maxRequestVms !== undefined ? { maxRequestVms: options.maxRequestVms } : {}),
        ...(options.maxStreams !== undefined ? { maxStreams: options.maxStreams } : {}),
        ...(options.streamBufferBytes !== undefined ? { streamBufferBytes: options.streamBufferBytes } : {}),
        impact,
        eventGrid,
      },
    );
    if (snapshot) {
      const message = `restored state from ${statePath}, saved at ${formatIso(snapshot.savedAt)}`;
      if (options.fleet) control.log.warn(`${message}; the fleet given alongside it is ignored (the state file wins)`);
      else control.log.info(message);
      for (const warning of contents!.warnings) control.log.warn(warning);
    }
    if (statePath !== undefined) {
      // The writer's errors name the file and the cause; one per failure streak.
      writer = new StateFileWriter(statePath, engine, (err) => control.log.error(err.message), {
        ...(options.stateFileOps ? { ops: options.stateFileOps } : {}),
      });
      try {
        writer.start();
      } catch (err) {
        eventGrid.close();
        await Promise.allSettled([imds.close(), control.close(), impact.close()]);
        throw new StateFileError(`${statePath}: cannot write the state file: ${(err as Error).message}`, statePath);
      }
    }
    const emulator = new Emulator(engine, clock, faults, rateLimiter, imds, control, snapshot ? statePath : undefined, writer);
    emulator.#allowHosts = allowHosts;
    emulator.#impact = impact;
    emulator.#eventGrid = eventGrid;
    emulator.#startTimer();
    return emulator;
  }

  /** Event Grid: webhook subscriptions and their deliveries. */
  get eventGrid(): EventGrid {
    return this.#eventGrid;
  }

  /** Real impact: the processes bound to VMs and what was done to them. */
  get impact(): ImpactController {
    return this.#impact;
  }

  /** Starts both servers; port 0 picks a free port, and the URLs report the real ones. */
  async listen(options: ListenOptions): Promise<{ imdsUrl: string; controlUrl: string }> {
    await this.imds.listen({ host: options.imds.host, port: options.imds.port });
    try {
      await this.control.listen({ host: options.control.host, port: options.control.port });
    } catch (err) {
      await this.imds.close();
      throw err;
    }
    // [choice] The name or address the control API was told to listen on is its own; a wildcard is no name.
    if (!WILDCARD_HOSTS.has(options.control.host)) this.#allowHosts.push(options.control.host);
    return {
      imdsUrl: urlFor(options.imds.host, (this.imds.server.address() as AddressInfo).port),
      controlUrl: urlFor(options.control.host, (this.control.server.address() as AddressInfo).port),
    };
  }

  /** Stops the timer, saves the state and closes both servers. Safe to call twice. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stopTimer();
      // First: aborts webhook requests and handshakes, so a slow webhook holds up neither close nor a control request.
      this.#eventGrid.close();
      this.#stateWriter?.flush();
      try {
        await Promise.all([this.imds.close(), this.control.close(), this.#impact.close()]);
      } finally {
        // Anything that changed while requests drained is saved too.
        this.#stateWriter?.close();
      }
    })();
    return this.#closing;
  }

  // With the system clock, nobody has to poll for NotBefore to pass: one timer sleeps until the next transition.
  #startTimer(): void {
    if (this.clock.mode !== 'system') return;
    this.#unsubscribe = this.engine.onMutation(() => this.#arm());
    this.#arm();
  }

  #arm(): void {
    if (this.#closing) return;
    const due = this.engine.nextDue();
    if (due === undefined) {
      this.#clearTimer();
      return;
    }
    if (this.#timer && this.#timerAt === due) return;
    this.#clearTimer();
    const delay = Math.min(Math.max(0, due - this.clock.now()), MAX_TIMER_MS, 2 ** 31 - 1);
    this.#timerAt = due;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = undefined;
      try {
        this.engine.tick();
      } catch (err) {
        this.control.log.error(`engine tick failed: ${(err as Error).message}`);
      }
      this.#arm();
    }, delay);
    this.#timer.unref();
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = undefined;
  }

  #stopTimer(): void {
    this.#clearTimer();
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }
}

function makeClock(option: EmulatorOptions['clock'], snapshot: EngineSnapshot | undefined): Clock {
  if (option === undefined || option === 'system') return new SystemClock();
  // [choice] A restarted manual clock resumes where the saved state left off, so time never runs backwards.
  if (option === 'manual') return new ManualClock(Math.max(wallClock(), snapshot?.savedAt ?? 0));
  return option;
}

/** Hosts that mean "every address" to listen. */
const WILDCARD_HOSTS = new Set(['', '0.0.0.0', '::']);

/** A URL a local client can use; a wildcard bind is reached through loopback. */
export function urlFor(host: string, port: number): string {
  const h = WILDCARD_HOSTS.has(host) ? (host === '::' ? '::1' : '127.0.0.1') : host;
  return `http://${isIP(h) === 6 ? `[${h}]` : h}:${port}`;
}
