/**
 * Envs that live in worker threads: N piscina workers each make a share of the envs (a
 * shard) and step them on their own event loop, with their own engine connections, gold
 * caches and warm pool; the main thread holds one {@link TaskEnv} proxy per env, so a
 * {@link VecEnv} over the proxies keeps every guarantee it gives envs of its own thread
 * (send/recv, autoreset modes, lost-sandbox truncation: the env in the worker turns a lost
 * sandbox into a truncated step, as ever). A thread that dies fails its envs' calls with a
 * {@link WorkerCrashedError} once the sandboxes it made are removed; Ctrl-C removes every
 * shard's sandboxes (each shard is in the main thread's sandbox registry).
 */
import { existsSync } from 'node:fs';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { Task } from '../datasets/index.js';
import type { ResetOptions, ResetResult, Score, StepResult, TaskEnv } from '../env/types.js';
import { ConfigError, EnvStateError, WorkerCrashedError } from '../errors.js';
import { packagePath } from '../package-path.js';
import { liveSandboxes } from '../sandbox/lifecycle/registry.js';
import { reviveError, type EnvFactorySpec, type ShardAnswer, type ShardHello, type ShardRequestBody, type ShardTask } from './shard-protocol.js';

export interface ThreadedEnvsOptions {
  /** Worker threads (≥ 1; more than `count` are not started). */
  threads: number;
  /** Envs in all. */
  count: number;
  factory: EnvFactorySpec;
  /** Each shard's warm pool (where its envs can share one). */
  pool?: ShardTask['pool'];
  /** Docker endpoints the envs make sandboxes on: where a dead shard's sandboxes are looked for. Default none (envs without containers). */
  engines?: readonly string[];
  /** How long Ctrl-C waits for a shard to remove its sandboxes before ending its thread and removing them by label. Default 15 s. */
  drainTimeoutMs?: number;
}

const WORKER_MODULE = 'src/vec/env-shard-worker.js';

/** The envs of shard `k` of `threads` over `count` envs: contiguous ids, sizes differing by at most one. */
export function shardRange(count: number, threads: number, k: number): { first: number; size: number } {
  const base = Math.floor(count / threads);
  const extra = count % threads;
  return { first: k * base + Math.min(k, extra), size: base + (k < extra ? 1 : 0) };
}

/** One worker thread's envs, seen from the main thread. */
class Shard {
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>();
  private nextId = 0;
  private dead: Error | undefined;
  private closing = false;
  private open: number;
  /** Settles when the shard is gone: closed, or its thread died and its sandboxes were removed. */
  readonly gone: Promise<void>;
  threadId = -1;

  constructor(
    private readonly port: MessagePort,
    readonly envIds: readonly number[],
    running: Promise<unknown>,
    private readonly engines: readonly string[],
    private readonly drainTimeoutMs: number,
    private readonly onGone: () => void,
  ) {
    this.open = envIds.length;
    port.on('message', (message: ShardAnswer) => {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.ok) waiter?.resolve(message.value);
      else waiter?.reject(reviveError(message.error));
    });
    this.gone = running.then(
      () => (this.closing ? undefined : this.died(new Error('the shard ended without being closed'))),
      (error: unknown) => this.died(error),
    ).finally(() => {
      liveSandboxes.forget(this);
      this.onGone();
    });
  }

  /** Waits for the shard's first message: its envs' ids and tasks. @throws what making them threw. */
  hello(): Promise<Extract<ShardHello, { kind: 'ready' }>> {
    return new Promise((resolve, reject) => {
      this.port.once('message', (message: ShardHello | ShardAnswer) => {
        if ('kind' in message && message.kind === 'ready') {
          this.threadId = message.threadId;
          liveSandboxes.track(this);
          resolve(message);
        } else if ('kind' in message) {
          this.closing = true;
          this.port.close();
          reject(reviveError(message.error));
        }
      });
      void this.gone.then(() => reject(this.dead ?? new Error('the shard ended before it was ready')));
    });
  }

  request(message: ShardRequestBody): Promise<unknown> {
    if (this.dead) return Promise.reject(this.dead);
    if (this.closing) return Promise.reject(new EnvStateError(`envs ${this.envIds.join(', ')}: closed`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.port.postMessage({ ...message, id });
    });
  }

  /** One of its envs was closed; the last one closes the shard (its envs, then its pool). */
  async release(): Promise<void> {
    if (--this.open > 0) return;
    if (!this.dead) {
      const closed = this.request({ op: 'close' });
      this.closing = true;
      await closed.catch((error: unknown) => (this.dead ? undefined : Promise.reject(error)));
    }
    await this.gone;
  }

  /** Ctrl-C (the registry's drain): the shard removes its sandboxes; if it cannot in time, its thread is ended and they are removed here. */
  async destroy(): Promise<void> {
    if (this.dead) return void (await this.gone);
    const drained = await Promise.race([
      this.request({ op: 'drain', timeoutMs: this.drainTimeoutMs }).then(() => true, () => false),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), this.drainTimeoutMs + 1_000).unref()),
    ]);
    if (!drained) await this.removeSandboxes();
  }

  private async died(cause: unknown): Promise<void> {
    const removed = await this.removeSandboxes();
    this.dead = new WorkerCrashedError(this.threadId, this.envIds, removed, cause);
    for (const waiter of this.pending.values()) waiter.reject(this.dead);
    this.pending.clear();
    this.port.close();
  }

  /** What this shard's thread made, removed by its label on every engine it used. @returns how many. */
  private async removeSandboxes(): Promise<number> {
    if (this.threadId < 0 || this.engines.length === 0) return 0;
    // Loaded here: envs without containers (embedded SQLite) never load the Docker client.
    const [{ removeThreadSandboxes }, { connectEngine }] = await Promise.all([import('../sandbox/docker/cleanup.js'), import('../sandbox/docker/engine.js')]);
    let removed = 0;
    for (const endpoint of this.engines) {
      const docker = await connectEngine(endpoint).catch(() => undefined);
      if (docker) removed += await removeThreadSandboxes(docker, this.threadId).catch(() => 0);
    }
    return removed;
  }
}

