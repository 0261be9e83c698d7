/**
 * Every episode format this project writes, read into one shape for the viewer:
 * - `eval-episode`: a line of `eval`'s episodes.jsonl, and each value of its InterCode
 *   result log (src/eval/result-log.ts; InterCode's own published logs have the same turns);
 * - `rollout-record`, `hf-messages`, `atif`: the three `collect --policy llm:` formats
 *   (src/rollouts), token records included; also the lines `serve`'s POST /rollouts streams;
 * - `demonstration`: `collect --policy gold|replay:|checkpoint:` lines (training/demos);
 * - `intercode-log`: the per-episode InterCode logs of `--trajectories` (run, serve, any
 *   env command; src/trajectory/episode-log.ts).
 * Fields a format does not have are null, never guessed.
 */

import { isSolved } from '../scoring/solved.js';

export type EpisodeFormat = 'eval-episode' | 'rollout-record' | 'hf-messages' | 'atif' | 'demonstration' | 'intercode-log';

export interface ViewTurn {
  action: string;
  observation: string;
  /** The reward fed back after this turn; null where the format keeps none. */
  reward: number | null;
  /** The reward's named parts; null where the turn was not scored or the format keeps none. */
  parts: Record<string, number> | null;
  /** false: a reply without an action, or an action that failed to run; null: not recorded. */
  valid: boolean | null;
  /** How long the action ran, where recorded. */
  durationMs: number | null;
  /** The model's raw reply, where it differs from the action. */
  reply: string | null;
  /** Prompt and completion tokens of the model request behind this turn, where recorded. */
  tokens: { prompt: number; completion: number; ids: boolean; logprobs: boolean } | null;
}

export interface ViewEpisode {
  format: EpisodeFormat;
  env: string | null;
  taskId: string;
  taskIndex: number | null;
  query: string;
  turns: ViewTurn[];
  /** The episode's reward; null when it was never scored. */
  reward: number | null;
  parts: Record<string, number> | null;
  solved: boolean;
  /** Cut off (turn limit without a submit, sandbox lost, no verifier reward). */
  truncated: boolean;
  /** Why the episode ended, in words. */
  ended: string;
  gold: string | string[] | null;
  /** What the gold printed or returned, where the log kept it. */
  goldOutput: string | null;
  group: { id: string; sample: number; size: number | null } | null;
  model: string | null;
  strategy: string | null;
  policy: string | null;
  /** Everything else the line carried that says something about the episode (scorer details, usage, settings). */
  details: Record<string, unknown>;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const text = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));
function parts(v: unknown): Record<string, number> | null {
  if (!isObject(v)) return null;
  return Object.values(v).every((x) => typeof x === 'number') ? (v as Record<string, number>) : null;
}

/** The format of a parsed line or file, or undefined when it is none of this project's. */
export function episodeFormat(value: unknown): EpisodeFormat | undefined {
  if (!isObject(value)) return undefined;
  if (value.format === 'intercode-rollout-v1') return 'rollout-record';
  if (typeof value.schema_version === 'string' && value.schema_version.startsWith('ATIF') && Array.isArray(value.steps)) return 'atif';
  if (isObject(value.turn_history)) return 'eval-episode';
  if (Array.isArray(value.messages) && Array.isArray(value.actions) && 'sample_index' in value) return 'hf-messages';
  if (Array.isArray(value.trajectory) && 'query_idx' in value) return 'intercode-log';
  if (Array.isArray(value.actions) && Array.isArray(value.observations) && typeof value.policy === 'string') return 'demonstration';
  return undefined;
}

/**
 * The episodes a value holds: one for an episode line or log; those of a `serve` rollout
 * stream line (`{"type":"episode","record"}`, `{"type":"group","records"}`); none for
 * another stream line (`end`, `error`).
 * @throws Error saying what the value is not, when it is none of these.
 */
export function episodesIn(value: unknown): ViewEpisode[] {
  if (isObject(value) && (value.type === 'episode' || value.type === 'group') && ('record' in value || 'records' in value)) {
    const records = value.type === 'episode' ? [value.record] : list(value.records);
    return records.flatMap((r) => episodesIn(typeof r === 'string' ? JSON.parse(r) : r));
  }
  if (isObject(value) && (value.type === 'end' || value.type === 'error')) return [];
  return [toViewEpisode(value)];
}

/** One episode in the viewer's shape. @throws Error naming what is missing when `value` is no episode of a known format. */
export function toViewEpisode(value: unknown): ViewEpisode {
  const format = episodeFormat(value);
  const v = value as Json;
  switch (format) {
    case 'eval-episode':
      return fromEval(v);
    case 'rollout-record':
      return fromColumns(v, 'rollout-record');
    case 'hf-messages':
      return fromColumns(v, 'hf-messages');
    case 'atif':
      return fromAtif(v);
    case 'demonstration':
      return fromColumns(v, 'demonstration');
    case 'intercode-log':
      return fromIntercodeLog(v);
    default:
      throw new Error('is not an episode of a format this project writes (eval, collect, --trajectories, serve rollouts)');
  }
}

