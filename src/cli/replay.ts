// `forewarn replay FILE`: a recording served as IMDS (SPEC §4 "Recording and replay"), until
// SIGINT or SIGTERM; then what the client under test did differently from the recording.
import type { Command } from 'commander';
import { normalizeAllowedHost } from '../emulator/control/request-guard.js';
import { parseTimingFactor, TIMING_PROFILES } from '../emulator/engine/timing.js';
import { readRecordingFile } from '../emulator/replay/recording-file.js';
import { Replay } from '../emulator/replay/server.js';
import { RecordingError, type Recording } from '../protocol/recording.js';
import { LineFileError } from '../shared/line-file.js';
import { printable, printableJson } from '../shared/printable.js';
import { isLoopback, parseHostPort, type HostPort } from './address.js';
import { resolveToken, type TokenFlags } from './control-api.js';
import { CliError, UsageError, type Io } from './errors.js';
import { withPrintableErrors } from './printable-errors.js';
import { untilStopped } from './stop-signal.js';

export interface RawReplayFlags extends TokenFlags {
  imds?: string;
  control?: string;
  clock?: string;
  timing?: string;
  allowHost?: string[];
  json?: boolean;
}

export interface ReplayRequest {
  file: string;
  imds: HostPort;
  control: HostPort;
  clock: 'system' | 'manual';
  timingFactor: number;
  /** Bearer token the control routes require, from --token, --token-file or env FOREWARN_TOKEN. */
  token: string | undefined;
  /** Host names besides loopback ones the control routes answer without a token. */
  allowHosts: string[];
  /** Things to tell the user on stderr at start, such as a token visible in `ps`. */
  warnings: string[];
}

export function parseReplayArgs(file: string, flags: RawReplayFlags, env: Io['env'] = {}): ReplayRequest {
  const clock = flags.clock ?? 'system';
  if (clock !== 'system' && clock !== 'manual') throw new UsageError(`--clock must be system or manual, got "${clock}"`);
  let timingFactor: number;
  try {
    timingFactor = parseTimingFactor(flags.timing ?? 'realistic');
  } catch (err) {
    throw new UsageError(`--timing: ${(err as Error).message}`);
  }
  // The emulator's own resolver: the same flags, file checks and warnings.
  const { token, warnings } = resolveToken(flags, env);
  const allowHosts = (flags.allowHost ?? []).map((name) => {
    try {
      return normalizeAllowedHost(name);
    } catch (err) {
      throw new UsageError(`--allow-host: ${(err as Error).message}`);
    }
  });
  return {
    file,
    imds: parseHostPort(flags.imds ?? '127.0.0.1:8169', '--imds'),
    control: parseHostPort(flags.control ?? '127.0.0.1:8170', '--control'),
    clock,
    timingFactor,
    token,
    allowHosts,
    warnings,
  };
}

/**
 * Loads a recording for `replay` and `scenario from-recording`. What cannot be served (a line too
 * long or too deep, a time out of range) and what is not a regular file exit 2 naming FILE:line;
 * a file that cannot be opened exits 1. Messages carry the recording's text, so they are escaped.
 */
export function loadRecording(file: string): Recording {
  try {
    return readRecordingFile(file);
  } catch (err) {
    if (err instanceof RecordingError) throw new UsageError(printable(err.message));
    if (err instanceof LineFileError) throw new (err.kind === 'open' ? CliError : UsageError)(printable(err.message));
    throw err;
  }
}

