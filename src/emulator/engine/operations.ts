// What each maintenance operation produces: the single table of operation → event.
import type { EventSource, EventType } from '../../protocol/types.js';

export const OPERATION_TYPES = [
  'restart',
  'redeploy',
  'freeze',
  'platform-reboot',
  'platform-redeploy',
  'degraded-hardware',
  'hardware-failure',
  'spot-eviction',
  'delete',
  'reimage',
  'host-update',
] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

export interface OperationProfile {
  eventType: EventType;
  source: EventSource;
  description: string;
  /** Default DurationInSeconds; -1 is the seed's "unknown". */
  durationInSeconds: number;
  /** Created already Started, with no notice. */
  startsAtOnce?: boolean;
}

/**
 * [seed] The operations table of SPEC §2. EventSource is blank in the seed for
 * hardware failure, Spot eviction, delete and reimage; [choice] we report the
 * side that initiated it: Platform for the first two, User for the last two.
 * Descriptions follow the wording of the seed's examples.
 */
export const OPERATION_PROFILES: Readonly<Record<OperationType, OperationProfile>> = {
  restart: {
    eventType: 'Reboot',
    source: 'User',
    description: 'Virtual machine is going to be restarted as requested by authorized user.',
    durationInSeconds: -1,
  },
  redeploy: {
    eventType: 'Redeploy',
    source: 'User',
    description: 'Virtual machine is going to be redeployed as requested by authorized user.',
    durationInSeconds: -1,
  },
  freeze: {
    eventType: 'Freeze',
    source: 'Platform',
    description: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
    durationInSeconds: 5,
  },
  'platform-reboot': {
    eventType: 'Reboot',
    source: 'Platform',
    description: 'The Host server is undergoing maintenance.',
    durationInSeconds: -1,
  },
  'platform-redeploy': {
    eventType: 'Redeploy',
    source: 'Platform',
    description: 'The Host server is undergoing emergency repair.',
    durationInSeconds: -1,
  },
  'degraded-hardware': {
    eventType: 'Redeploy',
    source: 'Platform',
    description: 'The Host server hardware is predicted to fail; the virtual machine will be moved to healthy hardware.',
    durationInSeconds: -1,
  },
  'hardware-failure': {
    eventType: 'Reboot',
    source: 'Platform',
    description: 'The Host server is undergoing emergency repair.',
    durationInSeconds: -1,
    startsAtOnce: true,
  },
  'spot-eviction': {
    eventType: 'Preempt',
    source: 'Platform',
    description: 'Spot virtual machine is being evicted.',
    durationInSeconds: -1,
  },
  delete: {
    eventType: 'Terminate',
    source: 'User',
    description: 'Virtual machine is going to be deleted as requested by authorized user.',
    durationInSeconds: -1,
  },
  reimage: {
    // [choice] The seed gives reimage/OS upgrade no event type; the VM restarts on its new image.
    eventType: 'Reboot',
    source: 'User',
    description: 'Virtual machine is going to be reimaged as requested by authorized user.',
    durationInSeconds: -1,
  },
  'host-update': {
    eventType: 'Freeze',
    source: 'Platform',
    description: 'The Host server is undergoing maintenance.',
    durationInSeconds: 9,
  },
};

/** [seed] Jobs that run on a host and so may be shared by several customers. */
export const HOST_OPERATIONS: ReadonlySet<OperationType> = new Set<OperationType>([
  'host-update',
  'freeze',
  'platform-reboot',
  'platform-redeploy',
  'degraded-hardware',
  'hardware-failure',
]);

export function isOperationType(x: unknown): x is OperationType {
  return typeof x === 'string' && (OPERATION_TYPES as readonly string[]).includes(x);
}
