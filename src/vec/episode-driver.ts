import { ForkingTaskEnvWrapper } from '../env/task-env-wrapper.js';
import type { ResetOptions, ResetResult, StepResult, TaskEnv } from '../env/types.js';
import { ConfigError, EnvStateError } from '../errors.js';
import { VecStepError, type EnvStep, type VecEnv } from './vec-env.js';

/**
 * Plays episodes through a {@link VecEnv} in EnvPool's asynchronous style. Each job goes to a
 * free env id and is played by sequential episode code (InterCode's evaluation protocol,
 * `rollout`…) against that id's {@link VecSlotEnv}: its `reset` is `vec.reset([id], {task})`,
 * its `step` is `vec.send([action], [id])`, answered when `vec.recv()` returns that id. One
 * receive loop takes whichever env finishes first and hands the result to its episode, whose
 * agent (an LLM request, a network) then picks the next action while the other envs run.
 * When an episode ends its env id takes the next job.
 *
 * The VecEnv must not autoreset: each episode is reset with its own job's task. A lost
 * sandbox is a truncated step the episode code sees (never a reward); a step that threw
 * fails that episode only. `forEach` matches eval's `EpisodeExecutor`.
 */
export class VecEpisodeDriver {
  private readonly waiting = new Map<number, { resolve: (step: EnvStep) => void; reject: (error: unknown) => void }>();
  private receiving = false;
  private busy = false;

  /** @throws ConfigError when `vec` autoresets. */
  constructor(readonly vec: VecEnv) {
    if (vec.autoresetMode !== 'disabled') throw new ConfigError('autoreset', `must be "disabled" for the episode driver (each episode resets its own task), got "${vec.autoresetMode}"`);
  }

  /**
   * Calls `play` once per job, on as many env ids at once as the VecEnv has, each id taking
   * the next job when its episode is over, until every job is done, one `play` throws, or
   * `signal` aborts; in the last two cases no job starts any more and those in flight finish.
   * @throws the first error a `play` threw, after the episodes in flight have finished.
   */
  async forEach<T>(jobs: readonly T[], play: (env: TaskEnv, job: T) => Promise<void>, signal?: AbortSignal): Promise<void> {
    if (this.busy) throw new EnvStateError('the driver is already playing a batch of jobs');
    this.busy = true;
    let next = 0;
    let failure: { error: unknown } | undefined;
    try {
      await Promise.all(
        this.vec.envs.map(async (_, envId) => {
          const slot = new VecSlotEnv(this, envId);
          while (next < jobs.length && !failure && !signal?.aborted) {
            const job = jobs[next++]!;
            try {
              await play(slot, job);
            } catch (error) {
              failure ??= { error };
            }
          }
        }),
      );
    } finally {
      this.busy = false;
    }
    if (failure) throw failure.error;
  }

  /** Closes the VecEnv (its envs, and the pool they share). */
  close(): Promise<void> {
    return this.vec.close();
  }

  /** @internal the step of `envId`'s episode: sent now, resolved when `recv` returns it. */
  step(envId: number, action: string): Promise<StepResult> {
    this.vec.send([action], [envId]);
    const result = new Promise<EnvStep>((resolve, reject) => this.waiting.set(envId, { resolve, reject }));
    this.receive();
    return result.then(({ observation, reward, terminated, truncated, info }) => ({ observation, reward, terminated, truncated, info }));
  }

  /** Runs the receive loop while any episode waits for its step. */
  private receive(): void {
    if (this.receiving) return;
    this.receiving = true;
    void (async () => {
      while (this.waiting.size > 0) {
        try {
          const [finished] = await this.vec.recv();
          this.settle(finished!.envId)?.resolve(finished!);
        } catch (error) {
          if (error instanceof VecStepError) {
            this.settle(error.envId)?.reject(error.cause);
            continue;
          }
          // Not one env's failure (recv itself refused): every waiting episode gets it.
          for (const envId of [...this.waiting.keys()]) this.settle(envId)?.reject(error);
        }
      }
      this.receiving = false;
    })();
  }

  private settle(envId: number) {
    const waiter = this.waiting.get(envId);
    this.waiting.delete(envId);
    return waiter;
  }
}

/**
 * One env id of the driver's VecEnv, as the TaskEnv an episode plays: `reset` and `step` go
 * through the VecEnv; `peekScore` (Try Again's reward after every action) is asked of the
 * env itself, which is idle then (its episode is between steps), so it needs no routing;
 * so is `fork` (nothing may be in flight on the slot, as between two steps; the caller closes
 * the forks). The driver owns the env: `close` is refused.
 */
export class VecSlotEnv extends ForkingTaskEnvWrapper {
  constructor(
    private readonly driver: VecEpisodeDriver,
    readonly envId: number,
  ) {
    super(() => driver.vec.envs[envId]!);
  }

  override async reset(options: ResetOptions = {}): Promise<ResetResult> {
    const [first] = await this.driver.vec.reset([this.envId], options);
    return { observation: first!.observation, info: first!.info };
  }

  override step(action: string): Promise<StepResult> {
    return this.driver.step(this.envId, action);
  }

  override async close(): Promise<void> {
    throw new EnvStateError(`env ${this.envId} belongs to the episode driver; close the driver`);
  }
}
