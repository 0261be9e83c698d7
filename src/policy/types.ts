import type { Task } from '../datasets/index.js';
import type { StepInfo } from '../env/types.js';

/** What a policy knows when an episode starts. */
export interface EpisodeContext {
  /** The env's CLI name: bash, sql, python, ctf… (prompts differ per env). */
  envName: string;
  task: Task;
  /** The first observation: the task's natural-language query (plus whatever the env adds, e.g. a schema). */
  query: string;
  /** Actions this episode may take before it is cut off. */
  turnLimit: number;
  /** Sampling seed of this episode (LLM policies send it with each request); omitted: none. */
  seed?: number;
}

/** One action and what came of it. */
export interface Turn {
  action: string;
  observation: string;
  reward: number;
  info: StepInfo;
}

/**
 * Anything that acts in an env: a gold or recorded policy, an LLM prompting strategy, a
 * trained network. One interface, so any policy can collect demonstrations, be
 * evaluated, or be trained against.
 */
export interface Policy {
  readonly name: string;
  /** Starts one episode; the agent it returns is used for that episode only. */
  begin(context: EpisodeContext): Agent | Promise<Agent>;
}

export interface Agent {
  /**
   * The next action, given the episode so far (empty before the first action). Returning
   * `submit` (or an env's `submit …` form) or `skip` ends the episode.
   */
  act(history: readonly Turn[]): Promise<string>;
}
