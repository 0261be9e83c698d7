/**
 * Where training plays its episodes. {@link VecEpisodeRunner} plays them through a
 * vectorized env (src/vec's VecEpisodeDriver: each env id takes the next job when its
 * episode ends; sandbox envs share a warm pool restored in place).
 */
import type { Task } from '../../src/datasets/index.js';
import type { TaskEnv } from '../../src/env/types.js';
import { IntercodeError, SandboxError } from '../../src/errors.js';
import { rollout, type Policy, type Rollout } from '../../src/policy/index.js';
import { VecEpisodeDriver, type VecEnv } from '../../src/vec/index.js';

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

/**
 * Attempts per episode when the infrastructure fails: a retryable error (a sandbox that
 * would not start) or a sandbox lost mid-episode (a truncated rollout, which has no reward
 * to learn from or to count).
 */
const ATTEMPTS = 3;

/** Episodes played through a VecEnv that does not autoreset (see `vecEnvFor`). */
export class VecEpisodeRunner implements EpisodeRunner {
  private readonly driver: VecEpisodeDriver;

  /** @param log where a replayed episode is noted (stderr in the CLI). */
  constructor(
    readonly envName: string,
    vec: VecEnv,
    private readonly log: (line: string) => void = () => undefined,
  ) {
    this.driver = new VecEpisodeDriver(vec);
  }

  get tasks(): readonly Task[] {
    return this.driver.vec.envs[0]!.tasks;
  }

  /**
   * @throws the first error an episode threw that was not retryable, or retryable but
   * repeated {@link ATTEMPTS} times; SandboxError when one episode lost its sandbox that often.
   */
  async play(jobs: readonly EpisodeJob[], options: PlayOptions): Promise<Rollout[]> {
    const results: Rollout[] = new Array(jobs.length);
    let done = 0;
    await this.driver.forEach(
      jobs.map((job, index) => ({ job, index })),
      async (env, { job, index }) => {
        results[index] = await this.playWithRetry(env, job, options.turnLimit);
        options.onEpisode?.(++done, results[index]!);
      },
    );
    return results;
  }

  private async playWithRetry(env: TaskEnv, job: EpisodeJob, turnLimit: number): Promise<Rollout> {
    for (let attempt = 1; ; attempt++) {
      let played: Rollout;
      try {
        played = await rollout(env, job.policy, { envName: this.envName, task: job.task, turnLimit });
      } catch (error) {
        if (!(error instanceof IntercodeError && error.retryable) || attempt >= ATTEMPTS) throw error;
        this.log(`task ${job.task.id}: ${error.message}; playing the episode again (attempt ${attempt + 1} of ${ATTEMPTS})`);
        continue;
      }
      if (played.turns.at(-1)?.info.truncation?.reason !== 'sandbox-lost') return played;
      if (attempt >= ATTEMPTS) {
        throw new SandboxError('SANDBOX_LOST', `task ${job.task.id}: the sandbox was lost in ${ATTEMPTS} attempts in a row (last: ${played.truncation})`, { details: { task: job.task.id } });
      }
      this.log(`task ${job.task.id}: sandbox lost (${played.truncation}); playing the episode again (attempt ${attempt + 1} of ${ATTEMPTS})`);
    }
  }

  close(): Promise<void> {
    return this.driver.close();
  }
}
