// `forewarn trigger`: create maintenance through the emulator's control API.
import type { Command } from 'commander';
import { formatIso, parseEventTime } from '../protocol/time.js';
import { OPERATION_TYPES, isOperationType } from '../emulator/engine/operations.js';
import { callControl, resolveToken } from './control-api.js';
import { CliError, UsageError, type Io } from './errors.js';

export const DEFAULT_CONTROL_URL = 'http://127.0.0.1:8170';

/** [choice] Long enough for a busy emulator, short enough that a hung one is noticed. */
const REQUEST_TIMEOUT_MS = 10_000;

export interface RawTriggerFlags {
  vm?: string[];
  host?: string;
  tenant?: string;
  control?: string;
  notBefore?: string;
  duration?: string;
  description?: string;
  force?: boolean;
  token?: string;
  tokenFile?: string;
  json?: boolean;
}

export interface TriggerRequest {
  controlUrl: string;
  token?: string | undefined;
  /** About how the token was given (on argv, in a file others can read). */
  warnings?: string[];
  json: boolean;
  body: {
    type: string;
    vms?: string[];
    host?: string;
    tenant?: string;
    notBefore?: string;
    durationInSeconds?: number;
    description?: string;
    force?: boolean;
  };
}

/** Checks the arguments without any I/O; problems are UsageErrors (exit 2). */
export function parseTriggerArgs(operation: string, flags: RawTriggerFlags, env: Io['env'] = {}): TriggerRequest {
  if (!isOperationType(operation)) {
    throw new UsageError(`unknown operation "${operation}"; expected one of ${OPERATION_TYPES.join(', ')}`);
  }
  // `--vm a b`, `--vm a --vm b` and `--vm a,b` all name two VMs.
  const vms = (flags.vm ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  const targets = [vms.length > 0, flags.host !== undefined, flags.tenant !== undefined].filter(Boolean).length;
  if (targets !== 1) throw new UsageError('name the target with exactly one of --vm NAME..., --host HOST or --tenant TENANT');
  const body: TriggerRequest['body'] = { type: operation };
  if (vms.length > 0) body.vms = vms;
  if (flags.host !== undefined) body.host = flags.host;
  if (flags.tenant !== undefined) body.tenant = flags.tenant;
  if (flags.notBefore !== undefined) {
    let at: number | null;
    try {
      at = parseEventTime(flags.notBefore);
    } catch {
      at = null;
    }
    if (at === null) throw new UsageError(`--not-before must be an ISO 8601 time such as 2030-01-01T00:15:00Z, got "${flags.notBefore}"`);
    body.notBefore = formatIso(at);
  }
  if (flags.duration !== undefined) {
    const n = Number(flags.duration);
    if (!/^-?\d+$/.test(flags.duration.trim()) || n < -1) {
      throw new UsageError(`--duration must be whole seconds, -1 (unknown) or more, got "${flags.duration}"`);
    }
    body.durationInSeconds = n;
  }
  if (flags.description !== undefined) body.description = flags.description;
  if (flags.force) body.force = true;
  const controlUrl = (flags.control ?? env.FOREWARN_CONTROL ?? DEFAULT_CONTROL_URL).replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(controlUrl);
  } catch {
    throw new UsageError(`--control must be a URL such as ${DEFAULT_CONTROL_URL}, got "${controlUrl}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--control must be an http(s) URL, got "${controlUrl}"`);
  const { token, warnings } = resolveToken(flags, env);
  return { controlUrl, token, warnings, json: flags.json ?? false, body };
}

interface RollingStep {
  faultDomain: number;
  vms: string[];
  status: string;
  events: string[];
  at: string | null;
}

interface OperationCreated {
  operation: string;
  events: string[];
  removedVms?: string[];
  reimagedVms?: string[];
  status?: string;
  steps?: RollingStep[] | null;
}

/** POSTs the operation and prints what it created; failures are CliErrors (exit 1). */
export async function runTrigger(request: TriggerRequest, io: Io, fetchImpl: typeof fetch = fetch): Promise<OperationCreated> {
  const url = `${request.controlUrl}/v1/operations`;
  let answer: Awaited<ReturnType<typeof callControl>>;
  try {
    answer = await callControl(
      { method: 'POST', url, controlUrl: request.controlUrl, body: request.body, token: request.token, timeoutMs: REQUEST_TIMEOUT_MS },
      fetchImpl,
    );
  } catch (err) {
    // The API speaks of its body field; on the command line the same switch is --force.
    if (err instanceof Error) err.message = err.message.replace('pass "force": true', 'pass --force');
    throw err;
  }
  const { data, text } = answer;
  const created = data as OperationCreated | undefined;
  if (!created || typeof created.operation !== 'string' || !Array.isArray(created.events)) {
    throw new CliError(`unexpected answer from ${url}: ${text.slice(0, 200)}`);
  }
  if (request.json) {
    io.stdout(`${JSON.stringify(created, null, 2)}\n`);
  } else {
    const lines = [`operation ${created.operation}`];
    for (const id of created.events) lines.push(`event ${id}`);
    if (created.events.length === 0) lines.push('no events');
    if (created.removedVms?.length) lines.push(`removed at once (no terminate notification): ${created.removedVms.join(', ')}`);
    if (created.reimagedVms?.length) lines.push(`reimaged at once (no OS image notification): ${created.reimagedVms.join(', ')}`);
    if (created.steps) lines.push(...stepLines(created.steps));
    io.stdout(`${lines.join('\n')}\n`);
  }
  return created;
}

/** A rolling host update: one line per fault domain, in the order they are done. */
function stepLines(steps: RollingStep[]): string[] {
  const lines = [`rolling over ${steps.length} fault domain${steps.length === 1 ? '' : 's'}, one at a time:`];
  for (const step of steps) {
    const events = step.events.length > 0 ? `, event ${step.events.join(', ')}` : '';
    lines.push(`  fault domain ${step.faultDomain}: ${step.vms.join(', ')} (${step.status}${events})`);
  }
  return lines;
}

export function registerTriggerCommand(program: Command, io: Io): void {
  program
    .command('trigger')
    .description('create maintenance through the control API')
    .argument('<OPERATION>', OPERATION_TYPES.join(', '))
    .option('--vm <NAME...>', 'the VMs (repeatable; also takes several names)')
    .option('--host <HOST>', 'a host: one job for every tenant on it (host-level operations only)')
    .option('--tenant <TENANT>', 'every VM of a tenant; host-update rolls over it one fault domain at a time')
    .option('--control <URL>', `control API (default ${DEFAULT_CONTROL_URL}, env FOREWARN_CONTROL)`)
    .option('--not-before <ISO>', 'NotBefore as an ISO 8601 time')
    .option('--duration <SECONDS>', 'DurationInSeconds')
    .option('--description <TEXT>', 'Description')
    .option('--force', 'allow a NotBefore earlier than the minimum notice')
    .option('--token <TOKEN>', 'bearer token of the control API; `ps` shows it, so prefer env FOREWARN_TOKEN or --token-file')
    .option('--token-file <FILE>', 'read the bearer token from FILE, so it stays out of `ps`')
    .option('--json', 'print the JSON answer')
    .action(async (operation: string, flags: RawTriggerFlags) => {
      const request = parseTriggerArgs(operation, flags, io.env);
      for (const warning of request.warnings ?? []) io.stderr(`forewarn: warning: ${warning}\n`);
      await runTrigger(request, io);
    });
}
