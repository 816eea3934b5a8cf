// The environment an exec action's program gets: a short allowlist, never the agent's whole environment.
import type { EventPayload } from './actions.js';
import type { ExecAction } from './types.js';

/**
 * [choice] Passed from the agent's environment when set: what programs need to find other
 * programs (PATH), locate a home and temp directory, know the user and shell, and read or print
 * text and times as the host does. Nothing else: the agent's environment may hold credentials
 * (cloud tokens, `${env:...}` secrets for http actions) that a drain script has no business seeing.
 * The Windows names are what a program there needs to start at all.
 */
export const EXEC_ENV_ALLOWLIST: readonly string[] = [
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

/** The FOREWARN_* variables that describe the event. */
function eventVariables(payload: EventPayload): Record<string, string> {
  return {
    FOREWARN_EVENT_ID: payload.eventId,
    FOREWARN_EVENT_TYPE: payload.type,
    FOREWARN_EVENT_STATUS: payload.status,
    FOREWARN_EVENT_SOURCE: payload.source ?? '',
    FOREWARN_RESOURCES: payload.resources.join(','),
    FOREWARN_NOT_BEFORE: payload.notBefore ?? '',
    FOREWARN_DURATION_SECONDS: String(payload.durationInSeconds),
    FOREWARN_DESCRIPTION: payload.description,
    FOREWARN_VM_NAME: payload.vmName,
    FOREWARN_PHASE: payload.phase,
    FOREWARN_IDEMPOTENCY_KEY: payload.idempotencyKey,
  };
}

/**
 * The allowlist and the action's `passEnv` names (when set in `parent`), then the action's `env`,
 * then the event's FOREWARN_* variables, later ones winning. On Windows names match in any case.
 */
export function execEnvironment(
  action: Pick<ExecAction, 'env' | 'passEnv'>,
  payload: EventPayload,
  parent: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  // Null prototype: a variable named __proto__ is a key like any other.
  const env = Object.create(null) as Record<string, string>;
  const wanted = [...EXEC_ENV_ALLOWLIST, ...action.passEnv];
  const fold = process.platform === 'win32' ? (s: string) => s.toUpperCase() : (s: string) => s;
  const byName = new Map(Object.keys(parent).map((k) => [fold(k), k]));
  for (const name of wanted) {
    const actual = byName.get(fold(name));
    const value = actual === undefined ? undefined : parent[actual];
    if (actual !== undefined && value !== undefined) env[actual] = value;
  }
  return { ...env, ...action.env, ...eventVariables(payload) };
}
