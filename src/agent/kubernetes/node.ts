// This node: is it the VM IMDS describes, and Forewarn's cordon and taint on it. The agent removes only
// what it added (SPEC §4): a cordon is Forewarn's only when the node's annotation lists the event, and
// it stays when someone else cordoned the node too (managedFields, AKS node auto-drain's taint); a
// taint is removed only when the node's taint annotation says Forewarn placed it.
import { KubeError, type JsonPatchOp, type KubeApi, type KubeNode, type Taint } from './api.js';

/** Event ids (lowercase, comma-separated) Forewarn cordoned the node for; absent: not Forewarn's cordon. */
export const CORDON_ANNOTATION = 'forewarn.io/cordoned-for';
/**
 * Event ids Forewarn placed its taint for (set in the same patch as the taint, so a crash between the
 * patch and the journal write loses nothing); absent: a taint with Forewarn's key is someone else's.
 */
export const TAINT_ANNOTATION = 'forewarn.io/tainted-for';
/**
 * The field manager of every patch the agent sends. The API server records it in the node's
 * metadata.managedFields, so a later write of spec.unschedulable by anyone else shows there.
 */
export const FIELD_MANAGER = 'forewarn-agent';
/**
 * AKS node auto-drain's taint ("may receive a taint with remediator.kubernetes.azure.com/unschedulable",
 * learn.microsoft.com/azure/aks/node-auto-drain), and the name an earlier version of that page gave.
 */
export const AKS_TAINT_KEYS: readonly string[] = [
  'remediator.kubernetes.azure.com/unschedulable',
  'remediator.aks.microsoft.com/unschedulable',
];
/** The node condition AKS sets when its VM has a scheduled event (learn.microsoft.com/azure/aks/node-auto-drain-evict-on-freeze). */
export const AKS_CONDITION = 'VMEventScheduled';
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

function idList(node: KubeNode, annotation: string): string[] {
  const value = node.annotations[annotation];
  return value === undefined || value === '' ? [] : value.split(',').filter((id) => id !== '');
}

export function cordonIds(node: KubeNode): string[] {
  return idList(node, CORDON_ANNOTATION);
}

/** Event ids Forewarn's taint on the node is for; empty: Forewarn placed no taint. */
export function taintIds(node: KubeNode): string[] {
  return idList(node, TAINT_ANNOTATION);
}

/**
 * Who else holds the node cordoned, as the API shows it: every field manager other than the agent's
 * that owns spec.unschedulable in managedFields (kubectl's, a controller's, AKS's), and AKS node
 * auto-drain's taint. Empty when nothing says so, which includes managedFields absent or stripped.
 */
export function otherCordons(node: KubeNode): string[] {
  const managers = (node.unschedulableManagers ?? []).filter((m) => m !== FIELD_MANAGER).map((m) => `field manager ${m}`);
  const aks = node.taints.filter((t) => AKS_TAINT_KEYS.includes(t.key)).map((t) => `AKS node auto-drain (taint ${t.key})`);
  return [...new Set([...managers, ...aks])];
}

/** AKS node auto-drain is at work on the node: its VMEventScheduled condition is True, or its taint is there. */
export function aksAtWork(node: KubeNode): boolean {
  return (node.aksEvent ?? null) !== null || node.taints.some((t) => AKS_TAINT_KEYS.includes(t.key));
}

/** A taint spec `key=value:Effect`, `{type}` replaced by the event type. */
export function parseTaint(spec: string, eventType: string): Taint {
  const match = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(spec.replace(/\{type\}/g, eventType));
  if (!match) throw new Error(`taint ${JSON.stringify(spec)} is not key=value:Effect`);
  return { key: match[1]!, ...(match[2] !== undefined ? { value: match[2] } : {}), effect: match[3]! };
}

export type CordonOutcome = 'cordoned' | 'already-ours' | 'operator';

export interface CordonResult {
  outcome: CordonOutcome;
  /** The event is in the taint annotation: Forewarn's taint is on the node for it. */
  tainted: boolean;
  /** A taint with the configured key was already there, not Forewarn's: left as it is. */
  taintTaken: boolean;
  /** AKS node auto-drain is at work on the node (aksAtWork). */
  aks: boolean;
}

