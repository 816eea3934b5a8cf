// The agent's own Kubernetes client, pointed at a fake API server.
import { KubeConfig } from '@kubernetes/client-node';
import { ClientNodeApi } from '../../../src/agent/kubernetes/client-node-api.js';
import type { FakeKube } from './server.js';

export function agentApi(kube: FakeKube): ClientNodeApi {
  const kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfigYaml());
  return new ClientNodeApi(kc);
}
