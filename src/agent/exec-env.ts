// The environment an exec action's program gets: a short allowlist, never the agent's whole environment.
import type { EventPayload } from './actions.js';
import type { ExecAction } from './types.js';
import { allowlistedEnvironment, ENV_ALLOWLIST } from '../shared/env-allowlist.js';

/** [choice] The allowlist an exec action's program starts from (src/shared/env-allowlist.ts). */
export const EXEC_ENV_ALLOWLIST = ENV_ALLOWLIST;

/**
 * Carries the marker that proves a process group is the one the agent started for an action
 * (process-group.ts): a value new for each run, inherited by every descendant.
 */
export const ACTION_MARKER_VARIABLE = 'FOREWARN_ACTION_MARKER';

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
 * then the event's FOREWARN_* variables, then the run's `marker`, later ones winning. On Windows
 * names match in any case. A marker is only ever the agent's: one from `parent` or `env` is dropped.
 */
export function execEnvironment(
  action: Pick<ExecAction, 'env' | 'passEnv'>,
  payload: EventPayload,
  parent: NodeJS.ProcessEnv = process.env,
  marker?: string,
): Record<string, string> {
  const env = allowlistedEnvironment(parent, action.passEnv);
  const all = { ...env, ...action.env, ...eventVariables(payload) };
  delete all[ACTION_MARKER_VARIABLE];
  return marker === undefined ? all : { ...all, [ACTION_MARKER_VARIABLE]: marker };
}
