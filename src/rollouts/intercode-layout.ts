/**
 * Rollout files back to InterCode's evaluation-log layout (one JSON object keyed by task
 * index, each episode's `turn_history` and `summary`), which `intercode replay` re-executes
 * and re-scores. Reads our rollout records, hf-messages lines (their `actions`,
 * `observations`, `rewards`, `valid_action`, `executed` columns) and ATIF trajectories
 * (their agent steps' `extra.turns` and `extra.runner_turns`). An episode that was not
 * scored keeps its `not_scored` (reason, message) beside `summary.max_reward` 0, as our result
 * logs write it. Turns whose action never
 * ran (a reply without an action) are left out: they changed nothing, and replay would
 * run the reply's text.
 */

import { TrajectoryError } from '../errors.js';
import { readJsonLines } from './json-line.js';

/** One episode's turns, whatever format it came from. */
export interface EpisodeTurns {
  env: string;
  taskIndex: number;
  query: string;
  sampleIndex: number;
  reward: number;
  /** The named parts of `reward`, where the file kept them (rollouts written before they were recorded: null). */
  rewardComponents: Record<string, number> | null;
  /** The prompting strategy that played it (how its rewards were scored), where the file names one. */
  strategy: string | null;
  /** The line's session id, where it has one. */
  sessionId: string | null;
  /** Why the episode was not scored (the line's `not_scored`: its `reward` 0 is no score); null when it was scored or the file says nothing. */
  notScored: { reason: string; message: string } | null;
  turns: { action: string; observation: string; reward: number; valid: boolean; executed: boolean }[];
}

/** A `{name: number}` object, else null. */
function componentsOf(value: unknown): Record<string, number> | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const entries = Object.entries(value as Record<string, unknown>);
  return entries.every(([, v]) => typeof v === 'number') ? (value as Record<string, number>) : null;
}

/** A `{reason, message}` object (a line's `not_scored`), else null. */
function notScoredOf(value: unknown): EpisodeTurns['notScored'] {
  if (value === null || typeof value !== 'object') return null;
  const { reason, message } = value as Record<string, unknown>;
  return typeof reason === 'string' && typeof message === 'string' ? { reason, message } : null;
}

type Fail = (field: string | undefined, problem: string) => never;

/** Reads a rollout file (JSON Lines in any of the three formats, mixed lines allowed). @throws TrajectoryError naming file, line and field. */
export function readEpisodeTurns(file: string): EpisodeTurns[] {
  const episodes = readJsonLines(file).map(({ value, line: lineNo }) => {
    const fail: Fail = (field, problem) => {
      throw new TrajectoryError({ file, line: lineNo, ...(field ? { field } : {}) }, problem);
    };
    if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(undefined, 'a line must be a JSON object');
    const line = value as Record<string, unknown>;
    return typeof line.schema_version === 'string' ? fromAtif(line, fail) : fromColumns(line, fail);
  });
  if (episodes.length === 0) throw new TrajectoryError({ file }, 'holds no episodes');
  return episodes;
}

const num = (v: unknown, field: string, fail: Fail) => (typeof v === 'number' && Number.isFinite(v) ? v : fail(field, 'must be a number'));
const str = (v: unknown, field: string, fail: Fail) => (typeof v === 'string' ? v : fail(field, 'must be a string'));

