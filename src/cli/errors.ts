// How the CLI fails: usage problems exit 2, runtime problems exit 1; neither prints a stack.

/** A bad flag, argument or input file: exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
  readonly exitCode = 2;
}

/** Something went wrong while doing what was asked: exit code 1. */
export class CliError extends Error {
  override name = 'CliError';
  readonly exitCode = 1;
}

/** Where a command writes; tests pass their own. */
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
}

export const processIo: Io = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  env: process.env,
};

/** A config file's problems as one UsageError: `the WHAT config has N problems:` and each on its line. */
export function configUsageError(what: string, problems: readonly string[]): UsageError {
  const n = problems.length;
  return new UsageError(`the ${what} config has ${n} problem${n === 1 ? '' : 's'}:\n${problems.map((p) => `  ${p}`).join('\n')}`);
}
