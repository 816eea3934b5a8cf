// What smoke-packed.mjs and run-testing-examples.mjs share: reading NODE_BINARY and --tarball
// FILE from the command line, and finding npm so it can be run on the chosen Node.
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Reads `[NODE_BINARY] [--tarball FILE]...` plus the script's own switches (`flags`: name to the
 * function it calls). `usage(message)` reports a mistake and exits. Returns the positional
 * arguments as given and the tarballs resolved and checked; the caller decides how many Node
 * binaries it takes, then checks the one it uses with checkNode.
 */
export function parseNodeAndTarballs(argv, usage, flags = {}) {
  const positional = [];
  const tarballs = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--tarball') {
      const file = argv[++i];
      if (!file) usage('--tarball needs a file');
      tarballs.push(resolve(file));
    } else if (Object.hasOwn(flags, arg)) flags[arg]();
    else if (arg.startsWith('-')) usage(`unknown option ${arg}`);
    else positional.push(arg);
  }
  return { positional, tarballs };
}

/** The Node binary, resolved; exits through `usage` when it is missing, as it does for each missing tarball. */
export function checkNodeAndTarballs(node, tarballs, usage) {
  const resolved = resolve(node);
  if (!existsSync(resolved)) usage(`no Node binary at ${resolved}`);
  for (const file of tarballs) if (!existsSync(file)) usage(`no tarball at ${file}`);
  return resolved;
}

/** The first of the commands that exists on PATH, or undefined. */
export function which(...names) {
  for (const name of names) {
    const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
    if (found) return found;
  }
  return undefined;
}

/** The npm CLI script behind `npm` on PATH, so it can be run on another Node. */
export function npmCli() {
  const bin = which('npm');
  if (!bin) throw new Error('npm is not on PATH');
  const cli = realpathSync(bin);
  if (!cli.endsWith('.js')) throw new Error(`cannot find npm-cli.js behind ${bin} (got ${cli})`);
  return cli;
}
