// What an exec action's program gets from the agent's environment, and names that are Object.prototype's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EventPayload } from '../../src/agent/actions.js';
import { ACTION_MARKER_VARIABLE, execEnvironment } from '../../src/agent/exec-env.js';

const payload: EventPayload = {
  eventId: 'E1',
  type: 'Freeze',
  status: 'Scheduled',
  source: 'Platform',
  resources: ['vm0'],
  notBefore: null,
  description: '',
  durationInSeconds: 5,
  vmName: 'vm0',
  phase: 'prepare',
  idempotencyKey: 'E1',
};

describe('execEnvironment', () => {
  it('passes the allowlist and passEnv, never the rest of the agent environment', () => {
    const env = execEnvironment({ env: {}, passEnv: ['EXTRA'] }, payload, { PATH: '/bin', SECRET_TOKEN: 's3cret', EXTRA: 'x' });
    assert.equal(env.PATH, '/bin');
    assert.equal(env.EXTRA, 'x');
    assert.equal(env.SECRET_TOKEN, undefined);
    assert.equal(env.FOREWARN_EVENT_ID, 'E1');
  });

  it('keeps variables named __proto__ or constructor, from passEnv and from env', () => {
    const parent = Object.fromEntries([
      ['__proto__', 'from-agent'],
      ['PATH', '/bin'],
    ]) as NodeJS.ProcessEnv;
    const own = Object.fromEntries([['constructor', 'from-config']]) as Record<string, string>;
    const env = execEnvironment({ env: own, passEnv: ['__proto__'] }, payload, parent);
    assert.deepEqual(Object.getOwnPropertyDescriptor(env, '__proto__')?.value, 'from-agent');
    assert.equal(Object.getOwnPropertyDescriptor(env, 'constructor')?.value, 'from-config');
  });

  it("sets the run's marker last, and never passes on a marker from the agent's environment or the action's env", () => {
    const parent = { PATH: '/bin', [ACTION_MARKER_VARIABLE]: 'inherited' };
    const action = { env: { [ACTION_MARKER_VARIABLE]: 'configured' }, passEnv: [ACTION_MARKER_VARIABLE] };
    assert.equal(execEnvironment(action, payload, parent, 'the-run')[ACTION_MARKER_VARIABLE], 'the-run');
    assert.equal(execEnvironment(action, payload, parent)[ACTION_MARKER_VARIABLE], undefined);
  });
});
