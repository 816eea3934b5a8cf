// The agent's config file: YAML or JSON, checked up front; a bad file lists every problem with file:line:col.
import { z } from 'zod';
import { EVENT_SOURCES, EVENT_STATUSES, EVENT_TYPES } from '../protocol/types.js';
import {
  CheckedDocument,
  DocumentError,
  DocumentErrors,
  MISSING,
  issueProblems,
  readDocumentFile,
  type Problem,
} from '../shared/checked-document.js';
import { HostPortError, parseHostPort } from '../shared/host-port.js';
import { nameRecord } from '../shared/name-record.js';
import type { Action, AgentConfig, FleetBudgetConfig, KubernetesConfig, Rule, RuleMatch } from './types.js';

/** Every problem in an agent config; `problems` holds each as `file:line:col: path: problem`, in file order. */
export class AgentConfigError extends DocumentErrors {
  override name = 'AgentConfigError';
}

export const CONFIG_DEFAULTS = {
  apiVersion: '2020-07-01',
  pollIntervalSeconds: 1,
  journal: '/var/lib/forewarn/journal.json',
  listen: '127.0.0.1:9464',
  readyWithinSeconds: 10,
  shutdownGraceSeconds: 30,
  journalUnwritable: { policy: 'prepare-before-notbefore', prepareWithinSeconds: 120 },
  kubernetes: {
    timeoutSeconds: 600,
    marginSeconds: 5,
    localStorage: 'evict',
    readyTimeoutSeconds: 900,
    budget: { namespace: 'forewarn', name: 'forewarn-maintenance', leaseDurationSeconds: 900, minPrepareSeconds: 60 },
  },
  // [choice] As the Kubernetes budget: a slot outlives a reboot (15 min), a minute kept for preparing, 5 s of margin.
  budget: { leaseSeconds: 900, minPrepareSeconds: 60, marginSeconds: 5 },
} as const;

/** `${env:NAME}`: resolved from the environment when an http action runs, never at load. Global: use with replace(). */
export const ENV_REF = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** What is wrong with the `${...}` references in a string, or null. */
export function envRefProblem(value: string): string | null {
  const rest = value.replace(ENV_REF, '');
  return rest.includes('${') ? 'malformed variable reference; write ${env:NAME}' : null;
}

/** Every `${env:NAME}` the config's http actions name that `env` lacks or has empty, each with where it is needed. */
export function missingEnvRefs(config: Pick<AgentConfig, 'rules'>, env: NodeJS.ProcessEnv): { name: string; neededBy: string[] }[] {
  const missing = new Map<string, string[]>();
  const check = (value: string, where: string) => {
    for (const [, name] of value.matchAll(ENV_REF)) {
      const v = env[name!];
      if (v !== undefined && v !== '') continue;
      const list = missing.get(name!) ?? [];
      if (!list.includes(where)) list.push(where);
      missing.set(name!, list);
    }
  };
  for (const rule of config.rules) {
    for (const action of [...rule.actions, ...rule.onComplete, ...rule.onCancel]) {
      if (action.type !== 'http') continue;
      const at = `rule '${rule.name}' action '${action.name}'`;
      check(action.url, `${at} url`);
      for (const [header, value] of Object.entries(action.headers)) check(value, `${at} header ${header}`);
    }
  }
  return [...missing].map(([name, neededBy]) => ({ name, neededBy }));
}

/** Compiles a rule's description pattern; matching ignores case, like every other match field. */
export function compileDescription(pattern: string): RegExp {
  return new RegExp(pattern, 'i');
}

// Messages say what is wanted, not zod's internals; a missing required key says so.
export const want = (what: string) => (issue: { input?: unknown }) => (issue.input === undefined ? MISSING : `expected ${what}`);
const num = (what: string) => z.number({ error: want(what) });
const secondsBetween = (min: number, max: number) =>
  num('a number of seconds')
    .min(min, { error: `must be between ${min} and ${max} seconds` })
    .max(max, { error: `must be between ${min} and ${max} seconds` });
const secondsAtLeast = (min: number, exclusive = false) =>
  exclusive
    ? num('a number of seconds').gt(min, { error: `must be more than ${min} seconds` })
    : num('a number of seconds').min(min, { error: `must be at least ${min} second${min === 1 ? '' : 's'}` });
