// The environment a program Forewarn starts gets: a short allowlist, never the starter's whole
// environment. The agent's exec actions and the emulator's owned commands both take it from here.

/**
 * [choice] Passed from the parent's environment when set: what programs need to find other
 * programs (PATH), locate a home and temp directory, know the user and shell, and read or print
 * text and times as the host does. Nothing else: the parent's environment may hold credentials
 * (cloud tokens, the control API's token, `${env:...}` secrets for http actions) that a started
 * program has no business seeing. The Windows names are what a program there needs to start at all.
 */
export const ENV_ALLOWLIST: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TMPDIR',
  // Windows
  'SystemRoot',
  'SystemDrive',
  'windir',
  'ComSpec',
  'PATHEXT',
  'TEMP',
  'TMP',
  'USERPROFILE',
];

/**
 * The allowlist's variables and `extra` names, as set in `parent`. A null-prototype object, so a
 * variable named __proto__ is a key like any other. On Windows names match in any case.
 */
export function allowlistedEnvironment(parent: NodeJS.ProcessEnv, extra: readonly string[] = []): Record<string, string> {
  const env = Object.create(null) as Record<string, string>;
  const fold = process.platform === 'win32' ? (s: string) => s.toUpperCase() : (s: string) => s;
  const byName = new Map(Object.keys(parent).map((k) => [fold(k), k]));
  for (const name of [...ENV_ALLOWLIST, ...extra]) {
    const actual = byName.get(fold(name));
    const value = actual === undefined ? undefined : parent[actual];
    if (actual !== undefined && value !== undefined) env[actual] = value;
  }
  return env;
}
