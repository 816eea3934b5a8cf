// `forewarn emulator`: run the local Scheduled Events service until SIGINT/SIGTERM.
import { readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Command } from 'commander';
import { LATEST_API_VERSION } from '../protocol/versions.js';
import { DEFAULT_FIRST_CALL_DELAY_SECONDS, type ActivationOptions } from '../emulator/engine/activation.js';
import { MAX_FIRST_CALL_DELAY_SECONDS, TIMING_PROFILES, parseTimingFactor } from '../emulator/engine/timing.js';
import { ACTIVATION_MODES, CLOCK_MODES, isOneOf } from '../protocol/control.js';
import type { Emulator, EmulatorOptions } from '../emulator/emulator.js';
import { launchEmulator, type EmulatorHandle } from '../emulator/library.js';
import { EmulatorOptionError } from '../emulator/library-options.js';
import { DEFAULT_HISTORY_LIMIT } from '../emulator/engine/engine.js';
import { DEFAULT_RATE_LIMIT } from '../emulator/imds/rate-limit.js';
import { DEFAULT_MAX_STREAMS, DEFAULT_STREAM_BUFFER_KIB, MAX_STREAMS_RANGE, STREAM_BUFFER_KIB_RANGE } from '../emulator/control/stream.js';
import { FleetFileError, MAX_FLEET_VMS, MAX_REQUEST_VMS_RANGE, loadFleetFile } from '../emulator/fleet/file.js';
import type { VmSpec } from '../emulator/engine/fleet.js';
import { normalizeAllowedHost } from '../emulator/control/request-guard.js';
import { isLoopback, parseHostPort, type HostPort } from './address.js';
import { formatHostPort } from '../shared/host-port.js';
import { writeFileAtomicSync } from '../shared/atomic-file.js';
import { resolveToken } from './control-api.js';
import { IMPACT_NEEDS_TOKEN } from '../emulator/impact/controller.js';
import { CliError, UsageError, type Io } from './errors.js';
import { LINK_LOCAL, claimLinkLocal, type LinkLocalClaim } from './link-local.js';

export const DEFAULT_IMDS = '127.0.0.1:8169';
export const DEFAULT_CONTROL = '127.0.0.1:8170';

/** The flags as commander hands them over: strings, checked by parseEmulatorOptions. */
export interface RawEmulatorFlags {
  imds?: string;
  control?: string;
  fleet?: string;
  timing?: string;
  clock?: string;
  rateLimit?: string;
  historyLimit?: string;
  activation?: string;
  activationDelay?: string;
  state?: string;
  token?: string;
  tokenFile?: string;
  impact?: boolean;
  allowHost?: string[];
  logLevel?: string;
  maxStreams?: string;
  streamBufferKib?: string;
  maxRequestVms?: string;
  json?: boolean;
  pidfile?: string;
  linkLocal?: boolean;
}

