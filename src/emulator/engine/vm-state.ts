// What a VM is going through, as the dashboard and GET /v1/fleet show it.
import type { EventType } from '../../protocol/types.js';

/**
 * [choice] Azure reports no VM state through Scheduled Events; the emulator derives one from
 * the VM's Started event, so a tester sees what the VM would be going through right now.
 */
export const VM_STATES = ['running', 'frozen', 'rebooting', 'redeploying', 'deleting', 'evicting', 'deallocated', 'deleted'] as const;
export type VmState = (typeof VM_STATES)[number];

/** The state of a VM during the impact of a Started event of this type; after the impact it runs again. */
export const STATE_WHILE_STARTED: Readonly<Record<EventType, VmState>> = {
  Freeze: 'frozen',
  Reboot: 'rebooting',
  Redeploy: 'redeploying',
  Terminate: 'deleting',
  Preempt: 'evicting',
};

/** A VM that a delete took out of the fleet: kept so a view can still show where it was. */
export interface DeletedVm {
  name: string;
  tenant: string;
  host: string;
  faultDomain: number;
  updateDomain: number;
  deletedAt: number;
  /** The delete operation that removed it. */
  operation: string;
}
