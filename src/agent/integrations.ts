// The agent's integrations with outside systems, started only when the config names them: the
// Kubernetes node (its API, the check that the node is this VM, registration for the barrier, and
// renewal of the budget slots held before a restart) and the fleet budget's store. Each returns the
// object an event's steps ask for a slot, a cordon or the barrier; neither ever stops the agent for
// an outside system that does not answer yet.
import type { ScheduledEventsClient } from '../client/index.js';
import { FleetCoordinator } from './coordination/coordinator.js';
import { createStore } from './coordination/open-store.js';
import type { Claim, FleetStore } from './coordination/store.js';
import { resourceIdOf } from './identity.js';
import { KubeError, type KubeApi } from './kubernetes/api.js';
import { NodeIdentityError } from './kubernetes/node.js';
import { KubernetesRuntime } from './kubernetes/runtime.js';
import { PEERS, loadPeer, usesKubernetes } from './peers.js';
import type { AgentServices } from './services.js';
import type { AgentConfig } from './types.js';

/** An integration start-up that cannot succeed yet is tried again after this, doubling up to the max. */
export const STARTUP_RETRY_MAX_MS = 30_000;

/** What an integration needs of the agent: its services, its config and this VM. */
export interface IntegrationContext extends AgentServices {
  config: AgentConfig;
  env: NodeJS.ProcessEnv;
  vmName: string;
  dryRun: boolean;
}

/**
 * With a kubernetes action in the config: connect, and check that the node is this VM before any
 * event (a wrong NODE_NAME would drain another machine): a mismatch stops the agent. An API server
 * that does not answer yet is asked again, as IMDS is. Null without a kubernetes action, or when
 * the agent stopped meanwhile.
 */
export async function startKubernetes(
  ctx: IntegrationContext,
  options: { api: KubeApi | undefined; client: ScheduledEventsClient; resourceId: string | null },
): Promise<{ runtime: KubernetesRuntime; resourceId: string | null } | null> {
  const { config, env, log, stopped } = ctx;
  if (!usesKubernetes(config)) return null;
  const nodeName = config.kubernetes.nodeName ?? env.NODE_NAME ?? '';
  if (nodeName === '') {
    throw new Error(
      'a rule has a kubernetes action, but no node is named: set env NODE_NAME (the downward API spec.nodeName) or kubernetes.nodeName',
    );
  }
  let api = options.api;
  if (api === undefined) {
    const { ClientNodeApi, loadKubeConfig } = await loadPeer(PEERS.kubernetes, () => import('./kubernetes/client-node-api.js'));
    api = new ClientNodeApi(loadKubeConfig(env));
  }
  const runtime = new KubernetesRuntime({
    api,
    config: config.kubernetes,
    nodeName,
    metrics: ctx.metrics,
    log: log.child({ node: nodeName }),
    now: ctx.now,
    sleep: ctx.sleep,
  });
  runtime.heldSlots = () =>
    ctx
      .journal()
      .entries()
      .filter((e) => e.recoveredAt === null && e.kubernetes?.slot != null)
      .map((e) => ({ eventId: e.eventId, slot: e.kubernetes!.slot! }));
  let resourceId = options.resourceId;
  for (let failures = 0; ; failures++) {
    try {
      // Read at start-up with the name, unless the config named the VM.
      resourceId ??= resourceIdOf((await options.client.getCompute({ signal: stopped })).raw);
      await runtime.checkNode({ name: ctx.vmName, resourceId });
      break;
    } catch (err) {
      if (stopped.aborted) return null;
      // Only an answer that cannot change by waiting stops the agent: a node that is not this VM, or one that does not exist.
      if (err instanceof NodeIdentityError) throw err;
      if (err instanceof KubeError && err.status === 404) {
        throw new Error(`${err.message}: no node ${nodeName} in the cluster; check NODE_NAME or kubernetes.nodeName`, { cause: err });
      }
      const delay = Math.min(STARTUP_RETRY_MAX_MS, 1000 * 2 ** failures);
      log.error({ err: (err as Error).message, retryInMs: delay }, 'cannot check the Kubernetes node yet; retrying');
      if (!(await ctx.wait(delay, stopped))) return null;
    }
  }
  // The barrier: other nodes' agents learn from the node which VM it is. A failure (an API server
  // down, RBAC without `list nodes`) does not stop the agent: it tries again meanwhile, and until
  // then the others do not wait for this node.
  if (!ctx.dryRun) {
    try {
      await runtime.register(ctx.vmName);
    } catch (err) {
      log.error(
        { err: (err as Error).message },
        'cannot label the node as one that runs the agent: other nodes will not wait for it before approving an event that names both; trying again',
      );
      ctx.track(runtime.registerRetrying(ctx.vmName, stopped));
    }
  }
  log.info(
    { node: nodeName, budget: config.kubernetes.budget, approval: config.kubernetes.approval ?? 'barrier' },
    'the Kubernetes node is this VM',
  );
  // Slots held before a restart (the journal says which) stay fresh from now on.
  ctx.track(runtime.renewSlots(stopped));
  return { runtime, resourceId };
}

/**
 * With a `budget`: the store its backend names, registration in the group (retried meanwhile: an
 * unreachable store never stops the agent), and the renewal of slots the journal says are held.
 */
export async function startFleet(
  ctx: IntegrationContext,
  store: FleetStore | undefined,
  claims: 'per-vm' | 'per-event' = 'per-vm',
): Promise<FleetCoordinator | null> {
  const config = ctx.config.budget;
  if (config === null) return null;
  const fleet = new FleetCoordinator({
    store: store ?? (await createStore(config, ctx.vmName, ctx.env)),
    config,
    vmName: ctx.vmName,
    metrics: ctx.metrics,
    log: ctx.log.child({ budget: config.group }),
    now: ctx.now,
    sleep: ctx.sleep,
    dryRun: ctx.dryRun,
    claims,
  });
  fleet.heldSlots = () =>
    ctx
      .journal()
      .entries()
      .filter((e) => e.recoveredAt === null && e.budget?.slot != null)
      .map((e) => ({ eventId: e.eventId, slot: e.budget!.slot!, claim: e.budget!.claim as Claim }));
  for (const loop of [fleet.start(ctx.stopped), fleet.renewSlots(ctx.stopped)]) ctx.track(loop);
  return fleet;
}