export interface EmulatorCliOptions {
  imds: HostPort;
  control: HostPort;
  fleetPath?: string | undefined;
  fleet?: VmSpec[] | undefined;
  timingFactor: number;
  clock: (typeof CLOCK_MODES)[number];
  rateLimit: number;
  /** Ended events, finished operations and deleted VMs kept; the engine's default when absent. */
  historyLimit?: number | undefined;
  activation: ActivationOptions;
  statePath?: string | undefined;
  token?: string | undefined;
  /** Where the token came from, when from a file: the banner's curl lines read it from there. */
  tokenFile?: string | undefined;
  /** Real impact on processes bound to VMs (docs/impact.md); needs the token. */
  impact?: boolean | undefined;
  /** Host names, besides loopback ones, that the control API answers without a token. */
  allowHosts?: string[] | undefined;
  /** Things to tell the user on stderr at start, such as a token visible in `ps`. */
  warnings?: string[] | undefined;
  logLevel: string;
  maxStreams: number;
  streamBufferKiB: number;
  maxRequestVms: number;
  /** Print one JSON ready line on stdout and the human banner on stderr. */
  json?: boolean | undefined;
  /** Where to write the emulator's own pid once it listens: npx and npm run wrap it in processes of their own. */
  pidfile?: string | undefined;
  /** IMDS at http://169.254.169.254 (port 80), the address put on lo for the run (link-local.ts). */
  linkLocal?: boolean | undefined;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Checks every flag and reads the fleet file; any problem is a UsageError (exit 2). */
export function parseEmulatorOptions(flags: RawEmulatorFlags, env: Io['env'] = {}): EmulatorCliOptions {
  const activation = parseActivation(flags.activation ?? 'off', flags.activationDelay);
  const clock = flags.clock ?? 'system';
  if (!isOneOf(CLOCK_MODES, clock)) throw new UsageError(`--clock must be ${CLOCK_MODES.join(' or ')}, got "${clock}"`);
  let timingFactor: number;
  try {
    timingFactor = parseTimingFactor(flags.timing ?? 'realistic');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const rateText = flags.rateLimit ?? String(DEFAULT_RATE_LIMIT);
  const rateLimit = Number(rateText);
  if (rateText.trim() === '' || !Number.isFinite(rateLimit) || rateLimit < 0) {
    throw new UsageError(`--rate-limit must be a number of requests a second, 0 or more (0 turns it off), got "${rateText}"`);
  }
  const historyLimit = parseHistoryLimit(flags.historyLimit);
  const logLevel = flags.logLevel ?? env.FOREWARN_LOG_LEVEL ?? 'warn';
  if (!LOG_LEVELS.includes(logLevel)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const { token, warnings } = resolveToken(flags, env);
  if (flags.impact === true && token === undefined) throw new UsageError(`--impact: ${IMPACT_NEEDS_TOKEN}`);
  const allowHosts = (flags.allowHost ?? []).map((name) => {
    try {
      return normalizeAllowedHost(name);
    } catch (err) {
      throw new UsageError(`--allow-host: ${(err as Error).message}`);
    }
  });
  let fleet: VmSpec[] | undefined;
  if (flags.fleet !== undefined) {
    try {
      fleet = loadFleetFile(flags.fleet);
    } catch (err) {
      if (err instanceof FleetFileError) throw new UsageError(err.message);
      throw err;
    }
  }
  const maxStreams = wholeNumber('--max-streams', flags.maxStreams, DEFAULT_MAX_STREAMS, MAX_STREAMS_RANGE);
  const streamBufferKiB = wholeNumber('--stream-buffer-kib', flags.streamBufferKib, DEFAULT_STREAM_BUFFER_KIB, STREAM_BUFFER_KIB_RANGE);
  const maxRequestVms = wholeNumber('--max-request-vms', flags.maxRequestVms, MAX_FLEET_VMS, MAX_REQUEST_VMS_RANGE);
  const linkLocal = flags.linkLocal === true;
  // Commander fills in the default, so only a value other than it can tell a given --imds apart.
  if (linkLocal && flags.imds !== undefined && flags.imds !== DEFAULT_IMDS) {
    throw new UsageError(`--link-local serves IMDS at ${LINK_LOCAL.host}:${LINK_LOCAL.port}; leave out --imds ${flags.imds}`);
  }
  return {
    imds: linkLocal ? { host: LINK_LOCAL.host, port: LINK_LOCAL.port } : parseHostPort(flags.imds ?? DEFAULT_IMDS, '--imds'),
    control: parseHostPort(flags.control ?? DEFAULT_CONTROL, '--control'),
    fleetPath: flags.fleet,
    fleet,
    timingFactor,
    clock,
    rateLimit,
    historyLimit,
    activation,
    statePath: flags.state,
    token,
    tokenFile: flags.tokenFile,
    impact: flags.impact === true,
    allowHosts,
    warnings,
    logLevel,
    maxStreams,
    streamBufferKiB,
    maxRequestVms,
    json: flags.json ?? false,
    ...(flags.pidfile !== undefined ? { pidfile: flags.pidfile } : {}),
    ...(linkLocal ? { linkLocal } : {}),
  };
}

function parseHistoryLimit(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(n)) {
    throw new UsageError(`--history-limit must be a whole number of ended events to keep, 0 or more (0 keeps none), got "${text}"`);
  }
  return n;
}

function wholeNumber(flag: string, text: string | undefined, fallback: number, range: { min: number; max: number }): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || n < range.min || n > range.max) {
    throw new UsageError(`${flag} must be a whole number from ${range.min} to ${range.max}, got "${text}"`);
  }
  return n;
}

function parseActivation(mode: string, delayText: string | undefined): ActivationOptions {
  if (!isOneOf(ACTIVATION_MODES, mode)) throw new UsageError(`--activation must be ${ACTIVATION_MODES.join(' or ')}, got "${mode}"`);
  if (mode === 'off') {
    // Silently ignoring it would leave the user wondering why nothing is delayed.
    if (delayText !== undefined) throw new UsageError('--activation-delay applies only with --activation realistic');
    return { mode };
  }
  if (delayText === undefined) return { mode, firstCallDelaySeconds: DEFAULT_FIRST_CALL_DELAY_SECONDS };
  const delay = Number(delayText);
  if (delayText.trim() === '' || !Number.isFinite(delay) || delay < 0 || delay > MAX_FIRST_CALL_DELAY_SECONDS) {
    throw new UsageError(`--activation-delay must be a number of seconds from 0 to ${MAX_FIRST_CALL_DELAY_SECONDS}, got "${delayText}"`);
  }
  return { mode, firstCallDelaySeconds: delay };
}

