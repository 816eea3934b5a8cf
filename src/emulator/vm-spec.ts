// The one schema of a VM's declaration, shared by the control API, fleet files and the state file.
import { isIP } from 'node:net';
import { z } from 'zod';
import { PRIORITIES, TENANT_KINDS } from './engine/fleet.js';
import { TERMINATE_NOTICE_MINUTES } from './engine/timing.js';

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
});