function fromEval(v: Json): ViewEpisode {
  const history = v.turn_history as Json;
  const summary = isObject(v.summary) ? v.summary : {};
  const actions = list(history.actions);
  const rewards = list(history.rewards);
  const components = list(history.reward_components);
  const replies = list(history.replies);
  const valid = list(history.valid_action);
  const durations = list(history.durations_ms);
  const turns: ViewTurn[] = actions.map((a, i) => ({
    action: text(a),
    observation: text(list(history.observations)[i]),
    reward: num(rewards[i]),
    parts: parts(components[i]),
    valid: typeof valid[i] === 'boolean' ? (valid[i] as boolean) : null,
    durationMs: num(durations[i]),
    reply: str(replies[i]) !== null && replies[i] !== a && replies[i] !== '' ? (replies[i] as string) : null,
    tokens: null,
  }));
  const notScored = isObject(v.not_scored) ? v.not_scored : null;
  const maxReward = num(summary.max_reward);
  const reward = notScored ? null : maxReward;
  const at = num(summary.max_reward_idx) ?? -1;
  const truncated = typeof v.truncated === 'string';
  const taken = num(summary.turns_taken);
  const limit = num(summary.turns_max);
  const last = turns.at(-1);
  const ended = notScored
    ? `not scored (${text(notScored.reason)}): ${text(notScored.message)}`
    : truncated
      ? `cut off: ${text(v.truncated)}`
      : last && /^submit\b/.test(last.action) && str(replies[turns.length - 1]) === ''
        ? `turn limit ${limit ?? '?'} reached; the runner submitted`
        : last && /^submit\b/.test(last.action)
          ? 'the model submitted'
          : reward !== null && isSolved(reward)
            ? 'solved (the episode stops at reward 1)'
            : taken !== null && limit !== null && taken >= limit
              ? `turn limit ${limit} reached`
              : 'the model stopped';
  const env = str(v.environment);
  return {
    format: 'eval-episode',
    env: env === null ? null : env.replace(/^ic_/, ''),
    taskId: String(v.task_id ?? '?'),
    taskIndex: num(v.task_id),
    query: text(v.query),
    turns,
    reward,
    parts: at >= 0 ? parts(components[at]) : null,
    solved: reward !== null && isSolved(reward),
    truncated,
    ended,
    gold: null,
    goldOutput: null,
    group: null,
    model: null,
    strategy: null,
    policy: null,
    details: pick(v, ['dataset', 'hardness', 'summary', 'usage', 'info']),
  };
}

/** Rollout records, hf-messages lines and demonstrations: the env's turns as parallel columns. */
function fromColumns(v: Json, format: 'rollout-record' | 'hf-messages' | 'demonstration'): ViewEpisode {
  const rewards = list(v.rewards);
  const valid = list(v.valid_action);
  const steps = list(v.step_components);
  const tokenTurns = isObject(v.tokens) ? list(v.tokens.turns) : [];
  const turnMessages = list(v.turn_messages);
  const turns: ViewTurn[] = list(v.actions).map((a, i) => {
    const message = turnMessages[i];
    const t = tokenTurns.find((x) => isObject(x) && x.message === message) as Json | undefined;
    return {
      action: text(a),
      observation: text(list(v.observations)[i]),
      reward: num(rewards[i]),
      parts: parts(steps[i]),
      valid: typeof valid[i] === 'boolean' ? (valid[i] as boolean) : null,
      durationMs: null,
      reply: null,
      tokens: t ? { prompt: num(t.prompt_tokens) ?? 0, completion: num(t.completion_tokens) ?? 0, ids: Array.isArray(t.completion_ids), logprobs: Array.isArray(t.logprobs) } : null,
    };
  });
  const notScored = isObject(v.not_scored) ? v.not_scored : null;
  const truncation = str(v.truncation);
  // A demonstration's truncation is `reason: message` and means "not scored" (training/demos).
  const unscored = notScored !== null || (format === 'demonstration' && truncation !== null);
  const reward = unscored ? null : num(v.reward);
  const truncated = v.truncated === true;
  const sample = isObject(v.sample) ? num(v.sample.index) : num(v.sample_index);
  const group = isObject(v.group) ? v.group : null;
  const groupId = str(group?.id) ?? str(v.group_id);
  return {
    format,
    env: str(v.env),
    taskId: text(v.task_id),
    taskIndex: num(v.task_index),
    query: text(v.query),
    turns,
    reward,
    parts: parts(v.reward_components),
    solved: reward !== null && isSolved(reward),
    truncated,
    ended: notScored
      ? `not scored (${text(notScored.reason)}): ${text(notScored.message)}`
      : unscored
        ? `not scored: ${truncation}`
        : truncated
          ? `cut off: ${truncation ?? 'truncated'}`
          : v.terminated === true
            ? 'terminated: the agent submitted (or a step scored 1)'
            : 'ended',
    gold: null,
    goldOutput: null,
    group: groupId !== null ? { id: groupId, sample: sample ?? 0, size: num(group?.size) ?? num(v.group_size) } : null,
    model: str(v.model),
    strategy: str(v.strategy),
    policy: str(v.policy),
    details: pick(v, ['session_id', 'usage', 'policy_version', 'tokens_absent', 'advantage', 'group_rewards', 'seed', 'temperature', 'sample', 'group', 'reward_components']),
  };
}

