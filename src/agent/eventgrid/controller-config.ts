// The controller's config file: the agent's rules, journal and budget (their schemas, not copies), and
// what only a controller has: where Event Grid delivers, and how it reaches ARM. Errors as the agent's:
// every problem, each at file:line:col with its field path.
import { z } from 'zod';
import { EVENT_GRID_SCHEMAS, type EventGridSchemaName } from '../../protocol/eventgrid.js';
import { DocumentErrors, type Problem } from '../../shared/checked-document.js';
import { HostPortError, parseHostPort } from '../../shared/host-port.js';
import {
  BUDGET_BACKENDS,
  BUDGET_COMMON,
  CONFIG_DEFAULTS,
  SHARED_SETTINGS,
  checkConfig,
  configWording,
  crossChecks,
  name,
  normalizeBudget,
  normalizeKubernetes,
  normalizeShared,
  readConfigFile,
  urlProblem,
  want,
} from '../config.js';
import type { AgentConfig, FleetBudgetConfig } from '../types.js';
import { DEFAULT_ARM_ENDPOINT } from './arm-approvals.js';

export class ControllerConfigError extends DocumentErrors {
  override name = 'ControllerConfigError';
}

export const CONTROLLER_DEFAULTS = {
  name: 'forewarn-controller',
  journal: '/var/lib/forewarn/controller-journal.json',
  // [choice] Beside the agent's 9464, so both can run on one host.
  listen: '127.0.0.1:9465',
  eventGrid: { listen: '0.0.0.0:8080', path: '/eventgrid', schema: 'EventGridSchema', secretParameter: 'code' },
  budgetGroup: 'controller',
} as const;

export type ArmCredentialConfig =
  | { kind: 'managedIdentity'; clientId: string | null }
  | { kind: 'servicePrincipal'; tenantId: string; clientId: string; secretFile: string; authorityHost: string | null }
  /** A bearer token read from a file (the emulator, or a token minted elsewhere). */
  | { kind: 'token'; tokenFile: string };

export interface ControllerConfig {
  name: string;
  eventGrid: { listen: string; path: string; schema: EventGridSchemaName; secretFile: string | null; secretParameter: string };
  arm: { endpoint: string; credential: ArmCredentialConfig };
  /** What the runner is given: the agent's shape, with `leader: any` (the controller approves what it prepares). */
  agent: AgentConfig;
}

const hostPort = z.string({ error: want('HOST:PORT') }).superRefine((value, ctx) => {
  try {
    parseHostPort(value, 'eventGrid.listen', CONTROLLER_DEFAULTS.eventGrid.listen);
  } catch (err) {
    if (!(err instanceof HostPortError)) throw err;
    ctx.addIssue({
      code: 'custom',
      message: err.kind === 'form' ? `expected HOST:PORT (e.g. ${CONTROLLER_DEFAULTS.eventGrid.listen})` : err.problem,
    });
  }
});

const url = z.string({ error: want('a URL') }).superRefine((value, ctx) => {
  const problem = urlProblem(value) ?? (value.includes('${') ? 'expected a URL, not a ${env:...} reference' : null);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const EventGridSchema = z.strictObject(
  {
    listen: hostPort.default(CONTROLLER_DEFAULTS.eventGrid.listen),
    path: z
      .string({ error: want('a path') })
      .regex(/^\/[A-Za-z0-9._~/-]*$/, { error: 'expected a path such as /eventgrid' })
      .default(CONTROLLER_DEFAULTS.eventGrid.path),
    schema: z.enum(EVENT_GRID_SCHEMAS, { error: want(EVENT_GRID_SCHEMAS.join(' or ')) }).default(CONTROLLER_DEFAULTS.eventGrid.schema),
    // [choice] The secret lives in a file, never in the config, as the service principal's does.
    secretFile: name.nullable().optional(),
    secretParameter: z
      .string({ error: want('a query parameter name') })
      .regex(/^[A-Za-z0-9_-]+$/, { error: 'expected a query parameter name (letters, digits, _ and -)' })
      .default(CONTROLLER_DEFAULTS.eventGrid.secretParameter),
  },
  { error: want('a mapping with listen, path, schema (and secretFile)') },
);

const CredentialSchema = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({ kind: z.literal('managedIdentity'), clientId: name.nullable().optional() }),
    z.strictObject({
      kind: z.literal('servicePrincipal'),
      tenantId: name,
      clientId: name,
      secretFile: name,
      authorityHost: url.nullable().optional(),
    }),
    z.strictObject({ kind: z.literal('token'), tokenFile: name }),
  ],
  { error: want('a mapping with kind managedIdentity, servicePrincipal or token') },
);

const ArmSchema = z.strictObject(
  {
    endpoint: url.default(DEFAULT_ARM_ENDPOINT),
    credential: CredentialSchema.default({ kind: 'managedIdentity' }),
  },
  { error: want('a mapping with endpoint and credential') },
);

/** The controller's own budget: in its process, since it is the one place that takes slots. */
const MemoryBudget = z.strictObject({
  backend: z.literal('memory'),
  slots: BUDGET_COMMON.slots,
  minPrepareSeconds: BUDGET_COMMON.minPrepareSeconds,
  marginSeconds: BUDGET_COMMON.marginSeconds,
});

const BudgetSchema = z.discriminatedUnion('backend', [MemoryBudget, ...BUDGET_BACKENDS], {
  error: want('a mapping with backend memory, etcd or azure-blob'),
});

