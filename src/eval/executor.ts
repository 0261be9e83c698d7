import type { TaskEnv } from '../env/types.js';

/**
 * Where evaluation episodes run. The runner hands it jobs; it gives each job an env that
 * nothing else uses meanwhile. One implementation today (an env per worker); the
 * vectorized env's pool will be another, and the runner will not change.
 */
export interface EpisodeExecutor {
  /**
   * Calls `play` once per job, as many at once as there are envs, until every job is done
   * or `signal` aborts (jobs not yet started are then left).
   * @throws the first error a `play` throws, after the jobs in flight have settled.
   */
  forEach<T>(jobs: readonly T[], play: (env: TaskEnv, job: T) => Promise<void>, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** One env per worker, each worker taking the next job when it finishes one (as `intercode run` does). */
export class EnvPerWorker implements EpisodeExecutor {
  constructor(private readonly envs: readonly TaskEnv[]) {}

  async forEach<T>(jobs: readonly T[], play: (env: TaskEnv, job: T) => Promise<void>, signal?: AbortSignal): Promise<void> {
    let next = 0;
    let failure: { error: unknown } | undefined;
    await Promise.all(
      this.envs.map(async (env) => {
        while (next < jobs.length && !failure && !signal?.aborted) {
          const job = jobs[next++]!;
          try {
            await play(env, job);
          } catch (error) {
            failure ??= { error };
          }
        }
      }),
    );
    if (failure) throw failure.error;
  }

  async close(): Promise<void> {
    await Promise.all(this.envs.map((env) => env.close()));
  }
}