function fromAtif(v: Json): ViewEpisode {
  const extra = isObject(v.extra) ? v.extra : {};
  const turns: ViewTurn[] = [];
  for (const step of list(v.steps)) {
    if (!isObject(step) || step.source !== 'agent') continue;
    const metrics = isObject(step.metrics) ? step.metrics : null;
    const stepTurns = list(isObject(step.extra) ? step.extra.turns : []);
    stepTurns.forEach((t, k) => turns.push(atifTurn(t, k === 0 && metrics ? metrics : null, k === 0 ? str(step.message) : null)));
  }
  for (const t of list(extra.runner_turns)) turns.push(atifTurn(t, null, null));
  const columns = {
    env: extra.env,
    task_id: extra.task_id,
    task_index: extra.task_index,
    query: extra.query,
    actions: [],
    observations: [],
    reward: extra.reward,
    reward_components: extra.reward_components,
    terminated: extra.terminated,
    truncated: extra.truncated,
    truncation: extra.truncation,
    not_scored: extra.not_scored,
    strategy: extra.strategy,
    policy: extra.policy,
    sample: extra.sample,
    group: extra.group,
    model: isObject(v.agent) ? v.agent.model_name : null,
  };
  const episode = fromColumns(columns, 'rollout-record');
  return {
    ...episode,
    format: 'atif',
    turns,
    details: { session_id: v.session_id, agent: v.agent, final_metrics: v.final_metrics, policy_version: extra.policy_version, tokens_absent: extra.tokens_absent },
  };
}

function atifTurn(t: unknown, metrics: Json | null, message: string | null): ViewTurn {
  const turn = isObject(t) ? t : {};
  const action = text(turn.action);
  return {
    action,
    observation: text(turn.observation),
    reward: num(turn.reward),
    parts: parts(turn.components),
    valid: typeof turn.valid_action === 'boolean' ? turn.valid_action : null,
    durationMs: null,
    reply: message !== null && message !== '' && message !== action ? message : null,
    tokens: metrics
      ? { prompt: num(metrics.prompt_tokens) ?? 0, completion: num(metrics.completion_tokens) ?? 0, ids: Array.isArray(metrics.completion_token_ids), logprobs: Array.isArray(metrics.logprobs) }
      : null,
  };
}

function fromIntercodeLog(v: Json): ViewEpisode {
  const info = isObject(v.info) ? v.info : {};
  const reward = num(v.reward);
  const truncation = str(info.truncated);
  const gold = typeof v.gold === 'string' || Array.isArray(v.gold) ? (v.gold as string | string[]) : null;
  // `eval_obs`: what the gold printed or returned, in InterCode's name (the bash, SQL, jq, Python scorers' details).
  const goldOutput = info.eval_obs;
  const env = str(v.environment);
  return {
    format: 'intercode-log',
    env: env === null ? null : env.replace(/^ic_/, ''),
    taskId: String(v.query_idx ?? '?'),
    taskIndex: num(v.query_idx),
    query: text(v.query),
    turns: list(v.trajectory).map((s) => ({
      action: text(isObject(s) ? s.action : s),
      observation: text(isObject(s) ? s.observation : ''),
      reward: null,
      parts: null,
      valid: null,
      durationMs: null,
      reply: null,
      tokens: null,
    })),
    reward,
    parts: parts(info.reward),
    solved: reward !== null && isSolved(reward),
    truncated: truncation !== null,
    ended: truncation !== null ? `cut off, not scored: ${truncation}` : reward === null ? 'not scored' : 'submitted and scored',
    gold,
    goldOutput: goldOutput === undefined ? null : text(goldOutput),
    group: null,
    model: null,
    strategy: null,
    policy: null,
    details: { info },
  };
}

function pick(v: Json, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => v[k] !== undefined && v[k] !== null).map((k) => [k, v[k]]));
}
