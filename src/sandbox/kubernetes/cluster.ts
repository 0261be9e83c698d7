import type * as KubernetesClient from '@kubernetes/client-node';
import type { CoreV1Api, KubeConfig, V1Node } from '@kubernetes/client-node';
import { ClusterUnreachableError, ConfigError } from '../../errors.js';

/** Which cluster and namespace `--engine k8s[:CONTEXT[/NAMESPACE]]` names. */
export interface ClusterTarget {
  /** kubeconfig context; undefined: the kubeconfig's current one (or in-cluster config). */
  context?: string;
  /** Namespace pods go in; undefined: the context's namespace, else `default`. */
  namespace?: string;
}

/** True for `k8s` and `k8s:…` engine values. */
export function isClusterTarget(value: string): boolean {
  return value === 'k8s' || value.startsWith('k8s:');
}

/**
 * Parses `k8s`, `k8s:CONTEXT`, `k8s:CONTEXT/NAMESPACE` or `k8s:/NAMESPACE`.
 * @throws ConfigError naming `flag` for anything else.
 */
export function parseClusterTarget(value: string, flag = '--engine'): ClusterTarget {
  if (value === 'k8s') return {};
  const match = /^k8s:([^/]*)(?:\/([^/]*))?$/.exec(value);
  const namespace = match?.[2];
  if (!match || (namespace !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace))) {
    throw new ConfigError(flag, `must be k8s, k8s:CONTEXT or k8s:CONTEXT/NAMESPACE (a DNS label), got "${value}"`);
  }
  return { ...(match[1] ? { context: match[1] } : {}), ...(namespace ? { namespace } : {}) };
}

/** An apiserver connection: the kubeconfig, the namespace, a rate-limited client. */
export interface Cluster {
  readonly config: KubeConfig;
  readonly namespace: string;
  readonly core: CoreV1Api;
  /** The apiserver's address, for messages. */
  readonly server: string;
  /** Runs one API request under the client-side rate limit, retrying 429/5xx and refused connections with backoff. */
  request<T>(what: string, call: () => Promise<T>, retryForMs?: number): Promise<T>;
}

let library: Promise<typeof KubernetesClient> | undefined;

/**
 * The Kubernetes client library, imported on first use: it takes ~0.45 s and ~40 MB of heap
 * to load (measured here), which commands that use no cluster do not pay.
 */
export function kubernetesLibrary(): Promise<typeof KubernetesClient> {
  return (library ??= import('@kubernetes/client-node'));
}

/**
 * Loads `target`'s configuration: KUBECONFIG (or ~/.kube/config), else the in-cluster
 * service account when the harness runs in a pod.
 * @throws ConfigError when the context does not exist or no configuration is found.
 */
export async function loadCluster(target: ClusterTarget = {}, limits: Partial<RateLimit> = {}): Promise<Cluster> {
  const { CoreV1Api, KubeConfig } = await kubernetesLibrary();
  const config = new KubeConfig();
  config.loadFromDefault();
  if (target.context) {
    if (!config.getContextObject(target.context)) {
      throw new ConfigError('--engine', `names kubeconfig context "${target.context}", which does not exist (contexts: ${config.getContexts().map((c) => c.name).join(', ') || 'none'})`);
    }
    config.setCurrentContext(target.context);
  }
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new ConfigError('--engine k8s', 'found no cluster: set KUBECONFIG, or run inside a pod with a service account');
  const namespace = target.namespace ?? config.getContextObject(config.getCurrentContext())?.namespace ?? 'default';
  const limiter = new RequestLimiter({ ...DEFAULT_RATE, ...limits });
  return {
    config,
    namespace,
    core: config.makeApiClient(CoreV1Api),
    server: cluster.server,
    request: (what, call, retryForMs) => limiter.run(what, call, cluster.server, retryForMs),
  };
}

/** Client-side request rate: a token bucket, and how long to keep retrying. */
export interface RateLimit {
  /** Requests per second, sustained. */
  qps: number;
  /** Requests allowed at once above the rate. */
  burst: number;
  /** A request failing with 429/5xx or no connection is retried until this much time has passed. */
  retryForMs: number;
}

