// `forewarn agent --check --config FILE`: everything the agent would find out at its first event,
// found out now: the config, every ${env:…} secret, IMDS and this VM's name, the fleet store and
// the Kubernetes node when configured, and what each event type would make it do. Exit 1 on any
// problem (2 for a config that does not load), so a deploy pipeline can gate on it.
import { createStore } from '../agent/coordination/open-store.js';
import { resolveVmIdentity } from '../agent/identity.js';
import { takesFleetSlot } from '../agent/leader.js';
import { PEERS, loadPeer, missingText, usesKubernetes } from '../agent/peers.js';
import { matchRule } from '../agent/rules.js';
import type { AgentConfig, Rule } from '../agent/types.js';
import { ScheduledEventsClient, type ScheduledEvent } from '../client/index.js';
import { EVENT_TYPES } from '../protocol/types.js';
import { printable } from '../shared/printable.js';
import type { AgentRequest } from './agent.js';
import type { Io } from './errors.js';

/** [choice] A check waits this long for IMDS: the agent itself would wait for ever, a check must end. */
const CHECK_TIMEOUT_MS = 10_000;

/** Prints one line per check and returns how many problems it found. */
export async function runAgentCheck(request: AgentRequest, file: string, io: Io): Promise<number> {
  const { config } = request;
  const problems: string[] = [];
  const ok = (text: string) => io.stdout(`ok       ${text}\n`);
  const problem = (text: string) => {
    problems.push(text);
    io.stdout(`problem  ${text}\n`);
  };
  ok(`${printable(file)}: ${config.rules.length} rule${config.rules.length === 1 ? '' : 's'}`);
  for (const missing of request.missingSecrets) problem(missing);
  for (const missing of request.missingPackages) problem(missingText(missing));
  // A check whose client is missing would only say so again.
  const lacksKubernetes = request.missingPackages.includes(PEERS.kubernetes);
  const lacksStore = request.missingPackages.some((p) => p !== PEERS.kubernetes);
  const client = new ScheduledEventsClient({
    ...(config.endpoint !== null ? { endpoint: config.endpoint } : {}),
    apiVersion: config.apiVersion,
    timeoutMs: CHECK_TIMEOUT_MS,
    firstCallTimeoutMs: CHECK_TIMEOUT_MS,
    retry: { maxAttempts: 2 },
  });
  try {
    const doc = await client.getDocument();
    ok(`IMDS at ${client.endpoint} answers: incarnation ${doc.incarnation}, ${doc.events.length} event(s) now`);
  } catch (err) {
    problem(`IMDS at ${client.endpoint}: ${(err as Error).message}`);
  }
  let vmName: string | null = null;
  try {
    vmName = (await resolveVmIdentity(config, client)).name;
    ok(`this VM is ${printable(vmName)}${config.vmName !== null ? ' (vmName in the config)' : ' (from IMDS)'}`);
  } catch (err) {
    problem((err as Error).message);
  }
  if (config.budget !== null && !lacksStore) {
    try {
      const store = await createStore(config.budget, vmName ?? 'forewarn-check', io.env);
      try {
        await store.open();
        ok(`fleet store ${config.budget.backend} at ${store.where}: group ${config.budget.group}, ${config.budget.slots} slot(s)`);
      } finally {
        await store.close();
      }
    } catch (err) {
      problem(`fleet store ${config.budget.backend}: ${(err as Error).message}`);
    }
  }
  if (usesKubernetes(config) && !lacksKubernetes) await checkKubernetes(config, io.env, ok, problem);
  for (const line of whatEachTypeDoes(config, vmName ?? config.vmName ?? 'this-vm')) io.stdout(`         ${line}\n`);
  io.stdout(problems.length === 0 ? 'no problems\n' : `${problems.length} problem${problems.length === 1 ? '' : 's'}\n`);
  return problems.length;
}

async function checkKubernetes(
  config: AgentConfig,
  env: NodeJS.ProcessEnv,
  ok: (text: string) => void,
  problem: (text: string) => void,
): Promise<void> {
  const nodeName = config.kubernetes.nodeName ?? env.NODE_NAME ?? '';
  if (nodeName === '') {
    problem('a rule has a kubernetes action, but no node is named: set env NODE_NAME or kubernetes.nodeName');
    return;
  }
  try {
    const { ClientNodeApi, loadKubeConfig } = await loadPeer(PEERS.kubernetes, () => import('../agent/kubernetes/client-node-api.js'));
    const node = await new ClientNodeApi(loadKubeConfig(env)).getNode(nodeName);
    ok(`Kubernetes node ${printable(node.name)} is reachable`);
  } catch (err) {
    problem(`Kubernetes node ${printable(nodeName)}: ${(err as Error).message}`);
  }
}

/** One line per event type: the rule a Platform event naming this VM would meet, and what it would do. */
export function whatEachTypeDoes(config: AgentConfig, vmName: string): string[] {
  return EVENT_TYPES.map((type) => {
    const event = {
      id: 'check',
      status: 'Scheduled',
      type,
      resourceType: 'VirtualMachine',
      resources: [vmName],
      notBefore: null,
      description: '',
      source: 'Platform',
      durationInSeconds: -1,
      raw: {},
    } as unknown as ScheduledEvent;
    const rule = matchRule(config.rules, event, vmName);
    return `${type}: ${rule === null ? 'no rule matches: nothing is done, and it starts at NotBefore' : describeRule(rule, config)}`;
  });
}

function describeRule(rule: Rule, config: AgentConfig): string {
  const actions = rule.actions.length === 0 ? 'no actions' : rule.actions.map((a) => `${a.type} ${a.name}`).join(', ');
  const slot = takesFleetSlot(rule, config.budget) ? '; a budget slot first' : '';
  return `rule '${printable(rule.name)}': ${actions}${slot}; approval ${rule.approval}`;
}
