import type { V1Pod } from '@kubernetes/client-node';
import { ImageError, SandboxError } from '../../errors.js';
import { manifestChanges, takeManifest, type Manifest } from '../file-manifest.js';
import { CappedOutput } from '../capped-output.js';
import { liveSandboxes } from '../lifecycle/registry.js';
import type { AttachedProcess, AttachOptions, ExecOptions, ExecResult, FileSystemChange, Sandbox, SandboxRuntime, SandboxSpec } from '../types.js';
import { apiReason, apiStatus, type Cluster } from './cluster.js';
import { ExecAttachedProcess, openExec, sendStdin } from './exec-stream.js';
import { SANDBOX_CONTAINER, sandboxPod, thisRunSelector, type PodOptions } from './pod-spec.js';
import { PodWatch, podState, whyNotRunning } from './pod-watch.js';
import { confined } from '../harness-capability.js';

export interface KubernetesRuntimeOptions extends PodOptions {
  /** A pod not running after this long is removed and its creation fails. Default 120 000 ms. */
  startTimeoutMs?: number;
}

/** A creation that failed because its pod was deleted from outside (tried again). */
class DeletedWhileStarting extends Error {
  constructor(override readonly cause: SandboxError) {
    super(cause.message);
  }
}


/**
 * Sandboxes as pods of a Kubernetes cluster (see {@link sandboxPod} for what a pod is
 * allowed). One label-filtered watch per runtime tells when pods run, fail or vanish;
 * every API call goes through the cluster's rate limiter. Processes run over exec
 * WebSockets, files move as tar over exec, and file changes are found from inside the
 * pod ({@link takeManifest}): nothing needs the node's host.
 */
export class KubernetesRuntime implements SandboxRuntime {
  readonly name = 'kubernetes';
  readonly watch: PodWatch;

  /** The pods' RuntimeClass: what /proc and /sys show depends on it (and on the node). */
  get systemView(): string {
    return `kubernetes/${this.options.runtimeClassName ?? 'default'}`;
  }

  private readonly options: KubernetesRuntimeOptions;

  /** The pods' RuntimeClass (undefined: the node's default runtime). */
  get ociRuntime(): string | undefined {
    return this.options.runtimeClassName;
  }

  /**
   * @param options.runtimeClassName the name of a RuntimeClass of the cluster (from
   *   `--runtime`, see the Kubernetes backend); none: the node's default runtime.
   */
  constructor(
    readonly cluster: Cluster,
    options: KubernetesRuntimeOptions = {},
  ) {
    this.options = options;
    this.watch = new PodWatch(cluster, thisRunSelector());
  }

  create(spec: SandboxSpec): Promise<Sandbox> {
    return liveSandboxes.adopt(this.createReplacingDeleted(spec));
  }

