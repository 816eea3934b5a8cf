// The `forewarn` command line: one module per command, and one place that turns failures into exit codes.
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { registerAgentCommand } from './agent.js';
import { registerApproveCommand } from './approve.js';
import { registerControllerCommand } from './controller.js';
import { registerEmulatorCommand } from './emulator.js';
import { registerEventsCommand } from './events.js';
import { CliError, UsageError, processIo, type Io } from './errors.js';
import { registerRecordCommand } from './record.js';
import { registerReplayCommand } from './replay.js';
import { registerScenarioCommand } from './scenario.js';
import { registerTriggerCommand } from './trigger.js';
import { registerWatchCommand } from './watch.js';

// The same path from src/cli and dist/cli.
const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

export function buildProgram(io: Io = processIo): Command {
  const program = new Command('forewarn')
    .description('Azure Scheduled Events toolkit: a local emulator, a client and an agent')
    .version(version, '-V, --version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) })
    .showHelpAfterError('(run with --help for usage)');
  registerEmulatorCommand(program, io);
  registerTriggerCommand(program, io);
  registerScenarioCommand(program, io);
  registerEventsCommand(program, io);
  registerApproveCommand(program, io);
  registerWatchCommand(program, io);
  registerRecordCommand(program, io);
  registerReplayCommand(program, io);
  registerAgentCommand(program, io);
  registerControllerCommand(program, io);
  return program;
}

/** Runs the CLI and returns its exit code: 0 done, 1 failed, 2 bad usage. Never prints a stack trace. */
export async function run(args: readonly string[], io: Io = processIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...args], { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has already printed its message; help and --version are not failures.
      return err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof UsageError || err instanceof CliError) {
      io.stderr(`forewarn: ${err.message}\n`);
      return err.exitCode;
    }
    const e = err as Error;
    io.stderr(`forewarn: ${e.message ?? String(err)}\n`);
    if (io.env.FOREWARN_DEBUG) io.stderr(`${e.stack}\n`);
    return 1;
  }
}
