/**
 * Demonstrations as JSON Lines, one episode per line, in a flat schema the Hugging Face
 * `datasets` JSON loader reads as columns: `env`, `task_id`, `query` (strings), `actions`,
 * `observations` (lists of strings, `observations[i]` being the output of `actions[i]`),
 * `rewards` (list of floats, one per action), `reward` (float: the episode's final reward),
 * `terminated`, `truncated` (booleans) and `policy` (string); a truncated episode also has
 * `truncation` (string: `reason: message`, e.g. `reward-missing: the verifier wrote neither…`):
 * its `reward` 0.0 is no score. Rewards are always written with a decimal point (`1.0`, not
 * `1`) so a column is never inferred as integers.
 */
import { readFileSync, statSync } from 'node:fs';
import { parseJson } from '../../src/datasets/json.js';
import { DatasetError, TrajectoryError } from '../../src/errors.js';
import { unscoredRollout, type Rollout } from '../../src/policy/index.js';
import { assembleEpisodes, type Episode, type Transition } from '../buffer/types.js';
import { readTransitions } from '../buffer/replay-buffer.js';

export interface DemoEpisode {
  env: string;
  task_id: string;
  query: string;
  actions: string[];
  observations: string[];
  rewards: number[];
  reward: number;
  terminated: boolean;
  truncated: boolean;
  /** Why a truncated episode got no reward (`reason: message`); absent (or null, in a rollout record) when it was scored. */
  truncation?: string | null;
  policy: string;
}

/** A played episode as a demonstration. */
export function demoFromRollout(env: string, played: Rollout, policy: string): DemoEpisode {
  return {
    env,
    task_id: played.task.id,
    query: played.task.query,
    actions: played.turns.map((t) => t.action),
    observations: played.turns.map((t) => t.observation),
    rewards: played.turns.map((t) => t.reward),
    reward: played.reward,
    terminated: played.terminated,
    truncated: played.truncated,
    ...truncationOf(played),
    policy,
  };
}

function truncationOf(played: Rollout): { truncation?: string } {
  const unscored = unscoredRollout(played);
  return unscored ? { truncation: `${unscored.reason}: ${unscored.message}` } : {};
}

/** The demonstration's transitions, under episode id `episode`; `info` records the policy (and, on the last, a truncated episode's `truncation`). */
export function demoTransitions(demo: DemoEpisode, episode: string): Transition[] {
  const last = demo.actions.length - 1;
  return demo.actions.map((action, step) => ({
    episode,
    step,
    env: demo.env,
    taskId: demo.task_id,
    query: demo.query,
    observation: step === 0 ? demo.query : demo.observations[step - 1]!,
    previousAction: step === 0 ? '' : demo.actions[step - 1]!,
    action,
    reward: demo.rewards[step]!,
    nextObservation: demo.observations[step]!,
    terminated: step === last && demo.terminated,
    truncated: step === last && demo.truncated,
    info: { policy: demo.policy, ...(step === last && typeof demo.truncation === 'string' ? { truncation: demo.truncation } : {}) },
  }));
}

/** A whole buffered episode as a demonstration. */
export function demoFromEpisode(episode: Episode): DemoEpisode {
  const last = episode.transitions.at(-1)!;
  return {
    env: episode.env,
    task_id: episode.taskId,
    query: episode.query,
    actions: episode.transitions.map((t) => t.action),
    observations: episode.transitions.map((t) => t.nextObservation),
    rewards: episode.transitions.map((t) => t.reward),
    reward: episode.reward,
    terminated: last.terminated,
    truncated: last.truncated,
    ...(typeof last.info.truncation === 'string' ? { truncation: last.info.truncation } : {}),
    policy: typeof last.info.policy === 'string' ? last.info.policy : 'unknown',
  };
}

const float = (x: number) => (Number.isInteger(x) ? x.toFixed(1) : JSON.stringify(x));

/** One JSONL line (without the newline). */
export function formatDemoLine(demo: DemoEpisode): string {
  const s = JSON.stringify;
  return (
    `{"env":${s(demo.env)},"task_id":${s(demo.task_id)},"query":${s(demo.query)},"actions":${s(demo.actions)},` +
    `"observations":${s(demo.observations)},"rewards":[${demo.rewards.map(float).join(',')}],"reward":${float(demo.reward)},` +
    `"terminated":${demo.terminated},"truncated":${demo.truncated},${typeof demo.truncation === 'string' ? `"truncation":${s(demo.truncation)},` : ''}"policy":${s(demo.policy)}}`
  );
}

function checkDemo(value: unknown, file: string, line: number): DemoEpisode {
  const fail = (field: string | undefined, problem: string): never => {
    throw new TrajectoryError({ file, line, ...(field ? { field } : {}) }, problem);
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(undefined, 'an episode must be a JSON object');
  const record = value as Record<string, unknown>;
  const text = (field: string) => (typeof record[field] === 'string' ? (record[field] as string) : fail(field, 'must be a string'));
  const list = <T>(field: string, kind: 'string' | 'number'): T[] => {
    const items = record[field];
    if (!Array.isArray(items) || items.some((x) => typeof x !== kind)) fail(field, `must be a list of ${kind}s`);
    return items as T[];
  };
  const actions = list<string>('actions', 'string');
  const observations = list<string>('observations', 'string');
  const rewards = list<number>('rewards', 'number');
  if (actions.length === 0) fail('actions', 'is empty');
  if (observations.length !== actions.length) fail('observations', `has ${observations.length} entries for ${actions.length} actions`);
  if (rewards.length !== actions.length) fail('rewards', `has ${rewards.length} entries for ${actions.length} actions`);
  const flag = (field: string) => (record[field] === undefined ? false : typeof record[field] === 'boolean' ? (record[field] as boolean) : fail(field, 'must be a boolean'));
  const reward = record.reward === undefined ? rewards.at(-1)! : typeof record.reward === 'number' ? record.reward : fail('reward', 'must be a number');
  return {
    env: text('env'),
    task_id: typeof record.task_id === 'number' ? String(record.task_id) : text('task_id'),
    query: text('query'),
    actions,
    observations,
    rewards,
    reward,
    terminated: flag('terminated'),
    truncated: flag('truncated'),
    ...(record.truncation === undefined || record.truncation === null ? {} : { truncation: text('truncation') }),
    policy: record.policy === undefined ? 'unknown' : text('policy'),
  };
}

/**
 * Parses demonstrations from JSONL text (blank lines skipped).
 * @throws TrajectoryError naming the file, line and field of the first bad episode.
 */
export function parseDemos(text: string, file: string): DemoEpisode[] {
  const demos: DemoEpisode[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = parseJson(raw, { file, line: i + 1 });
    } catch (error) {
      if (!(error instanceof DatasetError)) throw error;
      throw new TrajectoryError(error.location, String(error.details.problem), error.cause);
    }
    demos.push(checkDemo(value, file, i + 1));
  });
  return demos;
}

/**
 * Demonstrations from a JSONL file or a replay-buffer directory (its complete episodes).
 * @throws TrajectoryError for a missing or malformed file.
 */
export function loadDemos(path: string): DemoEpisode[] {
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch (error) {
    throw new TrajectoryError({ file: path }, 'cannot be read (missing?)', error);
  }
  if (!isDir) return parseDemos(readFileSync(path, 'utf8'), path);
  return assembleEpisodes(readTransitions(path)).map(demoFromEpisode);
}