  /**
   * A pod deleted from outside while it started (an operator, an eviction, the chaos
   * bench) says nothing about the image or the cluster: another is made, twice at most,
   * so the pool's failure guard counts only real failures.
   */
  private async createReplacingDeleted(spec: SandboxSpec): Promise<KubernetesSandbox> {
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.createPod(spec).then(
        (sandbox) => ({ sandbox }),
        (error: unknown) => ({ error }),
      );
      if ('sandbox' in outcome) return outcome.sandbox;
      const { error } = outcome;
      if (!(error instanceof DeletedWhileStarting)) throw error;
      if (attempt >= 2) throw error.cause;
    }
  }

  /** Whether the watch sees pod `name` deleted within `ms` (its deletion event may trail the failure it caused). */
  private async deletedSoon(name: string, ms = 2_000): Promise<boolean> {
    for (const until = performance.now() + ms; performance.now() < until; await new Promise((resolve) => setTimeout(resolve, 50))) {
      if (this.watch.state(name)?.kind === 'gone') return true;
    }
    return false;
  }

  private async createPod(spec: SandboxSpec): Promise<KubernetesSandbox> {
    const unavailable = (what: string, cause?: unknown) =>
      new SandboxError('SANDBOX_UNAVAILABLE', `Could not ${what} a sandbox pod from ${spec.image}${cause ? `: ${apiReason(cause)}` : ''}`, { details: { image: spec.image, namespace: this.cluster.namespace }, cause });
    try {
      await this.watch.start();
    } catch (error) {
      throw unavailable('watch', error);
    }
    let name: string;
    try {
      const pod = await this.cluster.request('creating a pod', () => this.cluster.core.createNamespacedPod({ namespace: this.cluster.namespace, body: sandboxPod(spec, this.options) }));
      name = pod.metadata!.name!;
    } catch (error) {
      throw unavailable('create', error);
    }
    const sandbox = new KubernetesSandbox(this, name, spec);
    const startTimeoutMs = this.options.startTimeoutMs ?? 120_000;
    const watched = await this.watch.settled(name, startTimeoutMs);
    // A watch that stalled without ending says nothing of the pod: the pod itself is read once.
    const read = watched === undefined ? await this.readStartingPod(name) : undefined;
    const state = watched ?? (read?.pod ? podState(read.pod) : undefined);
    if (state?.kind !== 'running') {
      await sandbox.destroy().catch(() => undefined);
      if (state?.kind === 'gone') throw new DeletedWhileStarting(unavailable('start', 'the pod was deleted'));
      if (state?.kind === 'failed' && state.imageMissing) {
        throw new ImageError('IMAGE_MISSING', `Image ${spec.image} is not on the node (pods use imagePullPolicy Never): ${state.reason}`, { details: { image: spec.image } });
      }
      if (state?.kind === 'failed') throw unavailable('start', state.reason);
      throw unavailable('start', `not running after ${startTimeoutMs / 1000} s (${read?.why ?? 'the pod could not be read'})`);
    }
    try {
      await sandbox.recordBaseline();
    } catch (error) {
      const deleted = await this.deletedSoon(name);
      await sandbox.destroy().catch(() => undefined);
      throw deleted ? new DeletedWhileStarting(unavailable('list the files of', 'the pod was deleted')) : unavailable('list the files of', error);
    }
    return sandbox;
  }

  /** Pod `name` as the apiserver has it now, and why it is not running (undefined when it cannot be read). */
  private async readStartingPod(name: string): Promise<{ pod: V1Pod | undefined; why: string } | undefined> {
    const { core, namespace } = this.cluster;
    try {
      const pod = await this.cluster.request('reading a pod', () => core.readNamespacedPod({ name, namespace })).catch((error: unknown) => {
        if (apiStatus(error) === 404) return undefined;
        throw error;
      });
      const events = await this.cluster.request('listing a pod\'s events', () => core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })).then(
        (list) => list.items,
        () => [],
      );
      return { pod, why: whyNotRunning(pod, events) };
    } catch {
      return undefined;
    }
  }

  /** Stops the watch. Sandboxes are left as they are. */
  close(): void {
    this.watch.close();
  }
}

export class KubernetesSandbox implements Sandbox {
  private destroyed = false;
  private baseline: Manifest | undefined;

  constructor(
    private readonly runtime: KubernetesRuntime,
    /** The pod's name. */
    readonly id: string,
    readonly spec: SandboxSpec,
  ) {}

  private get cluster(): Cluster {
    return this.runtime.cluster;
  }

  private lost(what: string, cause?: unknown): SandboxError {
    const state = this.runtime.watch.state(this.id);
    const why = state?.kind === 'failed' ? state.reason : state?.kind === 'gone' ? 'the pod was deleted' : cause ? apiReason(cause) : 'the stream closed';
    return new SandboxError('SANDBOX_LOST', `Sandbox pod ${this.id}: ${what} failed (${why})`, { details: { sandbox: this.id, namespace: this.cluster.namespace, statusCode: apiStatus(cause) }, cause });
  }

  /** Throws SANDBOX_LOST at once when the watch saw the pod end. */
  private checkAlive(what: string): void {
    const kind = this.runtime.watch.state(this.id)?.kind;
    if (this.destroyed || kind === 'failed' || kind === 'gone') throw this.lost(what);
  }

