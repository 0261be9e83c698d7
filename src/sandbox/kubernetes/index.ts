export { checkCluster, isClusterTarget, loadCluster, parseClusterTarget, type Cluster, type ClusterCheck, type ClusterTarget, type RateLimit } from './cluster.js';
export { KubernetesRuntime, KubernetesSandbox, type KubernetesRuntimeOptions } from './kubernetes-sandbox.js';
export { cleanupPods, type PodCleanupOptions } from './pod-cleanup.js';