export interface RunningEmulator {
  emulator: Emulator;
  imdsUrl: string;
  controlUrl: string;
  /** The library's handle on it (forewarn/emulator). */
  handle: EmulatorHandle;
}

/** Creates and starts the emulator and prints where it is; does not install signal handlers. */
export async function startEmulator(options: EmulatorCliOptions, io: Io, logStream?: NodeJS.WritableStream): Promise<RunningEmulator> {
  for (const warning of options.warnings ?? []) io.stderr(`forewarn: warning: ${warning}\n`);
  if (!isLoopback(options.control.host) && options.token === undefined) {
    io.stderr(
      `forewarn: warning: the control API on ${options.control.host} is reachable from other machines and has no token; ` +
        'anyone who can reach it can change the fleet. Set FOREWARN_TOKEN or pass --token-file FILE.\n',
    );
  }
  const emulatorOptions: EmulatorOptions = {
    fleet: options.fleet,
    clock: options.clock,
    timingFactor: options.timingFactor,
    rateLimit: options.rateLimit,
    historyLimit: options.historyLimit,
    activation: options.activation,
    token: options.token,
    impact: options.impact === true,
    allowHosts: options.allowHosts,
    statePath: options.statePath,
    maxStreams: options.maxStreams,
    streamBufferBytes: options.streamBufferKiB * 1024,
    maxRequestVms: options.maxRequestVms,
    logger: options.logLevel === 'silent' ? false : { level: options.logLevel, stream: logStream ?? process.stderr },
  };
  // The library's launch: the flags are checked already; what is left is the state file (a usage error) and listening.
  let handle: EmulatorHandle;
  try {
    handle = await launchEmulator({ emulator: emulatorOptions, listen: { imds: options.imds, control: options.control } });
  } catch (err) {
    if (err instanceof EmulatorOptionError) throw new UsageError((err.cause as Error | undefined)?.message ?? err.message);
    if ((err as NodeJS.ErrnoException).code !== undefined) throw new CliError(listenProblem(err as NodeJS.ErrnoException, options));
    throw err;
  }
  const { emulator } = handle;
  const urls = { imdsUrl: handle.imdsUrl, controlUrl: handle.controlUrl };
  if (emulator.restoredFrom && options.fleetPath) {
    io.stderr(`forewarn: carrying on from ${emulator.restoredFrom}; the fleet in ${options.fleetPath} is ignored (the state file wins)\n`);
  }
  if (options.pidfile !== undefined) {
    try {
      writeFileAtomicSync(options.pidfile, `${process.pid}\n`);
    } catch (err) {
      await emulator.close();
      throw new CliError(`cannot write --pidfile ${options.pidfile}: ${(err as Error).message}`);
    }
  }
  announce(io, emulator, urls, options);
  return { emulator, ...urls, handle };
}

/** Removes the pidfile at a clean stop, if it still names this process (another may have taken it since). */
export function removePidfile(path: string | undefined): void {
  if (path === undefined) return;
  try {
    if (readFileSync(path, 'utf8').trim() === String(process.pid)) rmSync(path, { force: true });
  } catch {
    // Gone already, or unreadable: nothing of ours to remove.
  }
}

function listenProblem(err: NodeJS.ErrnoException & { address?: string; port?: number }, options: EmulatorCliOptions): string {
  const where =
    err.address !== undefined && err.port !== undefined
      ? formatHostPort(err.address, err.port)
      : `${options.imds.host}/${options.control.host}`;
  if (err.code === 'EADDRINUSE') return `cannot listen on ${where}: the address is already in use (is another emulator running?)`;
  if (err.code === 'EACCES') return `cannot listen on ${where}: permission denied`;
  if (err.code === 'EADDRNOTAVAIL') return `cannot listen on ${where}: no such local address`;
  return `cannot listen on ${where}: ${err.message}`;
}

/**
 * [choice] With --json, stdout carries exactly one line, written once both servers listen, so a
 * test suite in any language can wait for it; the banner still goes to stderr for a human.
 */
export function readyLine(urls: { imdsUrl: string; controlUrl: string }): string {
  return `${JSON.stringify({ event: 'ready', imdsUrl: urls.imdsUrl, controlUrl: urls.controlUrl, dashboardUrl: `${urls.controlUrl}/`, pid: process.pid, version: packageVersion() })}\n`;
}

