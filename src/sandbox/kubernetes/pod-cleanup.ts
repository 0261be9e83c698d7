import { OWNER_LABEL, OWNER_VALUE, RUN_LABEL, TEST_LABEL } from '../docker/labels.js';
import { processAlive } from '../lifecycle/process-alive.js';
import { apiStatus, type Cluster } from './cluster.js';
import { pidOnThisHost } from './pod-spec.js';

export interface PodCleanupOptions {
  /** Only the pods of one test run (value of the test label). */
  testRun?: string;
  /** Only pods of runs on this host whose process is gone (crash reaping). Default: all of ours. */
  deadRunsOnly?: boolean;
}

/**
 * Deletes the pods intercode made in the cluster's namespace, found by label (all of
 * ours, one test run's, or those of crashed runs on this host).
 * @returns how many pods were deleted (one already gone counts).
 * @throws ClusterUnreachableError when the apiserver does not answer.
 */
export async function cleanupPods(cluster: Cluster, options: PodCleanupOptions = {}): Promise<number> {
  const labelSelector = options.testRun ? `${TEST_LABEL}=${options.testRun}` : `${OWNER_LABEL}=${OWNER_VALUE}`;
  const list = await cluster.request('listing pods', () => cluster.core.listNamespacedPod({ namespace: cluster.namespace, labelSelector }));
  const doomed = list.items.filter((pod) => {
    if (!options.deadRunsOnly) return true;
    const pid = pidOnThisHost(pod.metadata?.labels?.[RUN_LABEL]);
    return pid !== undefined && !processAlive(pid);
  });
  const deleted = await Promise.all(
    doomed.map((pod) =>
      cluster
        .request('deleting a pod', () => cluster.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: cluster.namespace, gracePeriodSeconds: 0 }))
        .then(
          () => true,
          (error: unknown) => apiStatus(error) === 404,
        ),
    ),
  );
  return deleted.filter(Boolean).length;
}