const ControllerSchema = z.strictObject(
  {
    name: name.default(CONTROLLER_DEFAULTS.name),
    eventGrid: EventGridSchema.default({
      listen: CONTROLLER_DEFAULTS.eventGrid.listen,
      path: CONTROLLER_DEFAULTS.eventGrid.path,
      schema: CONTROLLER_DEFAULTS.eventGrid.schema,
      secretParameter: CONTROLLER_DEFAULTS.eventGrid.secretParameter,
    }),
    arm: ArmSchema.default({ endpoint: DEFAULT_ARM_ENDPOINT, credential: { kind: 'managedIdentity' } }),
    ...SHARED_SETTINGS,
    journal: name.default(CONTROLLER_DEFAULTS.journal),
    budget: BudgetSchema.nullable().optional(),
  },
  { error: want('a mapping of settings') },
);
type RawController = z.infer<typeof ControllerSchema>;

export function loadControllerConfig(path: string): ControllerConfig {
  return parseControllerConfig(
    readConfigFile(path, 'controller config', (errors) => new ControllerConfigError(errors)),
    path,
  );
}

export function parseControllerConfig(text: string, file: string): ControllerConfig {
  const raw = checkConfig(text, file, {
    schema: ControllerSchema,
    errors: (errors) => new ControllerConfigError(errors),
    wording,
    checks: (data) => [...crossChecks(data), ...controllerChecks(data)],
  });
  return normalize(raw);
}

function wording(issue: z.core.$ZodIssue): string | undefined {
  if (issue.code === 'invalid_union' && 'discriminator' in issue && issue.discriminator === 'backend') {
    return 'expected backend memory, etcd or azure-blob';
  }
  if (issue.code === 'invalid_union' && 'discriminator' in issue && issue.discriminator === 'kind') {
    return 'expected kind managedIdentity, servicePrincipal or token';
  }
  return configWording(issue);
}

/**
 * What a controller cannot do that an agent can. A kubernetes action cordons and drains the node the
 * agent runs on (KubernetesRuntime has one node, named at start), not a node named per event; and
 * `affectsThisVm` asks about "this VM", which a controller is not.
 */
function controllerChecks(data: unknown): Problem[] {
  const problems: Problem[] = [];
  const rules = isRecord(data) && Array.isArray(data.rules) ? data.rules : [];
  rules.forEach((rule: unknown, i) => {
    if (!isRecord(rule)) return;
    if (isRecord(rule.match) && rule.match.affectsThisVm !== undefined && rule.match.affectsThisVm !== null) {
      problems.push({
        path: ['rules', i, 'match', 'affectsThisVm'],
        message: 'the controller acts for every VM an event names; affectsThisVm has no meaning here',
        key: 'affectsThisVm',
      });
    }
    for (const list of ['actions', 'onComplete', 'onCancel'] as const) {
      const actions = rule[list];
      if (!Array.isArray(actions)) continue;
      actions.forEach((action: unknown, j) => {
        if (isRecord(action) && action.type === 'kubernetes') {
          problems.push({
            path: ['rules', i, list, j, 'type'],
            message:
              'the controller cannot run kubernetes actions: they cordon and drain the node the agent runs on; run the agent on the nodes, or drain through an exec or http action',
          });
        }
      });
    }
  });
  return problems;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function normalizeControllerBudget(b: RawController['budget']): FleetBudgetConfig | null {
  if (b === null || b === undefined) return null;
  if (b.backend !== 'memory') return normalizeBudget(b);
  return {
    backend: 'memory',
    endpoints: [],
    containerUrl: null,
    clientId: null,
    slots: b.slots,
    group: CONTROLLER_DEFAULTS.budgetGroup,
    // Nothing expires in memory; renewals only take back, after a restart, what the journal says was held.
    leaseSeconds: CONFIG_DEFAULTS.budget.leaseSeconds,
    minPrepareSeconds: b.minPrepareSeconds,
    marginSeconds: b.marginSeconds,
  };
}

function normalize(raw: RawController): ControllerConfig {
  const c = raw.arm.credential;
  const credential: ArmCredentialConfig =
    c.kind === 'managedIdentity'
      ? { kind: 'managedIdentity', clientId: c.clientId ?? null }
      : c.kind === 'servicePrincipal'
        ? {
            kind: 'servicePrincipal',
            tenantId: c.tenantId,
            clientId: c.clientId,
            secretFile: c.secretFile,
            authorityHost: c.authorityHost ?? null,
          }
        : { kind: 'token', tokenFile: c.tokenFile };
  return {
    name: raw.name,
    eventGrid: { ...raw.eventGrid, secretFile: raw.eventGrid.secretFile ?? null },
    arm: { endpoint: raw.arm.endpoint, credential },
    agent: {
      endpoint: null,
      apiVersion: CONFIG_DEFAULTS.apiVersion,
      pollIntervalSeconds: CONFIG_DEFAULTS.pollIntervalSeconds,
      vmName: raw.name,
      ...normalizeShared(raw, CONTROLLER_DEFAULTS.listen),
      // [choice] The controller approves every event it prepared: no leader among VMs, no standby.
      leader: { mode: 'any', standby: null },
      readyWithinSeconds: CONFIG_DEFAULTS.readyWithinSeconds,
      kubernetes: normalizeKubernetes(),
      budget: normalizeControllerBudget(raw.budget),
    },
  };
}
