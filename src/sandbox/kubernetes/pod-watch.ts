import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { kubernetesLibrary, type Cluster } from './cluster.js';

/** Where a pod stands, as far as starting a sandbox goes. */
export type PodState = { kind: 'starting' } | { kind: 'running' } | { kind: 'failed'; reason: string; imageMissing: boolean } | { kind: 'gone' };

/** Waiting reasons that will not resolve by themselves. */
const FATAL_WAITING = new Set(['ErrImageNeverPull', 'ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError', 'CrashLoopBackOff']);

/** A pod's state from its status. */
export function podState(pod: V1Pod): PodState {
  const phase = pod.status?.phase;
  const container = pod.status?.containerStatuses?.[0];
  if (pod.metadata?.deletionTimestamp) return { kind: 'gone' };
  if (phase === 'Failed' || phase === 'Succeeded') {
    const terminated = container?.state?.terminated;
    return { kind: 'failed', reason: `pod ${phase.toLowerCase()}${pod.status?.reason ? ` (${pod.status.reason})` : ''}${terminated ? `: container ${terminated.reason ?? 'ended'} with exit code ${terminated.exitCode}` : ''}`, imageMissing: false };
  }
  const waiting = container?.state?.waiting;
  if (waiting?.reason && FATAL_WAITING.has(waiting.reason)) {
    return { kind: 'failed', reason: `${waiting.reason}: ${waiting.message ?? ''}`.trim(), imageMissing: /Image|Pull/.test(waiting.reason) };
  }
  if (phase === 'Running' && container?.state?.running) return { kind: 'running' };
  return { kind: 'starting' };
}

/**
 * Why a pod that is still starting is not running yet, from its status and its events
 * (newest last): what `kubectl describe pod` would show a person, in one line.
 */
export function whyNotRunning(pod: V1Pod | undefined, events: readonly CoreV1Event[]): string {
  if (!pod) return 'the pod is not listed';
  const parts = [`pod ${(pod.status?.phase ?? 'without a phase').toLowerCase()}`];
  for (const condition of pod.status?.conditions ?? []) {
    if (condition.status !== 'True' && (condition.reason || condition.message)) parts.push(`${condition.type} ${condition.reason ?? 'false'}${condition.message ? `: ${condition.message}` : ''}`);
  }
  const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
  if (waiting?.reason) parts.push(`container waiting (${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''})`);
  const recent = [...events].sort((a, b) => eventTime(a) - eventTime(b)).slice(-3);
  if (recent.length > 0) parts.push(`events: ${recent.map((e) => `${e.reason ?? e.type ?? 'event'}${(e.count ?? 1) > 1 ? ` ×${e.count}` : ''}: ${e.message ?? ''}`.trim()).join('; ')}`);
  else parts.push('no events for it');
  return parts.join('; ');
}

function eventTime(event: CoreV1Event): number {
  const at = event.lastTimestamp ?? event.eventTime ?? event.firstTimestamp;
  return at ? new Date(at).getTime() : 0;
}

interface Waiter {
  resolve(state: PodState): void;
}

/**
 * One label-filtered watch on this run's pods (instead of polling each pod): sandboxes
 * wait on it for their pod to run, and learn when it fails or is deleted. A watch that
 * ends (the apiserver restarted, a timeout) is opened again after a list, with backoff.
 */
export class PodWatch {
  private readonly states = new Map<string, PodState>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private abort: AbortController | undefined;
  private started: Promise<void> | undefined;
  private closed = false;
  private failures = 0;
  /** Watch (re)connections, for tests and stats. */
  connections = 0;

  constructor(
    private readonly cluster: Cluster,
    private readonly selector: string,
  ) {}

  /** Opens the watch (once); resolves when the first list is in. */
  start(): Promise<void> {
    this.started ??= this.connect();
    // An apiserver that did not answer the first list may answer the next creation's.
    this.started.catch(() => (this.started = undefined));
    return this.started;
  }

  private async connect(): Promise<void> {
    const list = await this.cluster.request('listing pods', () => this.cluster.core.listNamespacedPod({ namespace: this.cluster.namespace, labelSelector: this.selector }));
    const seen = new Set<string>();
    for (const pod of list.items) {
      const name = pod.metadata?.name;
      if (!name) continue;
      seen.add(name);
      this.update(name, podState(pod));
    }
    // Pods deleted while no watch was open.
    for (const name of this.states.keys()) if (!seen.has(name)) this.update(name, { kind: 'gone' });
    if (this.closed) return;
    this.connections += 1;
    const { Watch } = await kubernetesLibrary();
    this.abort = await new Watch(this.cluster.config).watch(
      `/api/v1/namespaces/${this.cluster.namespace}/pods`,
      { labelSelector: this.selector, resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true },
      (type: string, pod: V1Pod) => {
        this.failures = 0;
        const name = pod.metadata?.name;
        if (!name || type === 'BOOKMARK') return;
        this.update(name, type === 'DELETED' ? { kind: 'gone' } : podState(pod));
      },
      () => this.reconnect(),
    );
  }

  private reconnect(): void {
    if (this.closed) return;
    this.failures += 1;
    const delay = Math.min(5_000, 100 * 2 ** Math.min(this.failures, 6));
    setTimeout(() => {
      if (this.closed) return;
      this.connect().catch(() => this.reconnect());
    }, delay).unref();
  }

  private update(name: string, state: PodState): void {
    const before = this.states.get(name);
    if (before?.kind === 'gone') return;
    this.states.set(name, state);
    if (state.kind === 'starting') return;
    for (const waiter of this.waiters.get(name) ?? []) waiter.resolve(state);
  }

  /** The last state seen of pod `name` (undefined: not seen yet). */
  state(name: string): PodState | undefined {
    return this.states.get(name);
  }

  /**
   * Resolves with the pod's first state past `starting` (running, failed or gone), or
   * `undefined` after `timeoutMs`.
   */
  async settled(name: string, timeoutMs: number): Promise<PodState | undefined> {
    const now = this.states.get(name);
    if (now && now.kind !== 'starting') return now;
    let timer: NodeJS.Timeout | undefined;
    let waiter: Waiter | undefined;
    try {
      return await new Promise<PodState | undefined>((resolve) => {
        waiter = { resolve };
        let set = this.waiters.get(name);
        if (!set) this.waiters.set(name, (set = new Set()));
        set.add(waiter);
        timer = setTimeout(() => resolve(undefined), timeoutMs);
      });
    } finally {
      clearTimeout(timer);
      if (waiter) this.waiters.get(name)?.delete(waiter);
      if (this.waiters.get(name)?.size === 0) this.waiters.delete(name);
    }
  }

  /** Stops tracking a pod we removed. */
  forget(name: string): void {
    this.states.delete(name);
  }

  close(): void {
    this.closed = true;
    this.abort?.abort();
  }
}
