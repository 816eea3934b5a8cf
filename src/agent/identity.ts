// Which VM this agent speaks for: the name Resources uses for it.
import type { ScheduledEventsClient } from '../client/index.js';
import type { AgentConfig } from './types.js';

/**
 * config.vmName, else IMDS compute's `name`. Scale-set instances come back as `set_instanceId`,
 * which `affects` matches against every form Resources uses.
 */
export async function resolveVmName(
  config: AgentConfig,
  client: ScheduledEventsClient,
  options: { signal?: AbortSignal } = {},
): Promise<string> {
  return (await resolveVmIdentity(config, client, options)).name;
}

/** The name as resolveVmName finds it, and IMDS's resourceId when compute was read for it (null with config.vmName). */
export async function resolveVmIdentity(
  config: AgentConfig,
  client: ScheduledEventsClient,
  options: { signal?: AbortSignal } = {},
): Promise<{ name: string; resourceId: string | null }> {
  if (config.vmName !== null && config.vmName !== '') return { name: config.vmName, resourceId: null };
  let compute: Awaited<ReturnType<ScheduledEventsClient['getCompute']>>;
  try {
    compute = await client.getCompute(options);
  } catch (err) {
    throw new Error(
      `cannot learn this VM's name from IMDS at ${client.computeUrl}: ${(err as Error).message}; set vmName in the agent config, or check that IMDS is reachable (away from Azure, point FOREWARN_ENDPOINT or endpoint at the emulator)`,
      { cause: err },
    );
  }
  const name = compute.name;
  if (typeof name !== 'string' || name === '') {
    throw new Error('IMDS compute metadata gave no VM name; set vmName in the agent config, or check IMDS');
  }
  return { name, resourceId: resourceIdOf(compute.raw) };
}

/** IMDS compute's resourceId (api-version 2019-03-11 on), or null. */
export function resourceIdOf(raw: Record<string, unknown>): string | null {
  return typeof raw.resourceId === 'string' && raw.resourceId !== '' ? raw.resourceId : null;
}
