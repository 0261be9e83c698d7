import type { HealthCheck } from '../health.js';
import type { ClusterCheck } from './cluster.js';

/**
 * The Kubernetes cluster `--engine k8s` would use. `required` (the user named the cluster)
 * makes a problem a failure; a cluster found only through KUBECONFIG makes it a warning.
 */
export function clusterCheck(found: ClusterCheck, required: boolean): HealthCheck {
  const where = `namespace ${found.namespace || '?'} on ${found.server || 'no cluster'}`;
  if (found.reachable && found.canCreatePods && found.nodesAvailable === 0) {
    return {
      id: 'cluster',
      status: required ? 'fail' : 'warn',
      summary: `Kubernetes ${found.version} (${where}): no node can run a pod (${found.nodesUnavailable?.length ? found.nodesUnavailable.join('; ') : 'no node is listed'})`,
      fix: "a node that is not Ready: see its kubelet's log and `kubectl describe node`; a cordoned or tainted one: `kubectl uncordon` or remove the taint",
    };
  }
  if (found.reachable && found.canCreatePods) {
    const some = found.nodesUnavailable?.length ? `; cannot run pods: ${found.nodesUnavailable.join('; ')}` : '';
    return { id: 'cluster', status: 'ok', summary: `Kubernetes ${found.version}: pods may be created in ${where}${some}` };
  }
  return {
    id: 'cluster',
    status: required ? 'fail' : 'warn',
    summary: `Kubernetes (${where}): ${found.problem ?? 'not usable'}`,
    fix: found.reachable
      ? 'grant this identity create/get/list/watch/delete on pods and pods/exec in that namespace (docs/kubernetes.md)'
      : 'check KUBECONFIG and the context (kubectl --context CONTEXT version), or run without --engine k8s',
  };
}

/**
 * What bounds a fork bomb in a pod: Kubernetes has no per-pod pids limit of its own, only
 * each node's kubelet `podPidsLimit`. Warns for nodes without one, or whose configuration
 * could not be read.
 */
export function clusterPidsCheck(found: ClusterCheck): HealthCheck {
  const limits = found.podPidsLimits;
  const fix = "set the kubelet's podPidsLimit (e.g. 1024) on every node that runs sandboxes (docs/kubernetes.md)";
  if (!limits) return { id: 'cluster-pids', status: 'warn', summary: `pod pids limits unknown: ${found.nodesProblem ?? 'nodes not read'}`, fix: `${fix}; doctor reads it with get on nodes and nodes/proxy` };
  const unlimited = Object.entries(limits).filter(([, limit]) => limit !== null && limit <= 0).map(([node]) => node);
  const unread = Object.entries(limits).filter(([, limit]) => limit === null).map(([node]) => node);
  const listed = Object.entries(limits).map(([node, limit]) => `${node} ${limit === null ? '?' : limit <= 0 ? 'none' : limit}`).join(', ');
  if (unlimited.length > 0) {
    return { id: 'cluster-pids', status: 'warn', summary: `no pod pids limit on ${unlimited.join(', ')}: a fork bomb in a sandbox is bounded only by the node (podPidsLimit per node: ${listed})`, fix };
  }
  if (unread.length > 0) return { id: 'cluster-pids', status: 'warn', summary: `pod pids limits: ${listed} (${found.nodesProblem ?? 'some unread'})`, fix };
  return { id: 'cluster-pids', status: 'ok', summary: `every pod's processes are limited (podPidsLimit per node: ${listed})` };
}
