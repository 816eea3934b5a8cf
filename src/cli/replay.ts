// `forewarn replay FILE`: a recording served as IMDS (SPEC §4 "Recording and replay"), until
// SIGINT or SIGTERM; then what the client under test did differently from the recording.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseTimingFactor, TIMING_PROFILES } from '../emulator/engine/timing.js';
import { Replay } from '../emulator/replay/server.js';
import { parseRecording, RecordingError, type Recording } from '../protocol/recording.js';
import { parseHostPort, type HostPort } from './address.js';
import { CliError, UsageError, type Io } from './errors.js';
import { untilStopped } from './stop-signal.js';

export interface RawReplayFlags {
  imds?: string;
  control?: string;
  clock?: string;
  timing?: string;
}

export interface ReplayRequest {
  file: string;
  imds: HostPort;
  control: HostPort;
  clock: 'system' | 'manual';
  timingFactor: number;
}

export function parseReplayArgs(file: string, flags: RawReplayFlags): ReplayRequest {
  const clock = flags.clock ?? 'system';
  if (clock !== 'system' && clock !== 'manual') throw new UsageError(`--clock must be system or manual, got "${clock}"`);
  let timingFactor: number;
  try {
    timingFactor = parseTimingFactor(flags.timing ?? 'realistic');
  } catch (err) {
    throw new UsageError(`--timing: ${(err as Error).message}`);
  }
  return {
    file,
    imds: parseHostPort(flags.imds ?? '127.0.0.1:8169', '--imds'),
    control: parseHostPort(flags.control ?? '127.0.0.1:8170', '--control'),
    clock,
    timingFactor,
  };
}

export function loadRecording(file: string): Recording {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return parseRecording(text, file);
  } catch (err) {
    if (err instanceof RecordingError) throw new UsageError(err.message);
    throw err;
  }
}

/** Serves until the signal; returns the replay's final status (printed by the command). */
export async function runReplay(request: ReplayRequest, io: Io, signal: AbortSignal): Promise<Replay> {
  const recording = loadRecording(request.file);
  const replay = new Replay(recording, { clock: request.clock, timingFactor: request.timingFactor });
  const urls = await replay.listen({ imds: request.imds, control: request.control });
  const { header, changes } = recording;
  io.stdout(
    [
      `forewarn replay: ${request.file}: ${changes.length} documents over ${Math.round(replay.timeline.durationMs / 1000)} s` +
        ` (recorded ${header.startedAt}${header.vm ? ` on ${header.vm.name}` : ''}), clock ${request.clock}, timing x${request.timingFactor}`,
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

export function registerReplayCommand(program: Command, io: Io): void {
  program
    .command('replay')
    .description('serve a recording (forewarn record) as IMDS, in its own timing, until Ctrl-C; then report divergences')
    .argument('<FILE>', 'the recording')
    .option('--imds <HOST:PORT>', 'where IMDS listens', '127.0.0.1:8169')
    .option('--control <HOST:PORT>', 'where the control routes listen (GET /v1/replay, POST /v1/clock/advance)', '127.0.0.1:8170')
    .option('--clock <system|manual>', "the recording's own timing, or stepped through POST /v1/clock/advance", 'system')
    .option(`--timing <${Object.keys(TIMING_PROFILES).join('|')}|FACTOR>`, 'run this many times faster than recorded', 'realistic')
    .action(async (file: string, flags: RawReplayFlags) => {
      const request = parseReplayArgs(file, flags);
      const status = await untilStopped(async (signal) => (await runReplay(request, io, signal)).status());
      const report = {
        replay: request.file,
        clientApprovals: status.clientApprovals,
        recordedApprovals: status.recordedApprovals,
        divergences: status.divergences,
      };
      io.stdout(`${JSON.stringify(report)}\n`);
      for (const d of status.divergences) io.stderr(`forewarn replay: divergence: ${d.message}\n`);
    });
}
