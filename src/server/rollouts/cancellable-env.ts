import type { ResetOptions, ResetResult, Score, StepResult, TaskEnv } from '../../env/types.js';
import { EpisodeCancelledError } from '../../errors.js';

/**
 * An env whose episode stops at its next call once `signal` aborts: reset, step and
 * peekScore throw {@link EpisodeCancelledError} instead of touching the sandbox, so a
 * rollout whose client went away ends within one action and its env (and sandbox) goes
 * back to the server's slots. Closing is left to the slots' owner.
 */
export class CancellableEnv implements TaskEnv {
  constructor(
    private readonly env: TaskEnv,
    private readonly signal: AbortSignal,
  ) {}

  get id(): string {
    return this.env.id;
  }

  get tasks() {
    return this.env.tasks;
  }

  reset(options?: ResetOptions): Promise<ResetResult> {
    this.check();
    return this.env.reset(options);
  }

  step(action: string): Promise<StepResult> {
    this.check();
    return this.env.step(action);
  }

  peekScore(submission?: string): Promise<Score> {
    this.check();
    return this.env.peekScore(submission);
  }

  async close(): Promise<void> {}

  private check(): void {
    if (this.signal.aborted) throw new EpisodeCancelledError(String(this.signal.reason ?? 'cancelled'));
  }
}