function fromColumns(line: Record<string, unknown>, fail: Fail): EpisodeTurns {
  const list = (field: string) => (Array.isArray(line[field]) ? (line[field] as unknown[]) : fail(field, 'must be a list'));
  const actions = list('actions');
  const observations = list('observations');
  const rewards = list('rewards');
  const valid = Array.isArray(line.valid_action) ? (line.valid_action as unknown[]) : actions.map(() => true);
  const executed = Array.isArray(line.executed) ? (line.executed as unknown[]) : actions.map(() => true);
  for (const [name, l] of [['observations', observations], ['rewards', rewards], ['valid_action', valid], ['executed', executed]] as const) {
    if (l.length !== actions.length) fail(name, `has ${l.length} entries for ${actions.length} actions`);
  }
  const taskIndex = line.task_index ?? (typeof line.task_id === 'string' && /^\d+$/.test(line.task_id) ? Number(line.task_id) : undefined);
  return {
    env: str(line.env, 'env', fail),
    taskIndex: num(taskIndex, 'task_index', fail),
    query: str(line.query, 'query', fail),
    sampleIndex: typeof line.sample_index === 'number' ? line.sample_index : typeof (line.sample as { index?: unknown })?.index === 'number' ? (line.sample as { index: number }).index : 0,
    reward: typeof line.reward === 'number' ? line.reward : Math.max(0, ...rewards.map((r, k) => num(r, `rewards[${k}]`, fail))),
    rewardComponents: componentsOf(line.reward_components),
    strategy: typeof line.strategy === 'string' ? line.strategy : null,
    sessionId: typeof line.session_id === 'string' ? line.session_id : null,
    notScored: notScoredOf(line.not_scored),
    turns: actions.map((a, k) => ({
      action: str(a, `actions[${k}]`, fail),
      observation: str(observations[k], `observations[${k}]`, fail),
      reward: num(rewards[k], `rewards[${k}]`, fail),
      valid: valid[k] !== false,
      executed: executed[k] !== false,
    })),
  };
}

function fromAtif(line: Record<string, unknown>, fail: Fail): EpisodeTurns {
  const extra = (line.extra ?? fail('extra', 'missing (an ATIF file written by intercode-ts keeps the env, task and turns there)')) as Record<string, unknown>;
  if (!Array.isArray(line.steps)) fail('steps', 'must be a list');
  const turns: EpisodeTurns['turns'] = [];
  const take = (list: unknown, field: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((t: Record<string, unknown>, k) => {
      turns.push({
        action: str(t?.action, `${field}[${k}].action`, fail),
        observation: str(t?.observation, `${field}[${k}].observation`, fail),
        reward: num(t?.reward, `${field}[${k}].reward`, fail),
        valid: t.valid_action !== false,
        executed: t.executed !== false,
      });
    });
  };
  (line.steps as Record<string, unknown>[]).forEach((step, s) => {
    if (step?.source === 'agent') take((step.extra as { turns?: unknown } | undefined)?.turns, `steps[${s}].extra.turns`);
  });
  take(extra.runner_turns, 'extra.runner_turns');
  return {
    env: str(extra.env, 'extra.env', fail),
    taskIndex: num(extra.task_index, 'extra.task_index', fail),
    query: str(extra.query, 'extra.query', fail),
    sampleIndex: typeof (extra.sample as { index?: unknown })?.index === 'number' ? (extra.sample as { index: number }).index : 0,
    reward: num(extra.reward, 'extra.reward', fail),
    rewardComponents: componentsOf(extra.reward_components),
    strategy: typeof extra.strategy === 'string' ? extra.strategy : null,
    sessionId: typeof line.session_id === 'string' ? line.session_id : null,
    notScored: notScoredOf(extra.not_scored),
    turns,
  };
}

/**
 * InterCode's layout of the episodes: keyed by task index, the sample `sample` of each task
 * (InterCode's logs hold one episode per task).
 */
export function toIntercodeLayout(episodes: readonly EpisodeTurns[], sample = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const e of [...episodes].filter((x) => x.sampleIndex === sample).sort((a, b) => a.taskIndex - b.taskIndex)) {
    if (String(e.taskIndex) in out) continue;
    const ran = e.turns.filter((t) => t.executed);
    out[String(e.taskIndex)] = {
      environment: `ic_${e.env}`,
      query: e.query,
      turn_history: {
        actions: ran.map((t) => t.action),
        observations: ran.map((t) => t.observation),
        rewards: ran.map((t) => t.reward),
        valid_action: ran.map((t) => t.valid),
      },
      summary: { max_reward: e.reward, turns_taken: e.turns.length },
      // InterCode's readers want a number in max_reward; as in our own result logs, an episode
      // that was not scored says so beside it (its max_reward 0 is then no score).
      ...(e.notScored ? { not_scored: e.notScored } : {}),
    };
  }
  return out;
}
