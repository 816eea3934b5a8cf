// The barrier: one approval starts an event on every VM its Resources name, so an event naming several
// nodes that run the agent is approved only once each of them is prepared (or at the deadline). The
// nodes themselves hold the state, so no agent has to stay up for it: each agent labels its node
// (and names its VM in an annotation) at start, marks it once prepared for an event, and takes the
// mark off at recovery; any of them approves once every named node carries the mark.
import { affects, type ScheduledEvent } from '../../client/index.js';
import type { KubeApi, KubeNode, ListedNode } from './api.js';
import { patchRetrying } from './node.js';
import { sameVm } from '../coordination/barrier.js';

/** [choice] A constant label value selects the nodes that run the agent: a VM name need not be a valid label value. */
export const AGENT_LABEL = 'forewarn.io/agent';
export const AGENT_LABEL_VALUE = 'true';
export const AGENT_SELECTOR = `${AGENT_LABEL}=${AGENT_LABEL_VALUE}`;
/** This node's VM, as IMDS names it: what an event's Resources are compared with. */
export const VM_NAME_ANNOTATION = 'forewarn.io/vm-name';
/** Event ids (lowercase, comma-separated) the node is prepared for. */
export const PREPARED_ANNOTATION = 'forewarn.io/prepared-for';

/** JSON Pointer (RFC 6901) escaping of one key: `forewarn.io/agent` → `forewarn.io~1agent`. */
function pointerKey(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function preparedIds(node: Pick<KubeNode, 'annotations'>): string[] {
  const value = node.annotations[PREPARED_ANNOTATION];
  return value === undefined || value === '' ? [] : value.split(',').filter((id) => id !== '');
}

/**
 * Labels this node as one that runs the agent and names its VM, unless it already says so. The
 * label goes in with its own key (nodes always carry labels: the kubelet sets kubernetes.io/hostname),
 * the annotation in the node's annotations, both on condition that the node did not change since read.
 */
export async function register(api: KubeApi, nodeName: string, vmName: string): Promise<'registered' | 'already'> {
  const listed = await api.listNodes(AGENT_SELECTOR);
  if (listed.some((n) => n.name === nodeName && n.annotations[VM_NAME_ANNOTATION] === vmName)) return 'already';
  return patchRetrying(api, nodeName, (node) => ({
    result: 'registered',
    ops: [
      { op: 'add', path: '/metadata/annotations', value: { ...node.annotations, [VM_NAME_ANNOTATION]: vmName } },
      { op: 'add', path: `/metadata/labels/${pointerKey(AGENT_LABEL)}`, value: AGENT_LABEL_VALUE },
    ],
  }));
}

/** Adds the event to the node's prepared mark. */
export async function markPrepared(api: KubeApi, nodeName: string, eventId: string): Promise<'marked' | 'already'> {
  const id = eventId.toLowerCase();
  return patchRetrying(api, nodeName, (node) => {
    const ids = preparedIds(node);
    if (ids.includes(id)) return { result: 'already' };
    return {
      result: 'marked',
      ops: [{ op: 'add', path: '/metadata/annotations', value: { ...node.annotations, [PREPARED_ANNOTATION]: [...ids, id].join(',') } }],
    };
  });
}

/** Takes the event off the node's prepared mark; the last one off removes the annotation. */
export async function unmarkPrepared(api: KubeApi, nodeName: string, eventId: string): Promise<'unmarked' | 'not-marked'> {
  const id = eventId.toLowerCase();
  return patchRetrying(api, nodeName, (node) => {
    const ids = preparedIds(node);
    if (!ids.includes(id)) return { result: 'not-marked' };
    const rest = ids.filter((x) => x !== id);
    const annotations = { ...node.annotations };
    if (rest.length > 0) annotations[PREPARED_ANNOTATION] = rest.join(',');
    else delete annotations[PREPARED_ANNOTATION];
    return { result: 'unmarked', ops: [{ op: 'add', path: '/metadata/annotations', value: annotations }] };
  });
}

/** One VM the event names that runs the agent, with its node(s). */
export interface NamedVm {
  vm: string;
  nodes: string[];
  prepared: boolean;
}

export interface BarrierView {
  /** Every VM the event names whose node runs the agent, this one included. */
  named: NamedVm[];
  /** Those not prepared yet: what the barrier waits for. */
  waiting: NamedVm[];
}

/**
 * Which VMs of the event run the agent (a labelled node names them), and which of them are not yet
 * prepared for it. Names compare as `affects` compares them (case, the 2017-03-01 `_`, scale-set
 * forms). `self` is prepared whatever its node shows: the caller asks only once it is. Two nodes
 * claiming one VM (a stale node object) count as prepared when either is.
 */
export function barrierView(event: ScheduledEvent, nodes: readonly ListedNode[], self: string): BarrierView {
  const id = event.id.toLowerCase();
  const byVm = new Map<string, NamedVm>();
  for (const node of nodes) {
    if (node.labels[AGENT_LABEL] !== AGENT_LABEL_VALUE) continue;
    const vm = node.annotations[VM_NAME_ANNOTATION];
    if (vm === undefined || vm === '' || !affects(event, vm)) continue;
    const key = vm.toLowerCase();
    const entry = byVm.get(key) ?? { vm, nodes: [], prepared: false };
    entry.nodes.push(node.name);
    entry.prepared ||= preparedIds(node).includes(id) || sameVm(vm, self);
    byVm.set(key, entry);
  }
  const named = [...byVm.values()];
  return { named, waiting: named.filter((n) => !n.prepared) };
}
