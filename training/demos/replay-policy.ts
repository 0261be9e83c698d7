import { TrajectoryError } from '../../src/errors.js';
import type { Agent, EpisodeContext, Policy } from '../../src/policy/index.js';
import type { DemoEpisode } from './demo-episode.js';

/** Plays recorded demonstrations back: for each task, the actions of its first recorded episode. */
export class ReplayPolicy implements Policy {
  readonly name: string;
  private readonly byTask = new Map<string, string[]>();

  constructor(private readonly file: string, demos: readonly DemoEpisode[]) {
    this.name = `replay:${file}`;
    for (const demo of demos) if (!this.byTask.has(demo.task_id)) this.byTask.set(demo.task_id, demo.actions);
  }

  /** Whether a recording exists for `taskId`. */
  covers(taskId: string): boolean {
    return this.byTask.has(taskId);
  }

  /** @throws TrajectoryError when the file has no episode of the task. */
  begin(context: EpisodeContext): Agent {
    const actions = this.byTask.get(context.task.id);
    if (!actions) throw new TrajectoryError({ file: this.file, episode: context.task.id }, 'no recorded episode of this task');
    return { act: async (history) => actions[history.length] ?? 'submit' };
  }
}
