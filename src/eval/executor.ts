import type { TaskEnv } from '../env/types.js';

/**
 * Where evaluation episodes run. The runner hands it jobs; it gives each job an env that
 * nothing else uses meanwhile. The implementation the CLI uses is src/vec's
 * `VecEpisodeDriver` over `vecEnvFor(envs)`: episodes step through a vectorized env, whose
 * sandbox envs share a warm pool restored in place.
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