function announce(io: Io, emulator: Emulator, urls: { imdsUrl: string; controlUrl: string }, options: EmulatorCliOptions): void {
  if (!options.json) return io.stdout(banner(emulator, urls, options));
  io.stderr(banner(emulator, urls, options));
  io.stdout(readyLine(urls));
}

function packageVersion(): string {
  // The same path from src/cli and dist/cli.
  return (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
}

/** What a first-time user needs: where it is, and commands to paste. */
export function banner(emulator: Emulator, urls: { imdsUrl: string; controlUrl: string }, options: EmulatorCliOptions): string {
  const vms = [...emulator.engine.fleet.vms.keys()];
  const lines = [
    `forewarn emulator: ${vms.length} VM${vms.length === 1 ? '' : 's'} (${summarize(vms)}), ` +
      `clock ${options.clock}, timing x${options.timingFactor}${emulator.restoredFrom ? `, state from ${emulator.restoredFrom}` : ''}`,
    `IMDS:      ${urls.imdsUrl}`,
    `Control:   ${urls.controlUrl}`,
    `Dashboard: ${urls.controlUrl}/  (open it in a browser)`,
  ];
  if (options.activation.mode === 'realistic') lines.push(activationLine(options));
  const vm = vms[0];
  if (vm !== undefined) {
    const prefix = vms.length > 1 ? `/vms/${vm}` : '';
    const bearer = options.tokenFile !== undefined ? `$(cat ${shellQuote(options.tokenFile)})` : '$FOREWARN_TOKEN';
    const auth = options.token !== undefined ? ` -H "Authorization: Bearer ${bearer}"` : '';
    lines.push(
      '',
      `Read ${vm}'s Scheduled Events document:`,
      `  curl -s -H 'Metadata: true' '${urls.imdsUrl}${prefix}/metadata/scheduledevents?api-version=${LATEST_API_VERSION}'`,
      `Schedule a Freeze of ${vm}:`,
      `  curl -s -X POST${auth} -H 'Content-Type: application/json' -d '{"type":"freeze","vms":["${vm}"]}' ${urls.controlUrl}/v1/operations`,
    );
    if (options.clock === 'manual') {
      lines.push(
        // NotBefore is rounded up to a whole second and this clock started mid-second: 900 s can fall just short.
        "Move the manual clock past the Freeze's NotBefore (15 minutes, rounded up to a whole second):",
        `  curl -s -X POST${auth} -H 'Content-Type: application/json' -d '{"seconds":901}' ${urls.controlUrl}/v1/clock/advance`,
      );
    }
  }
  lines.push('', 'Press Ctrl+C to stop.', '');
  return lines.join('\n');
}

function activationLine(options: EmulatorCliOptions): string {
  const nominal =
    options.activation.mode === 'realistic' ? (options.activation.firstCallDelaySeconds ?? DEFAULT_FIRST_CALL_DELAY_SECONDS) : 0;
  const seconds = nominal / options.timingFactor;
  const scaled = options.timingFactor === 1 ? `${nominal} s` : `${round(seconds)} s (${nominal} s at timing x${options.timingFactor})`;
  return options.clock === 'manual'
    ? `Activation: realistic; each VM sees its events ${scaled} of clock time after its first request (the manual clock holds no request)`
    : `Activation: realistic; the first request of each VM is held for ${scaled}, then it sees its events`;
}

function round(n: number): string {
  return String(Math.round(n * 1000) / 1000);
}

function shellQuote(text: string): string {
  return /^[\w./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

function summarize(names: string[]): string {
  return names.length <= 5 ? names.join(', ') : `${names.slice(0, 5).join(', ')}, …`;
}

/** [choice] Wait this long for open connections (e.g. SSE streams) before exiting anyway. */
const SHUTDOWN_GRACE_MS = 5000;

export function registerEmulatorCommand(program: Command, io: Io): void {
  program
    .command('emulator')
    .description('run a local Scheduled Events service (IMDS) and its control API')
    .option('--imds <HOST:PORT>', 'where IMDS listens', DEFAULT_IMDS)
    .option('--control <HOST:PORT>', 'where the control API listens', DEFAULT_CONTROL)
    .option('--fleet <FILE>', 'fleet of VMs, tenants and hosts (YAML or JSON); default: one standalone VM "vm0"')
    .option(
      `--timing <${Object.keys(TIMING_PROFILES).join('|')}|FACTOR>`,
      `speed of every duration: realistic, dev (${TIMING_PROFILES.dev}x faster) or a factor`,
      'realistic',
    )
    .option(`--clock <${CLOCK_MODES.join('|')}>`, 'system time, or a clock moved through the control API', 'system')
    .option('--rate-limit <N>', 'IMDS requests a second per VM before 429; 0 turns it off', String(DEFAULT_RATE_LIMIT))
    .option(
      '--history-limit <N>',
      `ended events, finished operations and deleted VMs the emulator keeps, oldest out first; 0 keeps none (default ${DEFAULT_HISTORY_LIMIT})`,
    )
    .option(`--activation <${ACTIVATION_MODES.join('|')}>`, "realistic: a VM's first request enables Scheduled Events after a delay", 'off')
    .option(
      '--activation-delay <SECONDS>',
      `with --activation realistic, how long a first request is held: 0-${MAX_FIRST_CALL_DELAY_SECONDS} (default ${DEFAULT_FIRST_CALL_DELAY_SECONDS})`,
    )
    .option('--state <FILE>', 'keep state in FILE across restarts')
    .option('--token <TOKEN>', 'bearer token the control API requires; `ps` shows it, so prefer env FOREWARN_TOKEN or --token-file')
    .option('--token-file <FILE>', 'read the bearer token from FILE (mode 600), so it stays out of `ps`')
    .option('--impact', 'real impact: VMs may be bound to local processes that their events stop, restart or end (needs a token)')
    .option(
      '--allow-host <NAME>',
      'also answer requests without a token sent to this host name or address (repeatable); loopback names always work',
      (name: string, names: string[] | undefined) => [...(names ?? []), name],
    )
    .option('--max-streams <N>', `event streams (GET /v1/stream) open at once; more get 503 (default ${DEFAULT_MAX_STREAMS})`)
    .option('--stream-buffer-kib <N>', `unsent KiB a stream may hold before the emulator drops it (default ${DEFAULT_STREAM_BUFFER_KIB})`)
    .option(
      '--max-request-vms <N>',
      `most VMs one control API request may build, e.g. a posted scenario's fleet (default ${MAX_FLEET_VMS}); --fleet files are not limited`,
    )
    .option('--log-level <LEVEL>', 'server log level on stderr (env FOREWARN_LOG_LEVEL)')
    .option(
      '--json',
      'print one JSON line on stdout once listening ({"event":"ready",imdsUrl,controlUrl,dashboardUrl,pid,version}); the banner goes to stderr',
    )
    .option('--pidfile <FILE>', "write this process's pid to FILE once listening (before the ready line), and remove it at a clean stop")
    .option(
      '--link-local',
      `serve IMDS at http://${LINK_LOCAL.host} (port 80): add ${LINK_LOCAL.host}/32 to lo for the run (root, or a network namespace of its own)`,
    )
    .action(async (flags: RawEmulatorFlags) => {
      const options = parseEmulatorOptions(flags, io.env);
      // The handlers go in before the ready line is printed: a supervisor may signal the moment it
      // reads it, and a signal with no handler yet would kill the process without a clean stop.
      let signalled: NodeJS.Signals | null = null;
      let onSignal: (signal: NodeJS.Signals) => void = (signal) => {
        signalled = signal;
      };
      const handler = (signal: NodeJS.Signals) => onSignal(signal);
      process.on('SIGINT', handler);
      process.on('SIGTERM', handler);
      let emulator: Awaited<ReturnType<typeof startEmulator>>['emulator'];
      let linkLocal: LinkLocalClaim | null = null;
      try {
        if (options.linkLocal === true) {
          linkLocal = await claimLinkLocal();
          io.stderr(`forewarn: --link-local: ${linkLocal.note}\n`);
        }
        ({ emulator } = await startEmulator(options, io));
      } catch (err) {
        await linkLocal?.release();
        process.off('SIGINT', handler);
        process.off('SIGTERM', handler);
        throw err;
      }
      await new Promise<void>((resolve) => {
        const stop = (signal: NodeJS.Signals) => {
          process.off('SIGINT', handler);
          process.off('SIGTERM', handler);
          io.stderr(`forewarn: ${signal}: stopping\n`);
          const grace = setTimeout(() => {
            io.stderr('forewarn: connections still open; exiting anyway\n');
            void linkLocal?.release().finally(resolve);
            if (linkLocal === null) resolve();
          }, SHUTDOWN_GRACE_MS);
          grace.unref();
          emulator
            .close()
            .then(
              () => {
                clearTimeout(grace);
                removePidfile(options.pidfile);
              },
              (err: Error) => io.stderr(`forewarn: error while stopping: ${err.message}\n`),
            )
            .then(() => linkLocal?.release())
            .then(resolve, resolve);
        };
        onSignal = stop;
        // A signal that came while starting is acted on now.
        if (signalled !== null) stop(signalled);
      });
    });
}