const DEFAULT_RATE: RateLimit = { qps: 50, burst: 100, retryForMs: 60_000 };

/** HTTP status of a client-node error, when it has one. */
export function apiStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown; statusCode?: unknown }).code ?? (error as { statusCode?: unknown }).statusCode;
  return typeof code === 'number' ? code : undefined;
}

/**
 * One line saying why an API call failed: the apiserver's own message (its Status body:
 * "pods is forbidden: …", "RuntimeClass … not found") with the HTTP code, else the error's
 * first line.
 */
export function apiReason(error: unknown): string {
  const body = (error as { body?: unknown } | null)?.body;
  let status: unknown = body;
  if (typeof body === 'string') {
    try {
      status = JSON.parse(body);
    } catch {
      status = undefined;
    }
  }
  const message = (status as { message?: unknown } | undefined)?.message;
  if (typeof message === 'string' && message !== '') return `HTTP ${apiStatus(error) ?? '?'}: ${message}`.slice(0, 300);
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 300);
}

/** A refused or reset connection (the apiserver restarting) or 429/5xx: worth another try. */
export function transient(error: unknown): boolean {
  const status = apiStatus(error);
  if (status !== undefined) return status === 429 || status >= 500;
  const text = `${(error as { code?: unknown })?.code ?? ''} ${error instanceof Error ? error.message : String(error)}`;
  return /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|socket hang up|network|fetch failed/i.test(text);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A token bucket in front of every API call, with exponential backoff (jittered) on transient failures. */
export class RequestLimiter {
  private tokens: number;
  private last = performance.now();
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly limit: RateLimit) {
    this.tokens = limit.burst;
  }

  private take(): Promise<void> {
    const turn = this.queue.then(async () => {
      for (;;) {
        const now = performance.now();
        this.tokens = Math.min(this.limit.burst, this.tokens + ((now - this.last) / 1000) * this.limit.qps);
        this.last = now;
        if (this.tokens >= 1) {
          this.tokens -= 1;
          return;
        }
        await sleep(((1 - this.tokens) / this.limit.qps) * 1000);
      }
    });
    this.queue = turn;
    return turn;
  }

  /**
   * @throws the last error when it is not transient or retries ran out ({@link ClusterUnreachableError} when nothing answered).
   */
  async run<T>(what: string, call: () => Promise<T>, server: string, retryForMs = this.limit.retryForMs): Promise<T> {
    const deadline = performance.now() + retryForMs;
    for (let attempt = 0; ; attempt++) {
      await this.take();
      try {
        return await call();
      } catch (error) {
        if (!transient(error) || performance.now() > deadline) {
          if (apiStatus(error) === undefined && transient(error)) throw new ClusterUnreachableError(server, what, error);
          throw error;
        }
        const backoff = Math.min(5_000, 100 * 2 ** attempt);
        await sleep(backoff / 2 + Math.random() * (backoff / 2));
      }
    }
  }
}

/** What {@link checkCluster} found. */
export interface ClusterCheck {
  server: string;
  namespace: string;
  /** `v1.20.2`, say; undefined when unreachable. */
  version?: string;
  reachable: boolean;
  /** A server-side dry-run creation of a sandbox-like pod in the namespace was allowed. */
  canCreatePods: boolean;
  /** What failed, one line; undefined when everything passed. */
  problem?: string;
  /**
   * Each node's kubelet `podPidsLimit` (≤ 0: none), read from the node's `configz`; a
   * node whose configuration could not be read has null. Undefined when the nodes could not
   * be listed (a namespace-scoped identity may not).
   */
  podPidsLimits?: Record<string, number | null>;
  /** Why the nodes or their configurations could not be read. */
  nodesProblem?: string;
  /**
   * Nodes listed that cannot take a new pod, each as `name: why` (not Ready, cordoned, or
   * tainted NoSchedule/NoExecute); undefined when the nodes could not be listed.
   */
  nodesUnavailable?: string[];
  /** How many listed nodes can take a new pod; undefined when the nodes could not be listed. */
  nodesAvailable?: number;
}

