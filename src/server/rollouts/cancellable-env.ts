import { TaskEnvWrapper } from '../../env/task-env-wrapper.js';
import type { ResetOptions, ResetResult, Score, StepOptions, StepResult, TaskEnv } from '../../env/types.js';
import { EpisodeCancelledError } from '../../errors.js';

/**
 * An env whose episode stops at its next call once `signal` aborts: reset, step and
 * peekScore throw {@link EpisodeCancelledError} instead of touching the sandbox, so a
 * rollout whose client went away ends within one action and its env (and sandbox) goes
 * back to the server's slots. Closing is left to the slots' owner.
 */
export class CancellableEnv extends TaskEnvWrapper {
  constructor(
    env: TaskEnv,
    private readonly signal: AbortSignal,
  ) {
    super(env);
  }

  override reset(options?: ResetOptions): Promise<ResetResult> {
    this.check();
    return this.env.reset(options);
  }

  override step(action: string, options?: StepOptions): Promise<StepResult> {
    this.check();
    return this.env.step(action, options);
  }

  override peekScore(submission?: string): Promise<Score> {
    this.check();
    return this.env.peekScore(submission);
  }

  override async close(): Promise<void> {}

  private check(): void {
    if (this.signal.aborted) throw new EpisodeCancelledError(String(this.signal.reason ?? 'cancelled'));
  }
}
