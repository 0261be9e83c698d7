/**
 * Reading the evaluation logs that InterCode's own experiment scripts wrote.
 */

import { readFile } from 'node:fs/promises';
import { parseJson } from '../datasets/json.js';
import { DatasetError, TrajectoryError } from '../errors.js';
import { toRecordedEpisode, type RecordedEpisode } from './recorded-episode.js';

/** The two top-level layouts of recorded evaluation files. */
export type RecordedLayout = 'keyed' | 'meta-logs';

function isIndexKey(key: string): boolean {
  return /^(0|[1-9]\d*)$/.test(key);
}

/**
 * Tells which layout a parsed file has and returns its episodes object.
 * `meta-logs` when the top level has a `logs` object and no task-index keys.
 */
export function episodesOf(data: unknown, file: string): { layout: RecordedLayout; episodes: Record<string, unknown> } {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    const got = data === null ? 'null' : Array.isArray(data) ? 'an array' : typeof data;
    throw new TrajectoryError({ file }, `must be an object keyed by task index, got ${got}`);
  }
  const top = data as Record<string, unknown>;
  const keys = Object.keys(top);
  if ('logs' in top && !keys.some(isIndexKey)) {
    const logs = top.logs;
    if (logs === null || typeof logs !== 'object' || Array.isArray(logs)) {
      throw new TrajectoryError({ file, field: 'logs' }, 'must be an object keyed by task index');
    }
    return { layout: 'meta-logs', episodes: logs as Record<string, unknown> };
  }
  return { layout: 'keyed', episodes: top };
}

/**
 * Reads one recorded InterCode evaluation file (the GPT-3.5 runs behind the paper's
 * tables) and normalises every episode to a {@link RecordedEpisode}.
 *
 * Layouts found in the published files:
 *
 * - **keyed**: a JSON object whose keys are task indices (`"0"`, `"1"`, …, possibly with
 *   gaps), each value one episode. Written by the multi-turn (`*_multiturn_*`), ReAct
 *   (`*_react_*`) scripts, and by the plan-and-solve script for `ic_bash_plan_solve_fs_1`.
 * - **meta-logs**: `{ "meta": {run arguments: data_path, env, image_name, refine,
 *   refine_turns, seed, …}, "logs": {task index → episode} }`. Written by the
 *   plan-and-solve script for the other plan-and-solve files (bash fs 2–4, bash and sql
 *   plan-solve-refine, sql plan-solve). `meta` is not part of the result.
 *
 * Every episode, in both layouts, has `query`, `turn_history` with the parallel lists
 * `actions`, `observations`, `rewards`, `valid_action`, and `summary.max_reward`; these
 * map to `query`, `actions`, `observations`, `rewards`, `validActions`, `maxReward`, and
 * the key to `taskIndex`. What differs stays in `raw`: ReAct episodes add
 * `turn_history.thoughts`; plan-and-solve episodes add `turn_history.steps` (the plan,
 * whose length differs from the actions' when refinement added turns) and have no
 * `summary.turns_taken`; bash multi-turn and all plan-and-solve episodes add `info`
 * (the reward details of the last submit); sql episodes add `hardness`; python episodes
 * have `valid_action` entries of `null`. See
 * {@link toRecordedEpisode} for `null` validity flags and the no-action episode.
 *
 * @returns the episodes in ascending task-index order.
 * @throws TrajectoryError naming the file (and episode key and field where there is one)
 *   when the file cannot be read, is not valid JSON, has another top level, holds no
 *   episodes, or an episode is malformed.
 */
export async function readRecordedTrajectories(path: string): Promise<RecordedEpisode[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new TrajectoryError({ file: path }, `cannot read the file (${code})`, error);
  }
  let data: unknown;
  try {
    data = parseJson(text, { file: path });
  } catch (error) {
    if (!(error instanceof DatasetError)) throw error;
    throw new TrajectoryError(error.location, String(error.details.problem), error.cause);
  }
  const { episodes } = episodesOf(data, path);
  const entries = Object.entries(episodes);
  if (entries.length === 0) throw new TrajectoryError({ file: path }, 'the file holds no episodes');
  return entries
    .map(([key, value]) => toRecordedEpisode(key, value, path))
    .sort((a, b) => a.taskIndex - b.taskIndex);
}
