import { ConfigError } from '../../errors.js';
import { ensureImage } from '../../images/image-builder.js';
import { connectEngine } from '../docker/engine.js';
import { checkCluster, isClusterTarget, loadCluster, parseClusterTarget } from '../kubernetes/cluster.js';
import { clusterCheck, clusterPidsCheck } from '../kubernetes/cluster-checks.js';
import { KubernetesRuntime, type KubernetesRuntimeOptions } from '../kubernetes/kubernetes-sandbox.js';
import type { SandboxSettings } from '../types.js';
import { cleanupPods } from '../kubernetes/pod-cleanup.js';
import type Docker from 'dockerode';
import type { SandboxBackend } from './backend.js';

/** The pods' RuntimeClass for `settings.ociRuntime`: `runc`, or none, is the node's default runtime (no class). */
export function podRuntime(settings: SandboxSettings): KubernetesRuntimeOptions {
  const { ociRuntime } = settings;
  return ociRuntime && ociRuntime !== 'runc' ? { runtimeClassName: ociRuntime } : {};
}

/**
 * Sandboxes as pods of a Kubernetes cluster (`--engine k8s[:CONTEXT[/NAMESPACE]]`). Pods run
 * images of the nodes' engines (imagePullPolicy Never): built on the local engine, which is
 * the node's on a one-node cluster (see docs/kubernetes.md). `--runtime` names a
 * RuntimeClass of the cluster; `runc` is the node's default. Pods have no disk limit.
 */
export const kubernetesBackend: SandboxBackend = {
  name: 'kubernetes',
  combinable: false,
  matches: isClusterTarget,
  // No weight: the cluster schedules.
  parseTarget: (value, flag) => (parseClusterTarget(value, flag), { endpoint: value, weight: 1 }),

  async open(targets, options) {
    if (options.sandboxes.kind === 'episode-roots') throw new ConfigError('--sandbox-kind', 'episode-roots run on a local Docker engine, not on Kubernetes (pods keep one sandbox each: docs/engines.md)');
    const runtime = new KubernetesRuntime(await loadCluster(parseClusterTarget(targets[0]!.endpoint)), podRuntime(options.sandboxes));
    let docker: Promise<Docker> | undefined;
    return {
      runtime,
      ensureImage: async (recipe, log) => ensureImage(await (docker ??= connectEngine()), recipe, log),
      imageId: async (tag) => (await (docker ??= connectEngine())).getImage(tag).inspect().then((image) => image.Id, () => undefined),
      status: () => undefined,
      close: () => runtime.close(),
    };
  },

  async cleanup(endpoint, request) {
    // Pods by label in the target's namespace; images live on the nodes, not removed here.
    const cluster = await loadCluster(parseClusterTarget(endpoint));
    // Pods are never kept warm: a warm-only cleanup has nothing to remove.
    const pods = request.warmOnly ? 0 : await cleanupPods(cluster, { deadRunsOnly: request.deadRunsOnly, ...(request.testRun ? { testRun: request.testRun } : {}) });
    return { containers: pods, images: 0, summary: `${endpoint} (namespace ${cluster.namespace}): removed ${pods} pod(s)` };
  },

  async reapCrashedRuns(endpoint, options = {}) {
    const cluster = await loadCluster(parseClusterTarget(endpoint), { retryForMs: 0 }).catch(() => undefined);
    return cluster ? cleanupPods(cluster, { deadRunsOnly: true, ...(options.testRun ? { testRun: options.testRun } : {}) }).catch(() => 0) : 0;
  },

  /** The cluster itself, then its nodes' pod pids limits when pods may be created. */
  async doctorChecks(endpoint, required) {
    const found = await checkCluster(parseClusterTarget(endpoint));
    const cluster = clusterCheck(found, required);
    return found.canCreatePods ? [cluster, clusterPidsCheck(found)] : [cluster];
  },

  // A cluster found through KUBECONFIG is checked (a problem only warns).
  impliedDoctorTarget: (env) => (env.KUBECONFIG ? 'k8s' : undefined),
};
