// A rule that prepares this VM and then approves may start an event on VMs still preparing, since one
// approval covers every VM in Resources. The seeds: "Una aprobación del evento permitiría que la
// inmovilización continuara tanto para WestNO_0 como para WestNO_1." Such rules are named at start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sharedApprovalRisks } from '../../src/agent/shared-approval.js';
import type { Action, Rule } from '../../src/agent/types.js';
import { rule } from './support.js';

const exec: Action = {
  type: 'exec',
  name: 'drain',
  argv: ['true'],
  cwd: null,
  env: {},
  passEnv: [],
  timeoutSeconds: 10,
  retries: 0,
} as never;
const http: Action = { type: 'http', name: 'hook' } as never;
const kube: Action = { type: 'kubernetes', name: 'drain', drain: true, timeoutSeconds: 60 } as never;

test('exec and webhook rules that approve are named; never-approving, kubernetes and action-less rules are not', () => {
  const rules: Rule[] = [
    rule({ name: 'drain-then-approve', actions: [exec], approval: 'after-actions' }),
    rule({ name: 'hook-then-approve', actions: [http], approval: 'immediately' }),
    rule({ name: 'drain-never-approve', actions: [exec], approval: 'never' }),
    rule({ name: 'kubernetes-barrier', actions: [kube, exec], approval: 'after-actions' }),
    rule({ name: 'approve-only', actions: [], approval: 'immediately' }),
  ];
  const risks = sharedApprovalRisks(rules);
  assert.deepEqual(
    risks.map((r) => r.rule),
    ['drain-then-approve', 'hook-then-approve'],
  );
  assert.match(risks[0]!.message, /rule 'drain-then-approve'/);
  assert.match(risks[0]!.message, /one approval starts it for all of them/);
  assert.match(risks[0]!.message, /approval: never/);
});

test('with a fleet budget, after-actions rules wait at its barrier; a rule that approves immediately is still named', () => {
  const budget = {
    backend: 'etcd' as const,
    endpoints: ['http://127.0.0.1:2379'],
    containerUrl: null,
    clientId: null,
    slots: 1,
    group: 'g',
    leaseSeconds: 900,
    minPrepareSeconds: 60,
    marginSeconds: 5,
  };
  const rules: Rule[] = [
    rule({ name: 'drain-then-approve', actions: [exec], approval: 'after-actions' }),
    rule({ name: 'hook-then-approve', actions: [http], approval: 'immediately' }),
  ];
  const risks = sharedApprovalRisks(rules, budget);
  assert.deepEqual(
    risks.map((r) => r.rule),
    ['hook-then-approve'],
  );
  assert.match(risks[0]!.message, /approves immediately, before this VM is prepared/);
  assert.match(sharedApprovalRisks(rules)[0]!.message, /configure a fleet budget/);
});