  async exec(argv: readonly string[], options: ExecOptions = {}, stdin?: Buffer): Promise<ExecResult> {
    this.checkAlive(`running ${argv[0]}`);
    const started = performance.now();
    const output = new CappedOutput(options.maxOutputBytes);
    let finish!: (status: { exitCode: number | null; message?: string } | undefined) => void;
    const finished = new Promise<{ exitCode: number | null; message?: string } | undefined>((resolve) => (finish = resolve));
    let opened: { close(): void } | undefined;
    let ws;
    try {
      ws = await openExec(this.cluster, this.id, SANDBOX_CONTAINER, options.confined ? confined(argv) : argv, { stdin: stdin !== undefined, workdir: options.workdir, env: options.env }, { output: (c) => {
        if (!output.over && !output.push(c)) opened?.close();
      }, closed: finish });
    } catch (error) {
      throw this.lost(`starting ${argv[0]}`, error);
    }
    opened = ws;
    if (output.over) ws.close();
    if (stdin !== undefined) for (let at = 0; at < stdin.length; at += 1 << 20) sendStdin(ws, stdin.subarray(at, at + (1 << 20)));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      if (options.timeoutMs !== undefined) timer = setTimeout(() => resolve('timeout'), options.timeoutMs);
    });
    const outcome = await Promise.race([finished, deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      ws.close();
      return { exitCode: null, output: output.bytes(), timedOut: true, durationMs: performance.now() - started };
    }
    if (output.over) return { exitCode: null, output: output.bytes(), timedOut: false, outputLimited: true, outputBytes: output.seen, durationMs: performance.now() - started };
    // A stream that closed without an exit status: the container (or the apiserver) went away.
    if (outcome === undefined || outcome.exitCode === null) throw this.lost(`running ${argv[0]}`, outcome?.message);
    return { exitCode: outcome.exitCode, output: output.bytes(), timedOut: false, durationMs: performance.now() - started };
  }

  async attach(argv: readonly string[], options: AttachOptions = {}): Promise<AttachedProcess> {
    this.checkAlive(`starting ${argv[0]}`);
    try {
      return await ExecAttachedProcess.start(this.cluster, this.id, SANDBOX_CONTAINER, options.confined ? confined(argv) : argv, options);
    } catch (error) {
      throw this.lost(`starting ${argv[0]}`, error);
    }
  }

  /**
   * Kills every process but PID 1 (`kill -9 -1` spares only init and the caller), which
   * then starts the idle process again. A pod cannot restart its container in place
   * (restartPolicy Never); when not even a kill can run, the sandbox is lost.
   */
  async restartProcesses(): Promise<void> {
    const result = await this.exec(['bash', '-c', 'for i in 1 2 3 4 5; do kill -9 -1 2>/dev/null; done; exit 0'], { timeoutMs: 10_000 });
    if (result.exitCode !== 0) throw this.lost('restarting processes', `kill exited with ${result.exitCode}`);
  }

  /** GNU tar in the pod reads exactly the archive's bytes (`head -c`: stdin cannot be half-closed over v4). */
  async putArchive(tar: Buffer, destDir: string): Promise<void> {
    const result = await this.exec(['bash', '-c', 'head -c "$0" | tar -x --same-owner --numeric-owner -p -f - -C "$1" 2>&1', String(tar.length), destDir], { timeoutMs: 120_000 }, tar);
    if (result.exitCode !== 0) throw this.lost(`copying files into ${destDir}`, `tar: ${result.output.toString().trim().split('\n')[0]}`);
  }

  async getArchive(path: string): Promise<Buffer> {
    const result = await this.exec(['bash', '-c', 'cd -- "$(dirname -- "$0")" && exec tar -cf - -- "$(basename -- "$0")"', path], { timeoutMs: 120_000 });
    if (result.exitCode !== 0) throw this.lost(`copying ${path} out`, `tar exited with ${result.exitCode}`);
    return result.output;
  }

  /** Lists the pod's files now, as the untouched pod had them. Called once, right after the pod starts. */
  async recordBaseline(): Promise<void> {
    this.baseline = await takeManifest(this);
  }

  /**
   * What differs from the pod as it started (`reference` is not needed: the pod's own
   * first listing is the image). A path restored since still shows (its ctime is new)
   * and is written back again by the next restore: correct, and bounded by what episodes touch.
   */
  async changes(): Promise<FileSystemChange[]> {
    if (!this.baseline) throw this.lost('listing file changes', 'no baseline listing');
    let now: Manifest;
    try {
      now = await takeManifest(this);
    } catch (error) {
      if (error instanceof SandboxError) throw error;
      throw this.lost('listing file changes', error);
    }
    return manifestChanges(this.baseline, now);
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    try {
      await this.cluster.request('deleting a pod', () => this.cluster.core.deleteNamespacedPod({ name: this.id, namespace: this.cluster.namespace, gracePeriodSeconds: 0 }));
    } catch (error) {
      if (apiStatus(error) !== 404) throw this.lost('removing the pod', error);
    } finally {
      this.runtime.watch.forget(this.id);
      liveSandboxes.forget(this);
    }
  }
}