/** One env of a shard, as the main thread steps it. */
class RemoteEnv implements TaskEnv {
  private closed = false;

  constructor(
    private readonly shard: Shard,
    private readonly index: number,
    readonly id: string,
    readonly tasks: readonly Task[],
  ) {}

  async reset(options: ResetOptions = {}): Promise<ResetResult> {
    return (await this.shard.request({ op: 'reset', env: this.index, options })) as ResetResult;
  }

  async step(action: string): Promise<StepResult> {
    return (await this.shard.request({ op: 'step', env: this.index, action })) as StepResult;
  }

  async peekScore(submission?: string): Promise<Score> {
    return (await this.shard.request({ op: 'peekScore', env: this.index, submission })) as Score;
  }

  async goldDurationMs(task: Task): Promise<number | undefined> {
    return (await this.shard.request({ op: 'goldDurationMs', env: this.index, task })) as number | undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.shard.release();
  }
}

/**
 * `count` envs made by `factory` in `threads` worker threads. Close every env (a VecEnv over
 * them does) to close the shards and end the threads.
 * @throws ConfigError for a bad thread count or a missing build; what the factory threw (one shard's first error) after every shard is closed.
 */
export async function startThreadedEnvs(options: ThreadedEnvsOptions): Promise<TaskEnv[]> {
  const { count } = options;
  if (!Number.isInteger(options.threads) || options.threads < 1) throw new ConfigError('--threads', `must be an integer ≥ 1, got ${options.threads}`);
  if (!Number.isInteger(count) || count < 1) throw new ConfigError('envs', `must be an integer ≥ 1, got ${count}`);
  const filename = packagePath('dist', WORKER_MODULE);
  if (!existsSync(filename)) throw new ConfigError('--threads', `worker threads run compiled code and ${filename} is missing; run \`npm run build\``);
  const threads = Math.min(options.threads, count);
  // trackUnmanagedFds off: the FIFO transport opens its ends with openSync and hands them to
  // sockets that close them, so the thread's list of "unmanaged" descriptors goes stale, and
  // a thread that ended closed those numbers again — by then another thread's descriptors
  // (seen: the test runner's IPC channel closed, the process gone). A thread's sockets are
  // closed with its event loop whatever this says.
  const pool = new Piscina({ filename, minThreads: threads, maxThreads: threads, idleTimeout: 60_000, atomics: 'disabled', concurrentTasksPerWorker: 1, trackUnmanagedFds: false });
  let live = threads;
  const shardGone = () => {
    if (--live === 0) void pool.destroy();
  };
  const shards = Array.from({ length: threads }, (_, k) => {
    const { first, size } = shardRange(count, threads, k);
    const { port1, port2 } = new MessageChannel();
    const task: ShardTask = { port: port2, factory: options.factory, count: size, firstEnvId: first, pool: options.pool ?? {} };
    const running = pool.run(task, { transferList: [port2] as never });
    const envIds = Array.from({ length: size }, (_, i) => first + i);
    return new Shard(port1, envIds, running, options.engines ?? [], options.drainTimeoutMs ?? 15_000, shardGone);
  });
  const hellos = await Promise.allSettled(shards.map((shard) => shard.hello()));
  const failed = hellos.find((h): h is PromiseRejectedResult => h.status === 'rejected');
  const envs = hellos.flatMap((hello, k) =>
    hello.status === 'fulfilled' ? hello.value.envIds.map((id, i) => new RemoteEnv(shards[k]!, i, id, hello.value.tasks[i] as Task[])) : [],
  );
  if (failed) {
    await Promise.all(envs.map((env) => env.close()));
    await Promise.all(shards.map((shard, k) => (hellos[k]!.status === 'rejected' ? shard.gone : undefined)));
    throw failed.reason;
  }
  return envs;
}
