// The controller put together: the agent's runner, journal, budget and shutdown (agent.ts, fed through
// its EventFeed), with Event Grid deliveries in place of IMDS polling and ARM's acknowledge route in
// place of IMDS's POST. One process for a whole fleet.
import { readFileSync } from 'node:fs';
import type { TokenCredential } from '@azure/identity';
import { Agent, type EventFeed } from '../agent.js';
import { wallClock } from '../../shared/clock.js';
import type { FleetStore } from '../coordination/store.js';
import type { Logger } from '../logger.js';
import type { AgentMetrics } from '../metrics.js';
import { PEERS, loadPeer } from '../peers.js';
import type { RunAction } from '../runner-context.js';
import { armApprovals } from './arm-approvals.js';
import type { ArmCredentialConfig, ControllerConfig } from './controller-config.js';
import { EventGridMonitor } from './monitor.js';
import { startReceiver, type Receiver } from './receiver.js';

export interface ControllerOptions {
  config: ControllerConfig;
  logger: Logger;
  /** Log every decision, do nothing: no actions, no approvals, a throwaway copy of the journal. */
  dryRun?: boolean;
  /** Default: the one `arm.credential` names. */
  credential?: TokenCredential;
  /** For ARM requests; default global fetch. */
  fetch?: typeof fetch;
  metrics?: AgentMetrics;
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  runAction?: RunAction;
  fleetStore?: FleetStore;
  env?: NodeJS.ProcessEnv;
  /** Called once the webhook listens, with its URL (the secret left out). */
  onListening?: (webhookUrl: string) => void;
}

/** Reads a secret from a file; errors name the file and the setting, never what the file holds. */
export function readSecretFile(path: string, setting: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`${setting}: cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : (code ?? (err as Error).message)}`, {
      cause: err,
    });
  }
  const secret = text.trim();
  if (secret === '') throw new Error(`${setting}: ${path} is empty`);
  return secret;
}

/** The credential `arm.credential` names; @azure/identity is loaded only for the two kinds that need it. */
export async function armCredential(c: ArmCredentialConfig): Promise<TokenCredential> {
  if (c.kind === 'token') {
    readSecretFile(c.tokenFile, 'arm.credential.tokenFile');
    // Read again at each request, so a token renewed in place is picked up.
    return {
      getToken: async () => ({ token: readSecretFile(c.tokenFile, 'arm.credential.tokenFile'), expiresOnTimestamp: wallClock() + 60_000 }),
    };
  }
  const identity = await loadPeer(PEERS.armIdentity, () => import('@azure/identity'));
  if (c.kind === 'managedIdentity') {
    return c.clientId !== null
      ? new identity.ManagedIdentityCredential({ clientId: c.clientId })
      : new identity.ManagedIdentityCredential();
  }
  const secret = readSecretFile(c.secretFile, 'arm.credential.secretFile');
  return new identity.ClientSecretCredential(
    c.tenantId,
    c.clientId,
    secret,
    c.authorityHost !== null ? { authorityHost: c.authorityHost } : {},
  );
}

export class Controller {
  readonly agent: Agent;
  readonly #o: ControllerOptions;
  #monitor: EventGridMonitor | null = null;
  #receiver: Receiver | null = null;
  #credential: TokenCredential | null;
  #secret: string | null = null;

  constructor(options: ControllerOptions) {
    this.#o = options;
    this.#credential = options.credential ?? null;
    const { config, logger } = options;
    let approvals: ReturnType<typeof armApprovals> | null = null;
    const feed: EventFeed = {
      name: config.name,
      monitor: (services) => {
        const monitor = new EventGridMonitor(services);
        this.#monitor = monitor;
        return { run: (sink, signal) => this.#serve(monitor, sink, signal) };
      },
      approvals: {
        approve: (eventId, signal) => {
          approvals ??= armApprovals({
            endpoint: config.arm.endpoint,
            credential: this.#credential!,
            subjectOf: (id) => this.#monitor?.subjectOf(id),
            log: logger,
            metrics: this.agent.metrics,
            ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
            ...(options.sleep !== undefined ? { sleep: options.sleep } : {}),
            ...(options.now !== undefined ? { now: options.now } : {}),
          });
          return approvals.approve(eventId, signal);
        },
        refused: (err) => approvals?.refused(err) ?? false,
      },
      readiness: () =>
        this.#receiver !== null
          ? { ready: true, reason: `taking Event Grid deliveries at ${this.#receiver.url}` }
          : { ready: false, reason: 'the Event Grid webhook is not listening yet' },
    };
    this.agent = new Agent({
      config: config.agent,
      logger,
      feed,
      ...(options.dryRun !== undefined ? { dryRun: options.dryRun } : {}),
      ...(options.metrics !== undefined ? { metrics: options.metrics } : {}),
      ...(options.now !== undefined ? { now: options.now } : {}),
      ...(options.sleep !== undefined ? { sleep: options.sleep } : {}),
      ...(options.runAction !== undefined ? { runAction: options.runAction } : {}),
      ...(options.fleetStore !== undefined ? { fleetStore: options.fleetStore } : {}),
      ...(options.env !== undefined ? { env: options.env } : {}),
    });
  }

  /** The webhook's URL once it listens. */
  get webhookUrl(): string | null {
    return this.#receiver?.url ?? null;
  }

  stop(): void {
    this.agent.stop();
  }

  abortActions(): void {
    this.agent.abortActions();
  }

  /** Reads its secrets and credential (a problem rejects before anything starts), then runs until `signal` aborts. */
  async run(signal?: AbortSignal): Promise<void> {
    const { config } = this.#o;
    if (config.eventGrid.secretFile !== null) this.#secret = readSecretFile(config.eventGrid.secretFile, 'eventGrid.secretFile');
    this.#credential ??= await armCredential(config.arm.credential);
    await this.agent.run(signal);
  }

  /** The monitor takes deliveries while the webhook listens; the webhook closes when the controller stops. */
  async #serve(monitor: EventGridMonitor, sink: Parameters<EventGridMonitor['run']>[0], signal: AbortSignal): Promise<void> {
    const { config, logger } = this.#o;
    const failed = new AbortController();
    const running = monitor.run(sink, AbortSignal.any([signal, failed.signal]));
    let receiver: Receiver;
    try {
      receiver = await startReceiver({
        listen: config.eventGrid.listen,
        path: config.eventGrid.path,
        schema: config.eventGrid.schema,
        secret: this.#secret,
        secretParameter: config.eventGrid.secretParameter,
        accept: (notifications) => monitor.accept(notifications),
        log: logger.child({ part: 'eventgrid' }),
        metrics: this.agent.metrics,
      });
    } catch (err) {
      failed.abort();
      await running;
      throw new Error(`cannot listen for Event Grid at ${config.eventGrid.listen}: ${(err as Error).message}`, { cause: err });
    }
    this.#receiver = receiver;
    logger.info(
      { webhook: receiver.url, schema: config.eventGrid.schema, secret: this.#secret !== null, arm: config.arm.endpoint },
      'taking Event Grid deliveries',
    );
    this.#o.onListening?.(receiver.url);
    try {
      await running;
    } finally {
      this.#receiver = null;
      await receiver.close();
    }
  }
}
