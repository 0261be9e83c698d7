/**
 * Helpers for Kubernetes-backed tests (the test cluster of ../shared/k8s, or any cluster
 * KUBECONFIG names).
 *
 * Policy, as for Docker: under `CI=true` a missing cluster is a failure (the suite's
 * `beforeAll` throws why); elsewhere the suites are skipped with a printed reason. A test run
 * that must not use a cluster says so explicitly, CI or not: INTERCODE_TEST_NO_KUBERNETES set
 * to why (.ci/gvisor-tests does); its Kubernetes cases are then skipped with that reason. Pods
 * carry the file's test-run label (see startTestRun in ./docker.ts); `afterAll` deletes
 * them by that label and checks that none is left.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { checkCluster, loadCluster, type Cluster } from '../../src/sandbox/kubernetes/cluster.js';
import { KubernetesRuntime } from '../../src/sandbox/kubernetes/kubernetes-sandbox.js';
import { cleanupPods } from '../../src/sandbox/kubernetes/pod-cleanup.js';
import { TEST_LABEL } from '../../src/sandbox/docker/labels.js';
import { IN_CI } from './docker.js';

export type ClusterProbe = { ok: true; cluster: Cluster } | { ok: false; reason: string };

/** Why this test run leaves Kubernetes out (INTERCODE_TEST_NO_KUBERNETES), when it does. */
export const NO_KUBERNETES = process.env.INTERCODE_TEST_NO_KUBERNETES || undefined;

/** Whether a cluster answers and lets us create pods. Never throws. */
export async function probeCluster(): Promise<ClusterProbe> {
  if (NO_KUBERNETES) return { ok: false, reason: `left out by INTERCODE_TEST_NO_KUBERNETES: ${NO_KUBERNETES}` };
  const configured = process.env.KUBECONFIG ? process.env.KUBECONFIG.split(':').some((f) => existsSync(f)) : existsSync(join(homedir(), '.kube', 'config'));
  if (!configured && !process.env.KUBERNETES_SERVICE_HOST) return { ok: false, reason: 'no KUBECONFIG (start one with ../shared/k8s/up.sh and export KUBECONFIG)' };
  const check = await checkCluster();
  if (!check.canCreatePods) return { ok: false, reason: check.problem ?? 'cannot create pods' };
  // A cluster none of whose nodes can take a pod fails every test at once, not each after its pods' time limit.
  if (check.nodesAvailable === 0) return { ok: false, reason: `no node can run a pod: ${check.nodesUnavailable?.length ? check.nodesUnavailable.join('; ') : 'no node is listed'}` };
  return { ok: true, cluster: await loadCluster() };
}

/** Skip only outside CI, or where the run leaves Kubernetes out explicitly ({@link NO_KUBERNETES}), printing why. */
export function skipWithoutCluster(probe: ClusterProbe, suite: string): boolean {
  if (probe.ok || (IN_CI && !NO_KUBERNETES)) return false;
  console.warn(`skipping ${suite} on Kubernetes: ${probe.reason}`);
  return true;
}

/** A runtime on the cluster; under CI without a cluster, throws why. */
export function requireCluster(probe: ClusterProbe): KubernetesRuntime {
  if (!probe.ok) throw new Error(`Kubernetes-backed test needs a cluster: ${probe.reason}`);
  return new KubernetesRuntime(probe.cluster);
}

/** Deletes this test run's pods by label and waits (up to 60 s) until none is listed. */
export async function removeTestPods(testRun: string): Promise<void> {
  const cluster: Cluster = await loadCluster();
  await cleanupPods(cluster, { testRun });
  let left: string[] = [];
  for (let i = 0; i < 120; i++) {
    const list = await cluster.core.listNamespacedPod({ namespace: cluster.namespace, labelSelector: `${TEST_LABEL}=${testRun}` });
    left = list.items.map((p) => p.metadata!.name!);
    if (left.length === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  expect(left).toEqual([]);
}

/** The cluster probe, with an `afterAll` that removes the file's pods (when there is a cluster). */
export async function kubernetesTestFile(testRun: string): Promise<ClusterProbe> {
  const probe = await probeCluster();
  afterAll(async () => {
    if (probe.ok) await removeTestPods(testRun);
  }, 90_000);
  return probe;
}
