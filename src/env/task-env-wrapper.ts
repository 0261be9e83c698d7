import type { Task } from '../datasets/index.js';
import { CheckpointError } from '../errors.js';
import { isForkable, type ForkableEnv, type ResetOptions, type ResetResult, type Score, type StepOptions, type StepResult, type TaskEnv } from './types.js';

/**
 * An env in front of another (Gymnasium's `Wrapper`): every call goes to the wrapped env
 * unless a subclass overrides it, so a wrapper says only what it changes. The wrapped env
 * is given, or found at each call (a slot whose env is the VecEnv's). Not forkable: a
 * wrapper that passes forks on extends {@link ForkingTaskEnvWrapper}.
 */
export class TaskEnvWrapper implements TaskEnv {
  private readonly wrapped: () => TaskEnv;

  constructor(env: TaskEnv | (() => TaskEnv)) {
    this.wrapped = typeof env === 'function' ? env : () => env;
  }

  /** The env this one wraps. */
  protected get env(): TaskEnv {
    return this.wrapped();
  }

  /** The env under every wrapper (Gymnasium's `unwrapped`). */
  get unwrapped(): TaskEnv {
    return unwrapped(this.env);
  }

  get id(): string {
    return this.env.id;
  }

  get tasks(): readonly Task[] {
    return this.env.tasks;
  }

  reset(options?: ResetOptions): Promise<ResetResult> {
    return this.env.reset(options);
  }

  step(action: string, options?: StepOptions): Promise<StepResult> {
    return this.env.step(action, options);
  }

  peekScore(submission?: string): Promise<Score> {
    return this.env.peekScore(submission);
  }

  /** The wrapped env's, where it keeps them; undefined otherwise. */
  async goldDurationMs(task: Task): Promise<number | undefined> {
    return this.env.goldDurationMs?.(task);
  }

  close(): Promise<void> {
    return this.env.close();
  }
}

/** The env under every {@link TaskEnvWrapper} of `env`: `env` itself when it is no wrapper. */
export function unwrapped(env: TaskEnv): TaskEnv {
  return env instanceof TaskEnvWrapper ? env.unwrapped : env;
}

/** A {@link TaskEnvWrapper} that passes forks on to the wrapped env. */
export class ForkingTaskEnvWrapper extends TaskEnvWrapper implements ForkableEnv {
  /** The wrapped env's fork. @throws CheckpointError CHECKPOINT_UNSUPPORTED when it has none. */
  fork(n: number): Promise<TaskEnv[]> {
    const env = this.env;
    if (!isForkable(env)) return Promise.reject(new CheckpointError('CHECKPOINT_UNSUPPORTED', `${env.id} cannot fork its episodes`));
    return env.fork(n);
  }
}