/** Why node `node` cannot take a new pod, or undefined when it can. */
export function nodeUnavailable(node: V1Node): string | undefined {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True') return `not Ready (${ready ? `${ready.status}${ready.reason ? `, ${ready.reason}` : ''}${ready.message ? `: ${ready.message}` : ''}` : 'no Ready condition'})`;
  if (node.spec?.unschedulable) return 'cordoned';
  const taints = (node.spec?.taints ?? []).filter((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute');
  if (taints.length > 0) return `tainted ${taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join(', ')}`;
  return undefined;
}

/** How many nodes' kubelet configurations {@link checkCluster} reads at most. */
const NODES_READ = 20;

/**
 * Each node's pods' process limit, as its kubelet is configured: Kubernetes sets no pids
 * limit per pod, only per node (`podPidsLimit`), so this is what bounds a fork bomb.
 */
async function readNodes(cluster: Cluster): Promise<Pick<ClusterCheck, 'podPidsLimits' | 'nodesProblem' | 'nodesUnavailable' | 'nodesAvailable'>> {
  let nodes: V1Node[];
  try {
    nodes = (await cluster.core.listNode()).items;
  } catch (error) {
    return { nodesProblem: `cannot list nodes: ${apiReason(error)}` };
  }
  const nodesUnavailable = nodes.flatMap((node) => {
    const why = nodeUnavailable(node);
    return why ? [`${node.metadata!.name!}: ${why}`] : [];
  });
  const availability = { nodesUnavailable, nodesAvailable: nodes.length - nodesUnavailable.length };
  const names = nodes.map((node) => node.metadata!.name!).slice(0, NODES_READ);
  const limits: Record<string, number | null> = {};
  const problems: string[] = [];
  for (const name of names) {
    try {
      // Typed as a string, but the client parses a JSON answer itself.
      const answer: unknown = await cluster.core.connectGetNodeProxyWithPath({ name, path: 'configz' });
      const configz = (typeof answer === 'string' ? JSON.parse(answer) : answer) as { kubeletconfig?: { podPidsLimit?: number } };
      limits[name] = configz.kubeletconfig?.podPidsLimit ?? -1;
    } catch (error) {
      limits[name] = null;
      problems.push(`${name}: ${apiReason(error)}`);
    }
  }
  return { ...availability, podPidsLimits: limits, ...(problems.length > 0 ? { nodesProblem: `cannot read the kubelet configuration of ${problems.join(', ')}` } : {}) };
}

/**
 * Checks a cluster for `intercode doctor`: reachable, its version, whether this identity
 * may create pods in the namespace (a server-side dry run: nothing is created), which nodes
 * can take a pod, and each node's pod pids limit.
 * Never throws; a configuration error is reported as the problem.
 */
export async function checkCluster(target: ClusterTarget = {}): Promise<ClusterCheck> {
  let cluster: Cluster;
  try {
    cluster = await loadCluster(target, { retryForMs: 0 });
  } catch (error) {
    return { server: '', namespace: target.namespace ?? '', reachable: false, canCreatePods: false, problem: error instanceof Error ? error.message : String(error) };
  }
  const base = { server: cluster.server, namespace: cluster.namespace };
  let version: string;
  try {
    const { VersionApi } = await kubernetesLibrary();
    version = (await cluster.config.makeApiClient(VersionApi).getCode()).gitVersion;
  } catch (error) {
    return { ...base, reachable: false, canCreatePods: false, problem: `apiserver ${cluster.server} does not answer: ${error instanceof Error ? error.message : String(error)}` };
  }
  try {
    await cluster.core.createNamespacedPod({
      namespace: cluster.namespace,
      dryRun: 'All',
      body: { metadata: { generateName: 'intercode-doctor-' }, spec: { containers: [{ name: 'probe', image: 'busybox' }] } },
    });
    return { ...base, version, reachable: true, canCreatePods: true, ...(await readNodes(cluster)) };
  } catch (error) {
    return { ...base, version, reachable: true, canCreatePods: false, problem: `cannot create pods in namespace ${cluster.namespace}: ${apiReason(error)}` };
  }
}
