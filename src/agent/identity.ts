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
  if (config.vmName !== null && config.vmName !== '') return config.vmName;
  let name: string;
  try {
    ({ name } = await client.getCompute(options));
  } catch (err) {
    throw new Error(
      `cannot learn this VM's name from IMDS (/metadata/instance/compute): ${(err as Error).message}; set vmName in the agent config, or check that IMDS is reachable`,
      { cause: err },
    );
  }
  if (typeof name !== 'string' || name === '') {
    throw new Error('IMDS compute metadata gave no VM name; set vmName in the agent config, or check IMDS');
  }
  return name;
}