/** Serves until the signal; returns the replay's final status (printed by the command). */
export async function runReplay(request: ReplayRequest, io: Io, signal: AbortSignal): Promise<Replay> {
  const recording = loadRecording(request.file);
  for (const warning of request.warnings) io.stderr(`forewarn: warning: ${printable(warning)}\n`);
  if (!isLoopback(request.control.host) && request.token === undefined) {
    io.stderr(
      `forewarn: warning: the replay's control routes on ${request.control.host} are reachable from other machines and have no token; ` +
        'anyone who can reach them can move the replay. Set FOREWARN_TOKEN or pass --token-file FILE.\n',
    );
  }
  const replay = new Replay(recording, { clock: request.clock, timingFactor: request.timingFactor });
  const urls = await replay.listen({ imds: request.imds, control: request.control, token: request.token, allowHosts: request.allowHosts });
  const { header, changes } = recording;
  io.stdout(
    [
      `forewarn replay: ${printable(request.file)}: ${changes.length} documents over ${Math.round(replay.timeline.durationMs / 1000)} s` +
        ` (recorded ${printable(header.startedAt)}${header.vm ? ` on ${printable(header.vm.name, 200)}` : ''}), clock ${request.clock}, timing x${request.timingFactor}`,
      `IMDS:      ${urls.imdsUrl}`,
      `Control:   ${urls.controlUrl}`,
      '',
    ].join('\n'),
  );
  await new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await replay.close();
  return replay;
}

/** What a person reads at the end: who approved what, and whether the code under test did as the recording shows. */
export function replaySummary(report: { clientApprovals: string[]; recordedApprovals: string[]; divergences: unknown[] }): string {
  const list = (ids: string[]) => (ids.length === 0 ? '' : ` (${ids.map((id) => printable(id, 200)).join(', ')})`);
  const events = (n: number) => `${n} event${n === 1 ? '' : 's'}`;
  const n = report.divergences.length;
  return (
    [
      `forewarn replay: the code under test approved ${events(report.clientApprovals.length)}${list(report.clientApprovals)};`,
      `the recording shows ${events(report.recordedApprovals.length)} approved${list(report.recordedApprovals)};`,
      n === 0 ? 'no divergence' : `${n} divergence${n === 1 ? '' : 's'} (above, on stderr)`,
    ].join(' ') + '\n'
  );
}

export function registerReplayCommand(program: Command, io: Io): void {
  program
    .command('replay')
    .description('serve a recording (forewarn record) as IMDS, in its own timing, until Ctrl-C; then report divergences')
    .argument('<FILE>', 'the recording')
    .option('--imds <HOST:PORT>', 'where IMDS listens', '127.0.0.1:8169')
    .option('--control <HOST:PORT>', 'where the control routes listen (GET /v1/replay, POST /v1/clock/advance)', '127.0.0.1:8170')
    .option('--clock <system|manual>', "the recording's own timing, or stepped through POST /v1/clock/advance", 'system')
    .option(`--timing <${Object.keys(TIMING_PROFILES).join('|')}|FACTOR>`, 'run this many times faster than recorded', 'realistic')
    .option('--token <TOKEN>', 'bearer token the control routes require; `ps` shows it, so prefer env FOREWARN_TOKEN or --token-file')
    .option('--token-file <FILE>', 'read the bearer token from FILE (mode 600), so it stays out of `ps`')
    .option(
      '--allow-host <NAME>',
      'also answer control requests without a token sent to this host name or address (repeatable); loopback names always work',
      (name: string, names: string[] | undefined) => [...(names ?? []), name],
    )
    .option('--json', 'end with one JSON line (replay, clientApprovals, recordedApprovals, divergences) instead of a summary')
    .action(async (file: string, flags: RawReplayFlags) => {
      const request = await withPrintableErrors(async () => parseReplayArgs(file, flags, io.env));
      const status = await withPrintableErrors(() => untilStopped(async (signal) => (await runReplay(request, io, signal)).status()));
      const report = {
        replay: request.file,
        clientApprovals: status.clientApprovals,
        recordedApprovals: status.recordedApprovals,
        divergences: status.divergences,
      };
      // EventIds come from the recording: nothing printed may carry a control character to the terminal.
      for (const d of status.divergences) io.stderr(`forewarn replay: divergence: ${printable(d.message)}\n`);
      io.stdout(flags.json === true ? `${printableJson(report)}\n` : replaySummary(report));
    });
}
