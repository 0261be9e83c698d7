/**
 * Where training plays its episodes. {@link EnvWorkers} gives each of its envs a worker
 * that takes the next job from a shared queue (the way `intercode run` does); the
 * vectorized env, when it lands, becomes another {@link EpisodeRunner} and nothing else
 * in training changes.
 */
import type { Task } from '../../src/datasets/index.js';
import type { TaskEnv } from '../../src/env/types.js';
import { IntercodeError } from '../../src/errors.js';
import { rollout, type Policy, type Rollout } from '../../src/policy/index.js';

/** One episode to play: this task, with this policy. */
export interface EpisodeJob {
  task: Task;
  policy: Policy;
}

export interface PlayOptions {
  turnLimit: number;
  /** Called after each finished episode with how many are done. */
  onEpisode?: (done: number, played: Rollout) => void;
}

export interface EpisodeRunner {
  /** The env's CLI name (bash, sql…), given to policies. */
  readonly envName: string;
  readonly tasks: readonly Task[];
  /** Plays every job; @returns the rollouts in job order. */
  play(jobs: readonly EpisodeJob[], options: PlayOptions): Promise<Rollout[]>;
  close(): Promise<void>;
}

/** Attempts per episode when the infrastructure fails with a retryable error (a sandbox that would not start). */
const ATTEMPTS = 3;

/** One worker per env, each playing one episode at a time. */
export class EnvWorkers implements EpisodeRunner {
  constructor(
    readonly envName: string,
    private readonly envs: readonly TaskEnv[],
  ) {}

  get tasks(): readonly Task[] {
    return this.envs[0]?.tasks ?? [];
  }

  async play(jobs: readonly EpisodeJob[], options: PlayOptions): Promise<Rollout[]> {
    const results: Rollout[] = new Array(jobs.length);
    let next = 0;
    let done = 0;
    await Promise.all(
      this.envs.map(async (env) => {
        for (let i = next++; i < jobs.length; i = next++) {
          const job = jobs[i]!;
          results[i] = await playWithRetry(env, job, this.envName, options.turnLimit);
          options.onEpisode?.(++done, results[i]!);
        }
      }),
    );
    return results;
  }

  async close(): Promise<void> {
    await Promise.all(this.envs.map((env) => env.close()));
  }
}

async function playWithRetry(env: TaskEnv, job: EpisodeJob, envName: string, turnLimit: number): Promise<Rollout> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await rollout(env, job.policy, { envName, task: job.task, turnLimit });
    } catch (error) {
      if (!(error instanceof IntercodeError && error.retryable) || attempt >= ATTEMPTS) throw error;
    }
  }
}