const count = z
  .int({ error: want('a whole number') })
  .min(0, { error: 'must be 0 or more' })
  .max(100, { error: 'must be at most 100' });
export const name = z.string({ error: want('a string') }).min(1, { error: 'must not be empty' });
const stringMap = nameRecord(z.string({ error: want('a string (quote numbers and booleans)') }), 'a mapping of names to strings');

const withEnvRefs = (schema: z.ZodString) =>
  schema.superRefine((value, ctx) => {
    const problem = envRefProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** A string or a list of strings, each one of `allowed` in any case; out: the list as written. */
function oneOrMany(allowed: readonly string[], what: string) {
  const known = new Set(allowed.map((s) => s.toLowerCase()));
  const check = (v: unknown, ctx: z.RefinementCtx, path: (string | number)[]) => {
    if (typeof v !== 'string') {
      ctx.addIssue({ code: 'custom', message: `expected ${what} (a string)`, path });
    } else if (!known.has(v.toLowerCase())) {
      ctx.addIssue({ code: 'custom', message: `unknown ${what} "${v}"; expected one of ${allowed.join(', ')}`, path });
    }
  };
  return z.unknown().superRefine((value, ctx) => {
    if (Array.isArray(value)) {
      if (value.length === 0) ctx.addIssue({ code: 'custom', message: `an empty list matches nothing; omit the key to match any ${what}` });
      value.forEach((v, i) => check(v, ctx, [i]));
    } else {
      check(value, ctx, []);
    }
  });
}

const Match = z.strictObject(
  {
    eventType: oneOrMany(EVENT_TYPES, 'event type').optional(),
    eventSource: oneOrMany(EVENT_SOURCES, 'event source').optional(),
    status: oneOrMany(EVENT_STATUSES, 'status').optional(),
    durationInSeconds: z
      .strictObject(
        { min: num('a number of seconds').nullable().optional(), max: num('a number of seconds').nullable().optional() },
        { error: want('a mapping with min and/or max') },
      )
      .optional(),
    affectsThisVm: z
      .boolean({ error: want('true or false') })
      .nullable()
      .optional(),
    description: z
      .string({ error: want('a regular expression (a string)') })
      .superRefine((pattern, ctx) => {
        try {
          compileDescription(pattern);
        } catch (err) {
          const why = (err as Error).message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, '');
          ctx.addIssue({ code: 'custom', message: `not a valid regular expression: ${why}` });
        }
      })
      .nullable()
      .optional(),
  },
  { error: want('a mapping') },
);

const ExecSchema = z.strictObject({
  type: z.literal('exec'),
  name: name.optional(),
  argv: z
    .array(name, {
      error: (issue) => (typeof issue.input === 'string' ? 'argv must be an array, never a shell string' : 'expected a list of strings'),
    })
    .min(1, { error: 'argv must name a program' }),
  timeoutSeconds: secondsAtLeast(0, true).default(60),
  retries: count.default(0),
  cwd: name.nullable().optional(),
  env: stringMap.optional(),
  passEnv: z
    .array(
      z
        .string({ error: want('a variable name') })
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected a variable name (letters, digits, _)' }),
      {
        error: want('a list of variable names'),
      },
    )
    .optional(),
});

const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

const HttpSchema = z.strictObject({
  type: z.literal('http'),
  name: name.optional(),
  method: z.enum(HTTP_METHODS, { error: want(`one of ${HTTP_METHODS.join(', ')}`) }).default('POST'),
  url: withEnvRefs(z.string({ error: want('a URL') })).superRefine((url, ctx) => {
    const problem = urlProblem(url);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  headers: nameRecord(
    withEnvRefs(z.string({ error: want('a string (quote numbers and booleans)') })),
    'a mapping of header names to strings',
  ).optional(),
  body: z.unknown().optional(),
  timeoutSeconds: secondsAtLeast(0, true).default(10),
  retries: count.default(2),
  backoffSeconds: num('a number of seconds').min(0, { error: 'must be 0 or more' }).default(1),
});

const LogSchema = z.strictObject({
  type: z.literal('log'),
  name: name.optional(),
  message: z.string({ error: want('a string') }).default(''),
  level: z.enum(['info', 'warn', 'error'], { error: want('info, warn or error') }).default('info'),
});

const KubernetesActionSchema = z.strictObject({
  type: z.literal('kubernetes'),
  name: name.optional(),
  drain: z.boolean({ error: want('true or false') }).default(true),
  timeoutSeconds: secondsAtLeast(0, true).default(CONFIG_DEFAULTS.kubernetes.timeoutSeconds),
});

const ActionSchema = z.discriminatedUnion('type', [ExecSchema, HttpSchema, LogSchema, KubernetesActionSchema]);
type RawAction = z.infer<typeof ActionSchema>;
const Actions = z.array(ActionSchema, { error: want('a list of actions') }).default([]);

const RuleSchema = z.strictObject(
  {
    name,
    match: Match.optional(),
    actions: Actions,
    approval: z
      .enum(['never', 'immediately', 'after-actions'], { error: want('never, immediately or after-actions') })
      .default('after-actions'),
    approvalMarginSeconds: num('a number of seconds').min(0, { error: 'must be 0 or more' }).default(0),
    onComplete: Actions,
    onCancel: Actions,
  },
  { error: want('a mapping') },
);

const POLICIES = ['none', 'cordon', 'drain'] as const;
/** A Kubernetes object name (DNS subdomain). */
const objectName = z
  .string({ error: want('a string') })
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { error: 'expected a Kubernetes name: lowercase letters, digits, - and .' })
  .max(253, { error: 'must be at most 253 characters' });

const KubernetesSchema = z.strictObject(
  {
    nodeName: name.nullable().optional(),
    policy: z
      .record(z.string(), z.enum(POLICIES, { error: want(POLICIES.join(', ')) }), {
        error: want('a mapping of event types to none, cordon or drain'),
      })
      .optional(),
    marginSeconds: num('a number of seconds').min(0, { error: 'must be 0 or more' }).default(CONFIG_DEFAULTS.kubernetes.marginSeconds),
    taint: z
      .string({ error: want('a taint key=value:Effect, or null') })
      .superRefine((spec, ctx) => {
        if (!/^[^=:]+(=[^:]*)?:(NoSchedule|PreferNoSchedule|NoExecute)$/.test(spec))
          ctx.addIssue({ code: 'custom', message: 'expected key=value:Effect, Effect one of NoSchedule, PreferNoSchedule, NoExecute' });
      })
      .nullable()
      .optional(),
    localStorage: z.enum(['evict', 'skip'], { error: want('evict or skip') }).default(CONFIG_DEFAULTS.kubernetes.localStorage),
    readyTimeoutSeconds: secondsAtLeast(0).default(CONFIG_DEFAULTS.kubernetes.readyTimeoutSeconds),
    approval: z.enum(['barrier', 'leader-only'], { error: want('barrier or leader-only') }).optional(),
    budget: z
      .strictObject(
        {
          slots: z
            .int({ error: want('a whole number') })
            .min(1, { error: 'must be at least 1' })
            .max(1000, { error: 'must be at most 1000' }),
          namespace: objectName.default(CONFIG_DEFAULTS.kubernetes.budget.namespace),
          name: objectName.default(CONFIG_DEFAULTS.kubernetes.budget.name),
          // A Lease's leaseDurationSeconds is an int32: the API server refuses 30.5 when it decodes the body.
          leaseDurationSeconds: z
            .int({ error: want('a whole number of seconds') })
            .min(10, { error: 'must be at least 10 seconds' })
            .max(2 ** 31 - 1, { error: 'must be at most 2147483647 seconds' })
            .default(CONFIG_DEFAULTS.kubernetes.budget.leaseDurationSeconds),
          minPrepareSeconds: secondsAtLeast(0).default(CONFIG_DEFAULTS.kubernetes.budget.minPrepareSeconds),
        },
        { error: want('a mapping with slots (and namespace, name, leaseDurationSeconds, minPrepareSeconds), or null') },
      )
      .nullable()
      .optional(),
  },
  { error: want('a mapping') },
);

/** Names keys (etcd) and blobs (Azure): a DNS-label-like name is safe in both. */
const groupName = z
  .string({ error: want('a string') })
  .regex(/^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/, {
    error: 'expected letters, digits, ., _ and -, starting and ending with a letter or digit',
  })
  .max(63, { error: 'must be at most 63 characters' });
const storeUrl = z.string({ error: want('a URL') }).superRefine((url, ctx) => {
  const problem = urlProblem(url) ?? (url.includes('${') ? 'a store URL cannot come from ${env:...}' : null);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
const budgetCommon = {
  slots: z
    .int({ error: want('a whole number') })
    .min(1, { error: 'must be at least 1' })
    .max(1000, { error: 'must be at most 1000' }),
  group: groupName,
  // etcd grants no lease shorter than its election timeout allows; 3 s is safe on any cluster.
  leaseSeconds: z
    .int({ error: want('a whole number of seconds') })
    .min(3, { error: 'must be at least 3 seconds' })
    .max(86_400, { error: 'must be at most 86400 seconds' })
    .default(CONFIG_DEFAULTS.budget.leaseSeconds),
  minPrepareSeconds: secondsAtLeast(0).default(CONFIG_DEFAULTS.budget.minPrepareSeconds),
  marginSeconds: secondsAtLeast(0).default(CONFIG_DEFAULTS.budget.marginSeconds),
};
/** The agent's budget backends; the controller adds its own `memory` to them (eventgrid/controller-config.ts). */
export const BUDGET_BACKENDS = [
  z.strictObject({
    backend: z.literal('etcd'),
    // [choice] No client certificates or etcd auth yet: an https endpoint would fail at the first call, so it fails here.
    endpoints: z
      .array(
        storeUrl.superRefine((url, ctx) => {
          if (url.startsWith('https:'))
            ctx.addIssue({ code: 'custom', message: 'expected an http:// endpoint: TLS to etcd is not supported yet' });
        }),
        { error: want('a list of etcd client URLs') },
      )
      .min(1, { error: 'name at least one etcd endpoint' }),
    ...budgetCommon,
  }),
  z.strictObject({
    backend: z.literal('azure-blob'),
    containerUrl: storeUrl.superRefine((url, ctx) => {
      if (/[?#]/.test(url)) ctx.addIssue({ code: 'custom', message: 'no query string: a SAS token does not belong in the config file' });
    }),
    clientId: name.nullable().optional(),
    ...budgetCommon,
  }),
] as const;
const BudgetSchema = z.discriminatedUnion('backend', BUDGET_BACKENDS, { error: want('a mapping with backend etcd or azure-blob') });
/** What the agent and the controller share: the fields of `budget` every backend has. */
export const BUDGET_COMMON = budgetCommon;

/** Settings the agent and the controller share, with one meaning in both. */
export const SHARED_SETTINGS = {
  journal: name.default(CONFIG_DEFAULTS.journal),
  journalUnwritable: z
    .strictObject(
      {
        policy: z
          .enum(['prepare-before-notbefore', 'hold'], { error: want('prepare-before-notbefore or hold') })
          .default(CONFIG_DEFAULTS.journalUnwritable.policy),
        prepareWithinSeconds: secondsAtLeast(0).default(CONFIG_DEFAULTS.journalUnwritable.prepareWithinSeconds),
      },
      { error: want('a mapping with policy and/or prepareWithinSeconds') },
    )
    .optional(),
  listen: z
    .union([z.string(), z.null(), z.literal(false)], { error: want('HOST:PORT, or null or false to turn the server off') })
    .superRefine((value, ctx) => {
      const problem = typeof value === 'string' ? listenProblem(value) : null;
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
  shutdownGraceSeconds: num('a number of seconds').min(0, { error: 'must be 0 or more' }).default(CONFIG_DEFAULTS.shutdownGraceSeconds),
  rules: z.array(RuleSchema, { error: want('a list of rules') }).min(1, { error: 'at least one rule is needed' }),
};

const ConfigSchema = z.strictObject(
  {
    endpoint: z
      .string({ error: want('a URL') })
      .superRefine((url, ctx) => {
        const problem = urlProblem(url);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .nullable()
      .optional(),
    apiVersion: z
      .string({ error: want('a string') })
      .regex(/^\d{4}-\d{2}-\d{2}$/, { error: want('YYYY-MM-DD') })
      .default(CONFIG_DEFAULTS.apiVersion),
    pollIntervalSeconds: secondsBetween(0.2, 60).default(CONFIG_DEFAULTS.pollIntervalSeconds),
    vmName: name.nullable().optional(),
    journal: SHARED_SETTINGS.journal,
    journalUnwritable: SHARED_SETTINGS.journalUnwritable,
    listen: SHARED_SETTINGS.listen,
    leader: z
      .strictObject(
        {
          mode: z.enum(['first', 'self', 'any'], { error: want('first, self or any') }).default('first'),
          standby: z
            .strictObject(
              {
                afterSeconds: secondsAtLeast(1),
                events: z.enum(['user', 'all'], { error: want('user or all') }).default('user'),
              },
              { error: want('a mapping with afterSeconds (and events), or null') },
            )
            .nullable()
            .default(null),
        },
        { error: want('a mapping') },
      )
      .optional(),
    readyWithinSeconds: secondsAtLeast(0, true).default(CONFIG_DEFAULTS.readyWithinSeconds),
    shutdownGraceSeconds: SHARED_SETTINGS.shutdownGraceSeconds,
    rules: SHARED_SETTINGS.rules,
    kubernetes: KubernetesSchema.optional(),
    budget: BudgetSchema.nullable().optional(),
  },
  { error: want('a mapping of settings') },
);
type RawConfig = z.infer<typeof ConfigSchema>;

/** http(s) only; a URL taken whole from `${env:...}` is checked when the action runs. */
export function urlProblem(url: string): string | null {
  if (url.startsWith('${env:')) return null;
  let parsed: URL;
  try {
    parsed = new URL(url.replace(ENV_REF, 'x'));
  } catch {
    return 'not a valid URL';
  }
  return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? null : 'expected an http:// or https:// URL';
}

/** `listen` is read by the one HOST:PORT parser; [choice] its form is told as the config's own alternatives. */
function listenProblem(value: string): string | null {
  try {
    parseHostPort(value, 'listen', CONFIG_DEFAULTS.listen);
    return null;
  } catch (err) {
    if (!(err instanceof HostPortError)) throw err;
    return err.kind === 'form'
      ? `expected HOST:PORT (e.g. ${CONFIG_DEFAULTS.listen}), or null or false to turn the server off`
      : err.problem;
  }
}

/** One problem in the config, as a DocumentError (AgentConfigError lists them). */
class ConfigProblem extends DocumentError {
  override name = 'ConfigProblem';
}

/** Reads and checks an agent config file. */
export function loadAgentConfig(path: string): AgentConfig {
  return parseAgentConfig(
    readConfigFile(path, 'agent config', (errors) => new AgentConfigError(errors)),
    path,
  );
}

/** A config file's text; a file that cannot be read throws `errors` of its one problem. */
export function readConfigFile(path: string, what: string, errors: (problems: DocumentError[]) => DocumentErrors): string {
  try {
    return readDocumentFile(path, what, ConfigProblem);
  } catch (err) {
    if (err instanceof ConfigProblem) throw errors([err]);
    throw err;
  }
}

/**
 * Checks config text against `schema`, then `checks` across fields on the raw data (reported beside
 * the schema's problems). Every problem is listed, at file:line:col; a .json file gets JSON's own syntax check.
 */
export function checkConfig<S extends z.ZodType>(
  text: string,
  file: string,
  how: {
    schema: S;
    errors: (problems: DocumentError[]) => DocumentErrors;
    wording: (issue: z.core.$ZodIssue) => string | undefined;
    checks: (data: unknown) => Problem[];
  },
): z.infer<S> {
  const source = new CheckedDocument(text, file, {
    error: ConfigProblem,
    empty: 'the file is empty; expected a mapping with "rules"',
    errors: how.errors,
    syntaxLabel: 'syntax error',
  });
  const parsed = how.schema.safeParse(source.data);
  const problems: Problem[] = parsed.success ? [] : issueProblems(parsed.error.issues, how.wording);
  problems.push(...how.checks(source.data));
  if (problems.length > 0) throw how.errors(source.locate(problems));
  return parsed.data as z.infer<S>;
}

/** Parses config text; `file` names it in errors, and a .json extension gets JSON's own syntax check. Every problem is listed. */
export function parseAgentConfig(text: string, file: string): AgentConfig {
  const raw = checkConfig(text, file, {
    schema: ConfigSchema,
    errors: (errors) => new AgentConfigError(errors),
    wording: configWording,
    checks: crossChecks,
  });
  return normalize(raw);
}

/** The config's own words for an issue; undefined keeps the shared wording. */
export function configWording(issue: z.core.$ZodIssue): string | undefined {
  if (issue.code === 'invalid_union' && 'discriminator' in issue && issue.discriminator === 'type') {
    return 'expected type exec, http, log or kubernetes';
  }
  if (issue.code === 'invalid_union' && 'discriminator' in issue && issue.discriminator === 'backend') {
    return 'expected backend etcd or azure-blob';
  }
  return undefined;
}

export function crossChecks(data: unknown): Problem[] {
  const problems: Problem[] = [];
  // On the raw data, so an unknown event type is told even beside a bad policy value.
  const policy = isRecord(data) && isRecord(data.kubernetes) ? data.kubernetes.policy : undefined;
  if (isRecord(policy)) {
    for (const type of Object.keys(policy)) {
      if (!EVENT_TYPES.some((t) => t.toLowerCase() === type.toLowerCase())) {
        const message = `unknown event type "${type}"; expected one of ${EVENT_TYPES.join(', ')}`;
        problems.push({ path: ['kubernetes', 'policy', type], message, key: type });
      }
    }
  }
  const rules = isRecord(data) && Array.isArray(data.rules) ? data.rules : [];
  const seen = new Map<string, number>();
  rules.forEach((rule: unknown, i) => {
    if (!isRecord(rule)) return;
    if (typeof rule.name === 'string') {
      const first = seen.get(rule.name);
      if (first !== undefined)
        problems.push({ path: ['rules', i, 'name'], message: `duplicate rule name "${rule.name}" (first at rules[${first}])` });
      else seen.set(rule.name, i);
    }
    const duration = isRecord(rule.match) ? rule.match.durationInSeconds : undefined;
    if (isRecord(duration) && typeof duration.min === 'number' && typeof duration.max === 'number' && duration.min > duration.max) {
      problems.push({
        path: ['rules', i, 'match', 'durationInSeconds', 'max'],
        message: `max (${duration.max}) is below min (${duration.min})`,
      });
    }
    for (const list of ['actions', 'onComplete', 'onCancel'] as const) {
      const actions = rule[list];
      if (!Array.isArray(actions)) continue;
      actions.forEach((action: unknown, j) => {
        if (isRecord(action) && action.type === 'http' && action.method === 'GET' && action.body !== undefined) {
          problems.push({ path: ['rules', i, list, j, 'body'], message: 'a GET request carries no body', key: 'body' });
        }
      });
    }
  });
  return problems;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

type SharedRaw = Pick<RawConfig, 'journal' | 'journalUnwritable' | 'listen' | 'shutdownGraceSeconds' | 'rules'>;

/** The shared settings as read (SHARED_SETTINGS), `listen`'s default being the agent's or the controller's. */
export function normalizeShared(
  raw: SharedRaw,
  defaultListen: string,
): Pick<AgentConfig, 'journal' | 'journalUnwritable' | 'listen' | 'shutdownGraceSeconds' | 'rules'> {
  return {
    journal: raw.journal,
    journalUnwritable: {
      policy: raw.journalUnwritable?.policy ?? CONFIG_DEFAULTS.journalUnwritable.policy,
      prepareWithinSeconds: raw.journalUnwritable?.prepareWithinSeconds ?? CONFIG_DEFAULTS.journalUnwritable.prepareWithinSeconds,
    },
    listen: raw.listen === undefined ? defaultListen : raw.listen === false ? null : raw.listen,
    shutdownGraceSeconds: raw.shutdownGraceSeconds,
    rules: raw.rules.map((r): Rule => ({
      name: r.name,
      match: normalizeMatch(r.match),
      actions: r.actions.map(normalizeAction),
      approval: r.approval,
      approvalMarginSeconds: r.approvalMarginSeconds,
      onComplete: r.onComplete.map(normalizeAction),
      onCancel: r.onCancel.map(normalizeAction),
    })),
  };
}

function normalize(raw: RawConfig): AgentConfig {
  return {
    endpoint: raw.endpoint ?? null,
    apiVersion: raw.apiVersion,
    pollIntervalSeconds: raw.pollIntervalSeconds,
    vmName: raw.vmName ?? null,
    ...normalizeShared(raw, CONFIG_DEFAULTS.listen),
    leader: { mode: raw.leader?.mode ?? 'first', standby: raw.leader?.standby ?? null },
    readyWithinSeconds: raw.readyWithinSeconds,
    kubernetes: normalizeKubernetes(raw.kubernetes),
    budget: normalizeBudget(raw.budget),
  };
}

export function normalizeBudget(b: z.infer<typeof BudgetSchema> | null | undefined): FleetBudgetConfig | null {
  if (b === null || b === undefined) return null;
  const common = {
    slots: b.slots,
    group: b.group,
    leaseSeconds: b.leaseSeconds,
    minPrepareSeconds: b.minPrepareSeconds,
    marginSeconds: b.marginSeconds,
  };
  return b.backend === 'etcd'
    ? { backend: 'etcd', endpoints: b.endpoints, containerUrl: null, clientId: null, ...common }
    : { backend: 'azure-blob', endpoints: [], containerUrl: b.containerUrl, clientId: b.clientId ?? null, ...common };
}

/** The kubernetes section as read; with no argument, its defaults. */
export function normalizeKubernetes(k?: z.infer<typeof KubernetesSchema>): KubernetesConfig {
  const d = CONFIG_DEFAULTS.kubernetes;
  return {
    nodeName: k?.nodeName ?? null,
    policy: k?.policy ?? {},
    marginSeconds: k?.marginSeconds ?? d.marginSeconds,
    taint: k?.taint ?? null,
    localStorage: k?.localStorage ?? d.localStorage,
    readyTimeoutSeconds: k?.readyTimeoutSeconds ?? d.readyTimeoutSeconds,
    // Absent means barrier (leader.ts usesBarrier); left out rather than filled in, so a config reads back as written.
    ...(k?.approval !== undefined ? { approval: k.approval } : {}),
    budget: k?.budget
      ? {
          slots: k.budget.slots,
          namespace: k.budget.namespace,
          name: k.budget.name,
          leaseDurationSeconds: k.budget.leaseDurationSeconds,
          minPrepareSeconds: k.budget.minPrepareSeconds,
        }
      : null,
  };
}

function normalizeMatch(m: z.infer<typeof Match> | undefined): RuleMatch {
  const list = (v: unknown): string[] | null => (v === undefined ? null : Array.isArray(v) ? (v as string[]) : [v as string]);
  const d = m?.durationInSeconds;
  return {
    eventType: list(m?.eventType),
    eventSource: list(m?.eventSource),
    status: list(m?.status),
    durationInSeconds: d ? { min: d.min ?? null, max: d.max ?? null } : null,
    affectsThisVm: m?.affectsThisVm ?? null,
    description: m?.description ?? null,
  };
}

function normalizeAction(a: RawAction, index: number): Action {
  const actionName = a.name ?? `${a.type}-${index}`;
  switch (a.type) {
    case 'exec':
      return {
        type: 'exec',
        name: actionName,
        argv: a.argv,
        timeoutSeconds: a.timeoutSeconds,
        retries: a.retries,
        cwd: a.cwd ?? null,
        env: a.env ?? {},
        passEnv: a.passEnv ?? [],
      };
    case 'http':
      return {
        type: 'http',
        name: actionName,
        method: a.method,
        url: a.url,
        headers: a.headers ?? {},
        body: a.body,
        timeoutSeconds: a.timeoutSeconds,
        retries: a.retries,
        backoffSeconds: a.backoffSeconds,
      };
    case 'log':
      return { type: 'log', name: actionName, message: a.message, level: a.level };
    case 'kubernetes':
      return { type: 'kubernetes', name: actionName, drain: a.drain, timeoutSeconds: a.timeoutSeconds };
  }
}
