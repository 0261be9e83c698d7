import type { Task } from '../../src/datasets/index.js';
import type { ResetResult, Score, StepResult, TaskEnv } from '../../src/env/types.js';

/**
 * A TaskEnv without Docker: an action "runs" by echoing it (exit 1 when it starts with
 * `bad`); the score is 1 when the last action equals the gold, 0.5 when it contains it, else 0.
 */
export class FakeEnv implements TaskEnv {
  readonly id = 'fake';
  readonly resets: number[] = [];
  private task: Task | undefined;
  private last = '';
  constructor(readonly tasks: readonly Task[]) {}

  async reset(options: { task?: number | Task } = {}): Promise<ResetResult> {
    this.task = typeof options.task === 'object' ? options.task : this.tasks[options.task ?? 0]!;
    this.resets.push(this.task.index);
    this.last = '';
    return { observation: this.task.query, info: { task: this.task } };
  }

  async step(action: string): Promise<StepResult> {
    if (action.startsWith('submit')) {
      const score = await this.peekScore();
      return { observation: '', reward: score.reward, terminated: true, truncated: false, info: { actionExecuted: true, exitCode: 0, durationMs: 0, events: [], score } };
    }
    this.last = action;
    const ok = !action.startsWith('bad');
    return { observation: `ran ${action}`, reward: 0, terminated: false, truncated: false, info: { actionExecuted: ok, exitCode: ok ? 0 : 1, durationMs: 1, events: [] } };
  }

  async peekScore(): Promise<Score> {
    const gold = String(this.task!.gold);
    const reward = this.last === gold ? 1 : this.last.includes(gold) ? 0.5 : 0;
    return { reward, parts: { gold_match: reward }, details: {} };
  }

  async close(): Promise<void> {}
}

export const task = (index: number, query: string, gold: string, metadata: Record<string, unknown> = {}): Task => ({
  index,
  id: String(index),
  query,
  gold,
  metadata,
});
