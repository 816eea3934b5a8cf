// This node: is it the VM IMDS describes, and Forewarn's cordon on it. A cordon is Forewarn's only
// when the node's annotation lists the event, so a node an operator cordoned is never uncordoned.
import { KubeError, type JsonPatchOp, type KubeApi, type KubeNode, type Taint } from './api.js';

/** Event ids (lowercase, comma-separated) Forewarn cordoned the node for; absent: not Forewarn's cordon. */
export const CORDON_ANNOTATION = 'forewarn.io/cordoned-for';
/** How many times a patch is tried when the node changes under it. */
const PATCH_ATTEMPTS = 5;

/** The node is not this VM, or cannot be shown to be: waiting will not change it. */
export class NodeIdentityError extends Error {
  override name = 'NodeIdentityError';
}

/**
 * Fails unless the node's spec.providerID names this VM: a wrong NODE_NAME would drain another
 * machine. `resourceId` is IMDS compute's; without it, the VM name ends the provider id.
 */
export function checkProviderId(node: KubeNode, vm: { name: string; resourceId: string | null }): void {
  const where = `node ${node.name} (NODE_NAME or kubernetes.nodeName)`;
  if (node.providerID === null || node.providerID === '') {
    throw new NodeIdentityError(
      `${where} has no spec.providerID, so Forewarn cannot check that it is this VM (${vm.name}); refusing to cordon or drain it`,
    );
  }
  const provider = node.providerID.replace(/^azure:\/\//i, '').toLowerCase();
  const same =
    vm.resourceId !== null && vm.resourceId !== ''
      ? provider === vm.resourceId.toLowerCase()
      : provider.endsWith(`/virtualmachines/${vm.name.toLowerCase()}`);
  if (!same) {
    throw new NodeIdentityError(
      `${where} is not this VM: its spec.providerID is ${node.providerID}, but IMDS describes ${vm.resourceId || vm.name}; check NODE_NAME`,
    );
  }
}

export function cordonIds(node: KubeNode): string[] {
  const value = node.annotations[CORDON_ANNOTATION];
  return value === undefined || value === '' ? [] : value.split(',').filter((id) => id !== '');
}

/** A taint spec `key=value:Effect`, `{type}` replaced by the event type. */
export function parseTaint(spec: string, eventType: string): Taint {
  const match = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(spec.replace(/\{type\}/g, eventType));
  if (!match) throw new Error(`taint ${JSON.stringify(spec)} is not key=value:Effect`);
  return { key: match[1]!, ...(match[2] !== undefined ? { value: match[2] } : {}), effect: match[3]! };
}

export type CordonOutcome = 'cordoned' | 'already-ours' | 'operator';

/**
 * Cordons the node for the event (and taints it), or joins Forewarn's cordon already there. A node
 * that is unschedulable without Forewarn's annotation was cordoned by someone else: left as it is.
 */
export async function cordon(api: KubeApi, nodeName: string, eventId: string, taint: Taint | null): Promise<CordonOutcome> {
  const id = eventId.toLowerCase();
  return patchRetrying(api, nodeName, (node) => {
    const ids = cordonIds(node);
    if (ids.includes(id)) return { result: 'already-ours' };
    if (node.unschedulable && ids.length === 0) return { result: 'operator' };
    const ops: JsonPatchOp[] = [
      { op: 'add', path: '/metadata/annotations', value: { ...node.annotations, [CORDON_ANNOTATION]: [...ids, id].join(',') } },
      { op: 'add', path: '/spec/unschedulable', value: true },
    ];
    if (taint !== null && !node.taints.some((t) => t.key === taint.key)) {
      ops.push({ op: 'add', path: '/spec/taints', value: [...node.taints, taint] });
    }
    return { result: 'cordoned', ops };
  });
}

export type UncordonOutcome = 'uncordoned' | 'others-remain' | 'not-ours';

/** Takes the event off Forewarn's cordon; the last one off uncordons the node and removes the taint. */
export async function uncordon(api: KubeApi, nodeName: string, eventId: string, taintKey: string | null): Promise<UncordonOutcome> {
  const id = eventId.toLowerCase();
  return patchRetrying(api, nodeName, (node) => {
    const ids = cordonIds(node);
    if (!ids.includes(id)) return { result: 'not-ours' };
    const rest = ids.filter((x) => x !== id);
    const annotations = { ...node.annotations };
    if (rest.length > 0) {
      annotations[CORDON_ANNOTATION] = rest.join(',');
      return { result: 'others-remain', ops: [{ op: 'add', path: '/metadata/annotations', value: annotations }] };
    }
    delete annotations[CORDON_ANNOTATION];
    const ops: JsonPatchOp[] = [
      { op: 'add', path: '/metadata/annotations', value: annotations },
      { op: 'add', path: '/spec/unschedulable', value: false },
    ];
    if (taintKey !== null && node.taints.some((t) => t.key === taintKey)) {
      ops.push({ op: 'add', path: '/spec/taints', value: node.taints.filter((t) => t.key !== taintKey) });
    }
    return { result: 'uncordoned', ops };
  });
}

/** Reads the node, decides, and patches on condition that nothing changed since the read; again if it did. */
async function patchRetrying<T>(
  api: KubeApi,
  nodeName: string,
  decide: (node: KubeNode) => { result: T; ops?: JsonPatchOp[] },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const node = await api.getNode(nodeName);
    const { result, ops } = decide(node);
    if (ops === undefined) return result;
    try {
      await api.patchNode(nodeName, [{ op: 'test', path: '/metadata/resourceVersion', value: node.resourceVersion }, ...ops]);
      return result;
    } catch (err) {
      const changed = err instanceof KubeError && (err.status === 409 || err.status === 422);
      if (!changed || attempt >= PATCH_ATTEMPTS) throw err;
    }
  }
}
