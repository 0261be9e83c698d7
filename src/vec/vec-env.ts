import { isCheckpointable, type CheckpointableEnv, type ResetOptions, type ResetResult, type StepInfo, type StepResult, type TaskEnv } from '../env/types.js';
import { ConfigError, EnvStateError } from '../errors.js';

/**
 * What happens when an env's episode ends (Gymnasium's AutoresetMode):
 * - `next-step`: the env's next `step` ignores its action, resets the env and returns the
 *   new episode's first observation with reward 0 and `info.autoreset` set;
 * - `same-step`: the step that ends an episode also resets the env; it returns the new
 *   episode's first observation, with the ended episode's last one in `info.finalObservation`;
 * - `disabled`: the caller resets ended envs with `reset(envIds)`; stepping one is an error.
 */
export type AutoresetMode = 'next-step' | 'same-step' | 'disabled';

export interface VecStepInfo extends StepInfo {
  /** This step was an autoreset (next-step mode): the action was not run. */
  autoreset?: boolean;
  /** same-step mode: the ended episode's last observation and the task it was for. */
  finalObservation?: string;
}

/** One env's part of a batch. */
export interface EnvStep {
  envId: number;
  observation: string;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: VecStepInfo;
}

/**
 * A step that threw (a lost sandbox does not: it is a truncated step): which env it was,
 * and what it threw as `cause`, so a caller with one episode per env can fail that one only.
 */
