/**
 * The worker side of {@link ThreadedEnvs}: one piscina task per worker thread that makes its
 * share of the envs (with this thread's own engine connections, gold caches and warm pool),
 * then answers reset/step/peekScore requests on its own event loop until it is closed. The
 * task lasts as long as the shard: its end (or piscina failing it, when the thread dies)
 * is how the main thread learns the shard is gone.
 */
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { threadId } from 'node:worker_threads';
import type { Task } from '../datasets/index.js';
import type { ResetOptions, TaskEnv } from '../env/types.js';
import { packagePath } from '../package-path.js';
import { liveSandboxes } from '../sandbox/lifecycle/registry.js';
import { vecEnvFor } from './make-vec-env.js';
import { serializeError, type ShardAnswer, type ShardHello, type ShardRequest, type ShardTask } from './shard-protocol.js';
import type { VecEnv } from './vec-env.js';

/** How long a closing shard waits for what it still tracks to be removed. */
const CLOSE_DRAIN_MS = 30_000;

type EnvFactory = (options: unknown, count: number, firstEnvId: number) => Promise<TaskEnv[]>;

async function makeEnvs(task: ShardTask): Promise<{ envs: readonly TaskEnv[]; vec: VecEnv }> {
  const path = isAbsolute(task.factory.module) ? task.factory.module : packagePath('dist', task.factory.module);
  const module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  const factory = module[task.factory.name];
  if (typeof factory !== 'function') throw new Error(`${path} exports no function ${task.factory.name}`);
  const envs = await (factory as EnvFactory)(task.factory.options, task.count, task.firstEnvId);
  if (envs.length !== task.count) throw new Error(`${task.factory.name} made ${envs.length} envs, ${task.count} were asked for`);
  // Not stepped through: it binds the envs to the shard's warm pool (where they can share one) and closes envs and pool.
  const vec = vecEnvFor(envs, { autoreset: 'disabled', ...(task.pool.clean ? { clean: task.pool.clean } : {}), pool: withoutUndefined(task.pool) });
  return { envs, vec };
}

function withoutUndefined(pool: ShardTask['pool']): { minIdle?: number; keepWarmMs?: number } {
  return { ...(pool.minIdle !== undefined ? { minIdle: pool.minIdle } : {}), ...(pool.keepWarmMs !== undefined ? { keepWarmMs: pool.keepWarmMs } : {}) };
}

async function answer(envs: readonly TaskEnv[], request: Exclude<ShardRequest, { op: 'close' | 'drain' }>): Promise<unknown> {
  const env = envs[request.env];
  if (!env) throw new Error(`the shard has no env ${request.env}`);
  switch (request.op) {
    case 'reset':
      return env.reset(request.options as ResetOptions);
    case 'step':
      return env.step(request.action);
    case 'peekScore':
      return env.peekScore(request.submission);
    case 'goldDurationMs':
      return env.goldDurationMs?.(request.task as Task);
  }
}

/** The piscina task: runs the shard until the main thread closes it. */
export default async function runShard(task: ShardTask): Promise<void> {
  const { port } = task;
  let made: { envs: readonly TaskEnv[]; vec: VecEnv };
  try {
    made = await makeEnvs(task);
  } catch (error) {
    // The task ends once the main thread has read why (it closes the channel then): ending
    // first could tell it the shard died before it reads the message.
    const read = new Promise((resolve) => port.once('close', resolve));
    port.postMessage({ kind: 'failed', error: serializeError(error) } satisfies ShardHello);
    await read;
    return;
  }
  const { envs, vec } = made;
  await new Promise<void>((closed) => {
    const reply = (message: ShardAnswer) => port.postMessage(message);
    port.on('message', (request: ShardRequest) => {
      if (request.op === 'close') {
        // What the thread still tracks once its envs and pool are closed (an episode-root
        // pool's container) is removed before the answer: a thread does not outlive its
        // close, and the command that waits for it exits with nothing left behind, as the
        // main thread's own exit drains its registry.
        void vec.close().then(() => liveSandboxes.drain(CLOSE_DRAIN_MS)).then(
          () => reply({ id: request.id, ok: true, value: null }),
          (error: unknown) => reply({ id: request.id, ok: false, error: serializeError(error) }),
        ).finally(() => {
          port.close();
          closed();
        });
        return;
      }
      const work = request.op === 'drain' ? liveSandboxes.drain(request.timeoutMs) : answer(envs, request);
      void work.then(
        (value) => reply({ id: request.id, ok: true, value }),
        (error: unknown) => reply({ id: request.id, ok: false, error: serializeError(error) }),
      );
    });
    port.postMessage({ kind: 'ready', threadId, envIds: envs.map((env) => env.id), tasks: envs.map((env) => env.tasks) } satisfies ShardHello);
  });
}
