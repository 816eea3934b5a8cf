// The one schema of a VM's declaration, shared by the control API, fleet files and the state file.
import { isIP } from 'node:net';
import { z } from 'zod';
import { EVICTION_POLICIES, ORCHESTRATION_MODES, OS_TYPES, POWER_STATES, PRIORITIES, TENANT_KINDS, ZONES } from '../engine/fleet.js';
import { TERMINATE_NOTICE_MINUTES } from '../engine/timing.js';
import { API_VERSIONS } from '../../protocol/versions.js';

const ipv4 = (description: string) =>
  z
    .string()
    .refine((s) => isIP(s) === 4, { message: 'expected an IPv4 address' })
    .optional()
    .meta({ description });

/** [imds] Azure's limits: at most 50 tags, names up to 512 characters without < > % & \\ ? /, values up to 256. */
export const MAX_TAGS = 50;
const TagName = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[^<>%&\\?/]+$/, { message: 'a tag name cannot contain < > % & \\ ? /' });

const AutomaticallyApprove = z.strictObject({
  automaticallyApprove: z
    .boolean()
    .optional()
    .meta({ description: 'The event proceeds at once, without waiting for approval or NotBefore' }),
});

/** ARM's names (Microsoft.Compute scheduledEventsPolicy); settings ARM has that Forewarn does not model are refused by name. */
const ScheduledEventsPolicySchema = z.strictObject({
  scheduledEventsAdditionalPublishingTargets: z
    .strictObject({
      eventGridAndResourceGraph: z
        .strictObject({
          enable: z.boolean().optional().meta({ description: "Publish this VM's events to Event Grid" }),
          scheduledEventsApiVersion: z
            .enum(API_VERSIONS)
            .optional()
            .meta({ description: 'The Scheduled Events api-version whose fields the notifications carry; default 2020-07-01' }),
        })
        .optional(),
    })
    .optional(),
  userInitiatedReboot: AutomaticallyApprove.optional(),
  userInitiatedRedeploy: AutomaticallyApprove.optional(),
});

/** Instance metadata a VM shows (/metadata/instance); fleet-file tenants and scale sets may set all but the last four, each VM's own. */
export const InstanceSettingsSchema = {
  location: z
    .string()
    .regex(/^[a-z0-9]{1,40}$/, { message: 'expected an Azure region name such as eastus2 (lower-case letters and digits)' })
    .optional()
    .meta({ description: 'Azure region; default eastus' }),
  zone: z.enum(ZONES).optional().meta({ description: 'Availability zone; absent: none' }),
  vmSize: z
    .string()
    .regex(/^[A-Za-z0-9_]{1,64}$/, { message: 'expected a VM size such as Standard_D2s_v3' })
    .optional()
    .meta({ description: 'Default Standard_D2s_v3' }),
  osType: z.enum(OS_TYPES).optional().meta({ description: 'Default Linux' }),
  resourceGroup: z
    .string()
    .regex(/^[-\w.()]{0,89}[-\w()]$/, { message: "expected 1-90 letters, digits, '_', '-', '.', '(' or ')', not ending in '.'" })
    .optional()
    .meta({ description: 'Default forewarn' }),
  subscriptionId: z
    .string()
    .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, { message: 'expected a GUID' })
    .optional()
    .meta({ description: 'Default 00000000-0000-0000-0000-000000000000' }),
  tags: z
    .record(TagName, z.string().max(256))
    .refine((t) => Object.keys(t).length <= MAX_TAGS, { message: `at most ${MAX_TAGS} tags` })
    .optional()
    .meta({ description: "Resource tags; a VM's own override its tenant's of the same name" }),
  scheduledEventsPolicy: ScheduledEventsPolicySchema.optional().meta({
    description:
      "ARM's scheduledEventsPolicy: publishing to Event Grid, and automatic approval of user-initiated Reboot and Redeploy; a VM's own settings override its set's, one by one",
  }),
  orchestrationMode: z
    .enum(ORCHESTRATION_MODES)
    .optional()
    .meta({ description: "Scale-set VMs only: the scale set's orchestration mode; default Uniform" }),
  // Azure's rules for these two depend on the OS, which may come from a tenant: the engine checks them.
  computerNamePrefix: z.string().optional().meta({
    description: 'Scale-set VMs only: osProfile.computerNamePrefix (1-9 characters on Windows, 1-58 on Linux); default the scale set name',
  }),
  computerName: z.string().optional().meta({
    description: 'osProfile.computerName (1-15 characters on Windows, 1-64 on Linux); default derived from the name and scale set',
  }),
  privateIp: ipv4('Primary private IPv4; default: the lowest free address from 10.0.0.4 up'),
  publicIp: ipv4('Public IPv4 of the primary NIC; absent: none'),
  macAddress: z
    .string()
    .regex(/^[0-9A-Fa-f]{2}(?:[-:]?[0-9A-Fa-f]{2}){5}$/, {
      message: 'expected a MAC address (12 hex digits, optionally separated by - or :)',
    })
    .optional()
    .meta({ description: 'Primary NIC MAC; default derived from the vmId' }),
} as const;

export const VmSpecSchema = z.strictObject({
  name: z.string().meta({ description: "1-80 letters, digits, '_', '.' or '-'" }),
  tenant: z.string().optional().meta({ description: 'FC tenant; defaults to the VM name (a standalone VM)' }),
  tenantKind: z.enum(TENANT_KINDS).optional(),
  faultDomain: z.int().min(0).optional(),
  updateDomain: z.int().min(0).optional(),
  host: z.string().optional().meta({ description: 'Physical host; defaults to host-<name>' }),
  address: z
    .string()
    .refine((s) => isIP(s) !== 0, { message: 'expected an IPv4 or IPv6 address' })
    .optional()
    .meta({ description: 'Source IP whose IMDS requests are this VM' }),
  priority: z.enum(PRIORITIES).optional(),
  evictionPolicy: z
    .enum(EVICTION_POLICIES)
    .optional()
    .meta({ description: 'Spot VMs only: what an eviction (Preempt) does to the VM; Deallocate when absent' }),
  powerState: z
    .enum(POWER_STATES)
    .optional()
    .meta({ description: 'deallocated: a Spot VM an eviction stopped; it gets no events until started (POST /v1/vms/{name}/start)' }),
  terminateNotificationMinutes: z
    .int()
    .min(TERMINATE_NOTICE_MINUTES.min)
    .max(TERMINATE_NOTICE_MINUTES.max)
    .optional()
    .meta({ description: 'Scale-set terminate notification; absent means off' }),
  osImageNotification: z.boolean().optional(),
  gpu: z.boolean().optional(),
  faultDomainCount: z.int().min(1).max(20).optional().meta({ description: "The tenant's fault domain count" }),
  updateDomainCount: z.int().min(1).max(20).optional().meta({ description: "The tenant's update domain count" }),
  scaleSet: z
    .string()
    .optional()
    .meta({ description: "Scale-set VMs: the scale set's name when the tenant is one of its placement groups; defaults to the tenant" }),
  vmId: z.string().min(1).optional().meta({ description: 'Keep a known vmId, e.g. when re-adding a VM' }),
  ...InstanceSettingsSchema,
});
