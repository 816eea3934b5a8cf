// `forewarn agent --config FILE`: the per-VM daemon, until SIGTERM or SIGINT.
import type { Command } from 'commander';
import { Agent } from '../agent/agent.js';
import { AgentConfigError, loadAgentConfig, missingEnvRefs } from '../agent/config.js';
import { LOG_LEVELS, createLogger, isLogLevel, type LogLevel } from '../agent/logger.js';
import { missingPeers, missingText, type NeededPeer } from '../agent/peers.js';
import type { AgentConfig } from '../agent/types.js';
import { runAgentCheck } from './agent-check.js';
import { CliError, UsageError, configUsageError, type Io } from './errors.js';
import { runDaemon } from './stop-signal.js';

export interface RawAgentFlags {
  config: string;
  dryRun?: boolean;
  check?: boolean;
  logLevel?: string;
}

export interface AgentRequest {
  config: AgentConfig;
  dryRun: boolean;
  logLevel: LogLevel;
  /** `${env:…}` references the environment lacks: only a dry run starts with any, and warns of each. */
  missingSecrets: string[];
  /** Optional packages the config needs and this install lacks: no run starts with any; --check reports them. */
  missingPackages: NeededPeer[];
}

/** --log-level as given (default info), or a UsageError naming the levels. */
export function logLevelFlag(value: string | undefined): LogLevel {
  const level = value ?? 'info';
  if (!isLogLevel(level)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`);
  return level;
}

/** Each `${env:…}` the config's http actions name that `env` lacks, as a line for the user. */
export function missingSecretLines(config: Pick<AgentConfig, 'rules'>, env: Io['env']): string[] {
  return missingEnvRefs(config, env).map(
    ({ name, neededBy }) => `environment variable ${name} is not set (needed by ${neededBy.join(', ')})`,
  );
}

/** Loads and checks everything before anything starts; every problem is a UsageError (exit 2). */
export function parseAgentArgs(flags: RawAgentFlags, env: Io['env'] = {}): AgentRequest {
  const level = logLevelFlag(flags.logLevel);
  let config: AgentConfig;
  try {
    config = loadAgentConfig(flags.config);
  } catch (err) {
    if (!(err instanceof AgentConfigError)) throw err;
    throw configUsageError('agent', err.problems);
  }
  // The file wins over FOREWARN_ENDPOINT, which wins over IMDS's own address (SPEC §4).
  const endpoint = config.endpoint ?? (env.FOREWARN_ENDPOINT || null);
  if (endpoint !== null) {
    let url: URL | null = null;
    try {
      url = new URL(endpoint);
    } catch {
      // reported below
    }
    const source = config.endpoint !== null ? `endpoint in ${flags.config}` : 'FOREWARN_ENDPOINT';
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '') {
      throw new UsageError(`${source} must be an http(s) base URL such as http://169.254.169.254, got "${endpoint}"`);
    }
  }
  // A secret the environment lacks would fail the first event that needs it, minutes before a Reboot: say so now.
  const missingSecrets = missingSecretLines(config, env);
  const dryRun = flags.dryRun ?? false;
  if (missingSecrets.length > 0 && !dryRun) {
    throw new UsageError(`the agent config needs variables the environment lacks:\n${missingSecrets.map((m) => `  ${m}`).join('\n')}`);
  }
  // The clients of Kubernetes, etcd and Azure are optional peers: a config that needs one that is missing cannot run, even dry.
  const missingPackages = missingPeers(config, env);
  if (missingPackages.length > 0 && !(flags.check ?? false)) {
    throw new UsageError(
      `the agent config needs packages this install lacks:\n${missingPackages.map((m) => `  ${missingText(m)}`).join('\n')}`,
    );
  }
  return { config: { ...config, endpoint }, dryRun, logLevel: level, missingSecrets, missingPackages };
}

export function registerAgentCommand(program: Command, io: Io): void {
  program
    .command('agent')
    .description('run the per-VM agent: prepare for scheduled events, approve them when safe, recover afterwards')
    .requiredOption('--config <FILE>', 'agent config, YAML or JSON (see examples/agent.yaml)')
    .option('--dry-run', 'log every decision and do nothing: no actions, no approvals, no journal writes')
    .option('--log-level <LEVEL>', `one of ${LOG_LEVELS.join(', ')}`, 'info')
    .option(
      '--check',
      'check the config, its secrets, IMDS, the fleet store and node, say what each event type would do, and exit (1 on any problem)',
    )
    .action(async (flags: RawAgentFlags) => {
      if (flags.check === true) {
        // Missing secrets are the check's to report, with everything else, rather than stop it.
        const problems = await runAgentCheck(parseAgentArgs({ ...flags, dryRun: true }, io.env), flags.config, io);
        if (problems > 0) throw new CliError(`the check found ${problems} problem${problems === 1 ? '' : 's'}`);
        return;
      }
      const request = parseAgentArgs(flags, io.env);
      const logger = createLogger({ level: request.logLevel });
      for (const missing of request.missingSecrets) logger.warn({}, `dry run: ${missing}; a real run would not start`);
      const agent = new Agent({ config: request.config, logger, dryRun: request.dryRun, env: io.env });
      // First signal: stop polling and let running actions finish within the grace; a second: abort them now.
      await runDaemon(agent, logger, 'agent');
    });
}
