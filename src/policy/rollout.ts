import type { Task } from '../datasets/index.js';
import type { TaskEnv } from '../env/types.js';
import type { Policy, Turn } from './types.js';

export interface RolloutOptions {
  envName: string;
  task: Task;
  /** Actions before the episode is cut off (default 10). */
  turnLimit?: number;
  /** At the turn limit, submit (InterCode's evaluation scored the final state) rather than leave it truncated. Default true. */
  submitAtLimit?: boolean;
}

export interface Rollout {
  task: Task;
  turns: Turn[];
  /** The final reward: the submit's, else 0. */
  reward: number;
  terminated: boolean;
  truncated: boolean;
  /** Why it was truncated, when it was. */
  truncation?: string;
}

/** Plays one episode of `policy` in `env` (reset, act until the episode ends or the turn limit). */
export async function rollout(env: TaskEnv, policy: Policy, options: RolloutOptions): Promise<Rollout> {
  const turnLimit = options.turnLimit ?? 10;
  const { observation } = await env.reset({ task: options.task });
  const agent = await policy.begin({ envName: options.envName, task: options.task, query: observation, turnLimit });
  const turns: Turn[] = [];
  const record = async (action: string) => {
    const result = await env.step(action);
    turns.push({ action, observation: result.observation, reward: result.reward, info: result.info });
    return result;
  };
  while (turns.length < turnLimit) {
    const result = await record(await agent.act(turns));
    if (result.terminated || result.truncated) {
      return { task: options.task, turns, reward: result.reward, terminated: result.terminated, truncated: result.truncated, ...(result.truncated ? { truncation: result.info.truncation?.message ?? 'truncated' } : {}) };
    }
  }
  if (options.submitAtLimit ?? true) {
    const end = await record('submit');
    return { task: options.task, turns, reward: end.reward, terminated: end.terminated, truncated: end.truncated, ...(end.truncated ? { truncation: end.info.truncation?.message ?? 'truncated' } : {}) };
  }
  return { task: options.task, turns, reward: 0, terminated: false, truncated: true, truncation: `turn limit ${turnLimit} reached` };
}
