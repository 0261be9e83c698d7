/**
 * One episode of a recorded InterCode evaluation file, normalised.
 */

import { TrajectoryError, type DataLocation } from '../errors.js';

/** A recorded episode in our names; `raw` keeps the episode object exactly as found. */
export interface RecordedEpisode {
  /** The task's 0-based index in its dataset (the episode's key in the file). */
  taskIndex: number;
  query: string;
  /** `actions[k]`, `observations[k]`, `rewards[k]`, `validActions[k]` belong to turn k. */
  actions: string[];
  observations: string[];
  /** The reward the episode would have got if submitted right after action k. */
  rewards: number[];
  validActions: boolean[];
  /**
   * Turn k's reply held no code (the recorded observation is the prompt template's retry
   * message, `valid_action` false, reward 0): InterCode's scripts neither ran nor scored it.
   */
  noCode: boolean[];
  /**
   * 1 when the model's API refused the last reply (PaLM's safety filter): InterCode's script
   * logged the action `blocked` with reward 0 and no observation, counted it as a turn
   * (`summary.turns_taken`) and ended the episode; it was never executed. It is not in
   * `actions`, `observations`, `rewards` or `validActions`. 0 otherwise.
   */
  blockedTurns: number;
  /** `summary.max_reward` as recorded; the task counts as solved when it is 1. */
  maxReward: number;
  raw: unknown;
}

type Fail = (field: string, problem: string) => never;

function describeType(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : typeof value;
}

function asObject(value: unknown, field: string, fail: Fail): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail(field, `must be an object, got ${describeType(value)}`);
  }
  return value as Record<string, unknown>;
}

function listOf<T>(value: unknown, field: string, what: string, ok: (item: unknown) => item is T, fail: Fail): T[] {
  if (value === undefined) fail(field, 'missing');
  if (!Array.isArray(value)) fail(field, `must be an array, got ${describeType(value)}`);
  value.forEach((item: unknown, i) => {
    if (!ok(item)) fail(field, `entry ${i + 1} must be ${what}, got ${describeType(item)}`);
  });
  return value as T[];
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isValidFlag = (v: unknown): v is boolean | null => typeof v === 'boolean' || v === null;

/** The action InterCode's scripts logged when the model's API refused to answer (PaLM). */
export const BLOCKED_ACTION = 'blocked';

/**
 * The observation InterCode's prompt templates gave for a reply without code: `No SQL code
 * was found in your last response.…` (multi-turn), `Format your BASH command as follows:…`
 * (the PaLM templates), `…did not contain sql code` (ReAct).
 */
export const NO_CODE_OBSERVATION = /^(?:No \w+ code was found in your last response|No executable \w+ code was found in your last response|Format your \w+ command as follows:)|did not contain \w+ code/;

/**
 * Normalises one episode object (see {@link readRecordedTrajectories} for the layouts).
 *
 * - `valid_action` entries that are `null` become `true`: InterCode's multi-turn script
 *   never sets the flag for Python code it ran (it stays `None`), and sets `false` only
 *   for replies that held no code.
 * - An episode with no actions may carry one reward and one `valid_action` for the final
 *   submit alone (sql plan-and-solve, a plan that produced no step); those are dropped.
 * - PaLM's logs (chat-bison, text-bison) end an episode whose last reply the API refused
 *   with the action `blocked` and reward 0, without observation or `valid_action`: that
 *   turn is taken out of the lists and counted in `blockedTurns` (see {@link RecordedEpisode}).
 * - `valid_action` may be absent (InterCode's CTF script did not record it): every turn
 *   then counts as valid.
 *   Any other length mismatch between the four lists is an error.
 *
 * @returns the normalised episode.
 * @throws TrajectoryError naming file, episode key and field for a missing or mistyped
 *   `query`, `turn_history` list or `summary.max_reward`, or lists of different lengths.
 */
export function toRecordedEpisode(key: string, value: unknown, file: string): RecordedEpisode {
  const location: DataLocation = { file, episode: key };
  const fail: Fail = (field, problem) => {
    throw new TrajectoryError({ ...location, field }, problem);
  };
  if (!/^(0|[1-9]\d*)$/.test(key)) {
    throw new TrajectoryError(location, 'the key is not a task index (a non-negative integer)');
  }
  const episode = asObject(value, 'episode', fail);
  const query = episode.query;
  if (query === undefined) fail('query', 'missing');
  if (typeof query !== 'string') fail('query', `must be a string, got ${describeType(query)}`);
  if (episode.turn_history === undefined) fail('turn_history', 'missing');
  const history = asObject(episode.turn_history, 'turn_history', fail);
  let actions = listOf(history.actions, 'turn_history.actions', 'a string', isString, fail);
  const observations = listOf(history.observations, 'turn_history.observations', 'a string', isString, fail);
  let rewards = listOf(history.rewards, 'turn_history.rewards', 'a number', isNumber, fail);
  let flags =
    history.valid_action === undefined
      ? actions.map(() => true)
      : listOf(history.valid_action, 'turn_history.valid_action', 'true, false or null', isValidFlag, fail);
  let blockedTurns = 0;
  const last = actions.length - 1;
  if (
    actions[last] === BLOCKED_ACTION &&
    observations.length === last &&
    rewards.length === actions.length &&
    rewards[last] === 0 &&
    (history.valid_action === undefined || flags.length === last)
  ) {
    blockedTurns = 1;
    actions = actions.slice(0, last);
    rewards = rewards.slice(0, last);
    flags = flags.slice(0, last);
  }
  if (actions.length === 0 && rewards.length <= 1 && flags.length <= 1) {
    rewards = [];
    flags = [];
  }
  const lists: [string, unknown[]][] = [['observations', observations], ['rewards', rewards], ['valid_action', flags]];
  for (const [name, list] of lists) {
    if (list.length !== actions.length) {
      fail(`turn_history.${name}`, `has ${list.length} entries but turn_history.actions has ${actions.length}`);
    }
  }
  if (episode.summary === undefined) fail('summary', 'missing');
  const summary = asObject(episode.summary, 'summary', fail);
  const maxReward = summary.max_reward;
  if (maxReward === undefined) fail('summary.max_reward', 'missing');
  if (!isNumber(maxReward)) fail('summary.max_reward', `must be a number, got ${describeType(maxReward)}`);
  return {
    taskIndex: Number(key),
    query,
    actions: [...actions],
    observations: [...observations],
    rewards: [...rewards],
    validActions: flags.map((flag) => flag !== false),
    noCode: actions.map((_, k) => flags[k] === false && rewards[k] === 0 && NO_CODE_OBSERVATION.test(observations[k]!)),
    blockedTurns,
    maxReward,
    raw: value,
  };
}