/**
 * Cordons the node for the event (and taints it), or joins Forewarn's cordon already there. A node
 * that is unschedulable without Forewarn's annotation was cordoned by someone else: left as it is.
 * The taint is placed only when no taint with its key is there; joined when it is Forewarn's.
 */
export async function cordon(api: KubeApi, nodeName: string, eventId: string, taint: Taint | null): Promise<CordonResult> {
  const id = eventId.toLowerCase();
  return patchRetrying<CordonResult>(api, nodeName, (node) => {
    const ids = cordonIds(node);
    const tainted = taintIds(node);
    const aks = aksAtWork(node);
    const present = taint !== null && node.taints.some((t) => t.key === taint.key);
    const taintTaken = present && tainted.length === 0;
    if (ids.includes(id)) return { result: { outcome: 'already-ours', tainted: tainted.includes(id), taintTaken, aks } };
    if (node.unschedulable && ids.length === 0) return { result: { outcome: 'operator', tainted: false, taintTaken, aks } };
    const annotations: Record<string, string> = { ...node.annotations, [CORDON_ANNOTATION]: [...ids, id].join(',') };
    const ops: JsonPatchOp[] = [];
    if (taint !== null && !taintTaken) {
      if (!present) ops.push({ op: 'add', path: '/spec/taints', value: [...node.taints, taint] });
      annotations[TAINT_ANNOTATION] = [...tainted.filter((x) => x !== id), id].join(',');
    }
    ops.unshift({ op: 'add', path: '/metadata/annotations', value: annotations }, { op: 'add', path: '/spec/unschedulable', value: true });
    return { result: { outcome: 'cordoned', tainted: taint !== null && !taintTaken, taintTaken, aks }, ops };
  });
}

/** `kept`: Forewarn's part is off, but someone else holds the node cordoned too (`heldBy`), so it stays. */
export type UncordonOutcome = 'uncordoned' | 'others-remain' | 'not-ours' | 'kept';

export interface UncordonResult {
  outcome: UncordonOutcome;
  /** Who else holds the cordon (otherCordons), when it stays for them. */
  heldBy: string[];
  /** Forewarn's taint came off the node with this event. */
  taintRemoved: boolean;
}

/**
 * Takes the event off Forewarn's cordon and taint. The last event off uncordons the node, unless
 * someone else cordoned it too (otherCordons), and removes the taint if Forewarn placed it.
 */
export async function uncordon(api: KubeApi, nodeName: string, eventId: string, taintKey: string | null): Promise<UncordonResult> {
  const id = eventId.toLowerCase();
  return patchRetrying<UncordonResult>(api, nodeName, (node) => {
    const ids = cordonIds(node);
    const tainted = taintIds(node);
    if (!ids.includes(id) && !tainted.includes(id)) return { result: { outcome: 'not-ours', heldBy: [], taintRemoved: false } };
    const rest = ids.filter((x) => x !== id);
    const restTainted = tainted.filter((x) => x !== id);
    const annotations = { ...node.annotations };
    if (rest.length > 0) annotations[CORDON_ANNOTATION] = rest.join(',');
    else delete annotations[CORDON_ANNOTATION];
    if (restTainted.length > 0) annotations[TAINT_ANNOTATION] = restTainted.join(',');
    else delete annotations[TAINT_ANNOTATION];
    const ops: JsonPatchOp[] = [{ op: 'add', path: '/metadata/annotations', value: annotations }];
    const taintRemoved =
      tainted.includes(id) && restTainted.length === 0 && taintKey !== null && node.taints.some((t) => t.key === taintKey);
    if (taintRemoved) ops.push({ op: 'add', path: '/spec/taints', value: node.taints.filter((t) => t.key !== taintKey) });
    if (!ids.includes(id)) return { result: { outcome: 'not-ours', heldBy: [], taintRemoved }, ops };
    if (rest.length > 0) return { result: { outcome: 'others-remain', heldBy: [], taintRemoved }, ops };
    const heldBy = node.unschedulable ? otherCordons(node) : [];
    if (heldBy.length > 0) return { result: { outcome: 'kept', heldBy, taintRemoved }, ops };
    ops.push({ op: 'add', path: '/spec/unschedulable', value: false });
    return { result: { outcome: 'uncordoned', heldBy: [], taintRemoved }, ops };
  });
}

/** Reads the node, decides, and patches on condition that nothing changed since the read; again if it did. */
export async function patchRetrying<T>(
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
