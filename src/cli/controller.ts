// `forewarn controller --config FILE`: the agent's rules for a whole fleet, fed by Event Grid and
// approving through ARM, until SIGTERM or SIGINT.
import type { Command } from 'commander';
import { Controller } from '../agent/eventgrid/controller.js';
import { ControllerConfigError, loadControllerConfig, type ControllerConfig } from '../agent/eventgrid/controller-config.js';
import { LOG_LEVELS, createLogger, type LogLevel } from '../agent/logger.js';
import { logLevelFlag, missingSecretLines } from './agent.js';
import { PEERS, missingText, resolvable } from '../agent/peers.js';
import { UsageError, configUsageError, type Io } from './errors.js';
import { runDaemon } from './stop-signal.js';

export interface RawControllerFlags {
  config: string;
  dryRun?: boolean;
  logLevel?: string;
}

export interface ControllerRequest {
  config: ControllerConfig;
  dryRun: boolean;
  logLevel: LogLevel;
  /** `${env:…}` references the environment lacks: only a dry run starts with any, and warns of each. */
  missingSecrets: string[];
}

/** Loads and checks everything before anything starts; every problem is a UsageError (exit 2). */
export function parseControllerArgs(flags: RawControllerFlags, env: Io['env'] = {}): ControllerRequest {
  const level = logLevelFlag(flags.logLevel);
  let config: ControllerConfig;
  try {
    config = loadControllerConfig(flags.config);
  } catch (err) {
    if (!(err instanceof ControllerConfigError)) throw err;
    throw configUsageError('controller', err.problems);
  }
  const missingSecrets = missingSecretLines(config.agent, env);
  const dryRun = flags.dryRun ?? false;
  if (missingSecrets.length > 0 && !dryRun) {
    throw new UsageError(`the controller config needs variables the environment lacks:\n${missingSecrets.map((m) => `  ${m}`).join('\n')}`);
  }
  const peers = [
    ...(config.arm.credential.kind !== 'token' ? [PEERS.armIdentity] : []),
    ...(config.agent.budget?.backend === 'etcd' ? [PEERS.etcd] : []),
    ...(config.agent.budget?.backend === 'azure-blob'
      ? [PEERS.blob, ...(env.AZURE_STORAGE_CONNECTION_STRING ? [] : [PEERS.identity])]
      : []),
  ];
  const missing = peers.filter((p) => !resolvable(p.name));
  if (missing.length > 0) {
    throw new UsageError(
      `the controller config needs packages this install lacks:\n${missing.map((m) => `  ${missingText(m)}`).join('\n')}`,
    );
  }
  return { config, dryRun, logLevel: level, missingSecrets };
}

export function registerControllerCommand(program: Command, io: Io): void {
  program
    .command('controller')
    .description("run the agent's rules for a whole fleet from Event Grid deliveries, approving through ARM (docs/controller.md)")
    .requiredOption('--config <FILE>', 'controller config, YAML or JSON (see examples/controller.yaml)')
    .option('--dry-run', 'log every decision and do nothing: no actions, no approvals, no journal writes')
    .option('--log-level <LEVEL>', `one of ${LOG_LEVELS.join(', ')}`, 'info')
    .action(async (flags: RawControllerFlags) => {
      const request = parseControllerArgs(flags, io.env);
      const logger = createLogger({ level: request.logLevel });
      for (const missing of request.missingSecrets) logger.warn({}, `dry run: ${missing}; a real run would not start`);
      const controller = new Controller({ config: request.config, logger, dryRun: request.dryRun, env: io.env });
      await runDaemon(controller, logger, 'controller');
    });
}