export class VecStepError extends Error {
  constructor(
    readonly envId: number,
    cause: unknown,
  ) {
    super(`env ${envId}: the step failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = new.target.name;
  }
}

export interface VecEnvOptions {
  autoreset: AutoresetMode;
  /** The task an env's next episode gets (autoreset, and `reset()` without options). Default: the env's seeded random choice. */
  nextTask?: (envId: number) => ResetOptions;
  /** Runs after every env is closed (e.g. closes a pool the envs share). */
  onClose?: () => Promise<void>;
}

/**
 * N environments behind one object. `step(actions)` steps all of them and returns when all
 * are done (Gymnasium's synchronous vector env); `send(actions, envIds)` / `recv()` let the
 * caller take whichever envs finish first (EnvPool's asynchronous API). A sandbox that dies
 * mid-episode comes back as that env's step with `truncated` and the cause in
 * `info.truncation` (never a reward); its next reset takes a new sandbox, and the other
 * envs are not disturbed.
 */
export class VecEnv {
  readonly numEnvs: number;
  readonly autoresetMode: AutoresetMode;
  private readonly ended: boolean[];
  private readonly inFlight = new Map<number, Promise<void>>();
  private readonly done: EnvStep[] = [];
  private readonly failures: { envId: number; error: unknown }[] = [];
  private wake: (() => void) | undefined;

  constructor(
    readonly envs: readonly TaskEnv[],
    private readonly options: VecEnvOptions,
  ) {
    if (envs.length === 0) throw new ConfigError('envs', 'must hold at least one env');
    this.numEnvs = envs.length;
    this.autoresetMode = options.autoreset;
    this.ended = envs.map(() => true);
  }

  private ids(envIds: readonly number[] | undefined): number[] {
    const ids = envIds ? [...envIds] : this.envs.map((_, i) => i);
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.numEnvs) throw new EnvStateError(`env id ${id} is out of range (0–${this.numEnvs - 1})`);
      if (this.inFlight.has(id)) throw new EnvStateError(`env ${id} has a step in flight; recv() it first`);
    }
    return ids;
  }

  /** Resets the given envs (default all); returns their first observations (and the task), in `envIds` order. */
  async reset(envIds?: readonly number[], options?: ResetOptions): Promise<({ envId: number } & ResetResult)[]> {
    const ids = this.ids(envIds);
    return Promise.all(
      ids.map(async (envId) => {
        const { observation, info } = await this.envs[envId]!.reset(options ?? this.options.nextTask?.(envId) ?? {});
        this.ended[envId] = false;
        return { envId, observation, info };
      }),
    );
  }

  /** Steps every env with its action and waits for all; results in env order. */
  async step(actions: readonly string[]): Promise<EnvStep[]> {
    if (actions.length !== this.numEnvs) throw new EnvStateError(`step() needs ${this.numEnvs} actions, got ${actions.length}`);
    const ids = this.ids(undefined);
    this.refuseEnded(ids);
    return Promise.all(ids.map((envId) => this.stepOne(envId, actions[envId]!)));
  }

  /** Starts one step on each of `envIds` (default all) without waiting. */
  send(actions: readonly string[], envIds?: readonly number[]): void {
    const ids = this.ids(envIds);
    if (actions.length !== ids.length) throw new EnvStateError(`send() got ${actions.length} actions for ${ids.length} envs`);
    this.refuseEnded(ids);
    ids.forEach((envId, k) => {
      const running = this.stepOne(envId, actions[k]!).then(
        (result) => void this.done.push(result),
        (error: unknown) => void this.failures.push({ envId, error }),
      );
      const tracked = running.finally(() => {
        this.inFlight.delete(envId);
        this.wake?.();
      });
      this.inFlight.set(envId, tracked);
    });
  }

  /**
   * The steps that finished first: waits until `batchSize` (default 1, at most the number
   * in flight plus finished) are done, returns them in finishing order.
   * @throws VecStepError naming the env, with the first step error that was not a lost
   * sandbox (those come back as truncated steps) as its cause.
   */
  async recv(batchSize = 1): Promise<EnvStep[]> {
    for (;;) {
      const failure = this.failures.shift();
      if (failure) throw new VecStepError(failure.envId, failure.error);
      const want = Math.min(batchSize, this.done.length + this.inFlight.size);
      if (want === 0) throw new EnvStateError('recv() with nothing sent');
      if (this.done.length >= want) return this.done.splice(0, want);
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Without autoreset, stepping an ended env is refused before any env is stepped. */
  private refuseEnded(ids: readonly number[]): void {
    if (this.autoresetMode !== 'disabled') return;
    const ended = ids.filter((id) => this.ended[id]);
    if (ended.length > 0) throw new EnvStateError(`env ${ended.join(', ')}: the episode has ended; reset([${ended.join(', ')}]) first`);
  }

  private async stepOne(envId: number, action: string): Promise<EnvStep> {
    const env = this.envs[envId]!;
    if (this.ended[envId]) {
      const { observation } = await env.reset(this.options.nextTask?.(envId) ?? {});
      this.ended[envId] = false;
      return { envId, observation, reward: 0, terminated: false, truncated: false, info: { actionExecuted: false, exitCode: null, durationMs: 0, events: [], autoreset: true } };
    }
    const result: StepResult = await env.step(action);
    const over = result.terminated || result.truncated;
    if (over) this.ended[envId] = true;
    if (over && this.autoresetMode === 'same-step') {
      const { observation } = await env.reset(this.options.nextTask?.(envId) ?? {});
      this.ended[envId] = false;
      return { envId, ...result, observation, info: { ...result.info, finalObservation: result.observation } };
    }
    return { envId, ...result };
  }

  /**
   * Continues env `envId`'s episode in `n` free slots (ended, nothing in flight: the lowest
   * ids first) as independent episodes from its current step (see SandboxEnv.fork); env
   * `envId` goes on unchanged. All or none: a slot that fails is left ended, the others too.
   * @returns the slots' ids.
   * @throws EnvStateError when the env has no live episode, fewer than `n` slots are free, or it cannot checkpoint.
   */
  async fork(envId: number, n: number): Promise<number[]> {
    const [source] = this.ids([envId]);
    const env = this.envs[source!]!;
    if (this.ended[source!]) throw new EnvStateError(`env ${envId} has no episode under way to fork`);
    if (!isCheckpointable(env)) throw new EnvStateError(`env ${envId} (${env.id}) cannot checkpoint its episodes`);
    const free = this.envs.map((_, id) => id).filter((id) => id !== source && this.ended[id] && !this.inFlight.has(id));
    if (free.length < n) throw new EnvStateError(`fork(${envId}, ${n}) needs ${n} free slots; ${free.length} are free`);
    const slots = free.slice(0, n);
    const targets = slots.map((id) => this.envs[id]!).filter(isCheckpointable);
    if (targets.length < n) throw new EnvStateError(`fork(${envId}, ${n}): a free slot's env cannot restore a checkpoint`);
    const checkpoint = await env.checkpoint();
    try {
      await Promise.all(targets.map((target: CheckpointableEnv) => target.restore(checkpoint)));
      for (const id of slots) this.ended[id] = false;
      return slots;
    } finally {
      env.releaseCheckpoint(checkpoint);
    }
  }

  /** Waits for steps in flight, then closes every env. */
  async close(): Promise<void> {
    await Promise.allSettled(this.inFlight.values());
    await Promise.all(this.envs.map((env) => env.close()));
    await this.options.onClose?.();
  }
}
