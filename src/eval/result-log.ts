/**
 * Result logs in the layout of InterCode's evaluation scripts (experiments/eval_*.py): one
 * JSON object keyed by task index, each episode with its `turn_history` and `summary`, so
 * the paper's analysis reads our runs unchanged. Fields after `hardness` are ours.
 */

import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EpisodeUsage } from '../agents/index.js';

export interface TurnHistory {
  actions: string[];
  observations: string[];
  /** The reward fed back after each action: the episode's score had it been submitted then (every-step), else the submit's. */
  rewards: number[];
  /** false: the reply held no action, or the action did not run successfully (InterCode's `action_executed`). */
  valid_action: boolean[];
  /** The model's raw reply per turn (ours; `submit` added by the runner at the turn limit has none: ''). */
  replies: string[];
  /** The named parts of each turn's reward (bash: file_diff, file_changes, answer_similarity; SQL: iou, kendall_tau; Python: passed, tests; CTF: flag); null where nothing was scored (ours). */
  reward_components: (Record<string, number> | null)[];
}

export interface EvalEpisodeLog {
  environment: string;
  dataset: string;
  task_id: number;
  query: string;
  turn_history: TurnHistory;
  summary: {
    max_reward: number;
    /** Index of the first turn with the best reward; -1 when the episode has no turn. */
    max_reward_idx: number;
    turns_taken: number;
    turns_max: number;
  };
  hardness?: string;
  usage: EpisodeUsage;
  /** Why the episode was cut off (the sandbox lost, the verifier gave no reward…), when it was (the rewards before it still count). */
  truncated?: string;
  /**
   * Present when the episode was cut off before any of its turns was scored (on-submit: a
   * submit whose verifier gave no reward): `summary.max_reward` 0 is then no score, and the
   * summary leaves the episode out of its mean. `reason` is `info.truncation`'s.
   */
  not_scored?: { reason: string; message: string };
}

/** InterCode's name for a run's log file: `ic_<env>_<strategy>_<model>_<turns>_turns.json`. */
export function resultLogName(env: string, strategy: string, model: string, turns: number): string {
  const slug = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '-');
  return `ic_${slug(env)}_${slug(strategy)}_${slug(model)}_${turns}_turns.json`;
}

/**
 * Writes every episode as one InterCode result file (2-space JSON keyed by task index, in
 * index order); the file is replaced atomically.
 * @returns the file's path.
 */
export async function writeResultLog(dir: string, name: string, episodes: readonly EvalEpisodeLog[]): Promise<string> {
  const keyed: Record<string, EvalEpisodeLog> = {};
  for (const e of [...episodes].sort((a, b) => a.task_id - b.task_id)) keyed[String(e.task_id)] = e;
  const path = join(dir, name);
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(keyed, null, 2)}\n`);
  await rename(temp, path);
  return path;
}
