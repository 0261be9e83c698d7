/**
 * Re-scoring stored rollouts (NeMo Gym's "reverify"): every episode of a rollout file is
 * played again in a new sandbox, its recorded actions in order, and scored the way the
 * episode was (its strategy's protocol, as {@link playEpisode} scores); the recomputed
 * reward and its named parts are compared with the recorded ones. Rollout lines keep no
 * final probe of the sandbox, so every episode is replayed. A replay that ends truncated (the
 * verifier gave no reward, the sandbox was lost…) is not scored: its reward is null, it is left
 * out of the mean and counted by reason; a line that says `not_scored` is compared as such.
 */

import { createStrategy, type ChatModel, type EnvAgentFacts, type EnvPrompt, type EvalProtocol } from '../agents/index.js';
import type { Task } from '../datasets/index.js';
import type { TaskEnv } from '../env/types.js';
import { ConfigError } from '../errors.js';
import { stepScore, type EpisodeExecutor } from '../eval/index.js';
import { countByReason, meanOfScored, type Unscored } from '../policy/index.js';
import { isSolved } from '../scoring/solved.js';
import type { EpisodeTurns } from '../rollouts/index.js';
import { REWARD_TOLERANCE } from './replay.js';

export interface RescoredEpisode {
  sessionId: string | null;
  taskIndex: number;
  sampleIndex: number;
  /** The line's reward; null when the line says it was not scored. */
  recordedReward: number | null;
  /** The replay's reward; null when the replay was not scored. */
  reward: number | null;
  recordedComponents: Record<string, number> | null;
  components: Record<string, number>;
  /** Why the line says the episode was not scored; null when it was scored. */
  recordedNotScored: Unscored | null;
  /** The replay ended truncated (`info.truncation`'s reason and message): not scored. */
  notScored: Unscored | null;
  /**
   * Both scored, the reward within {@link REWARD_TOLERANCE} and, where the file kept them, the
   * same parts within it; or both not scored for the same reason.
   */
  agrees: boolean;
}

export interface RescoreReport {
  episodes: number;
  agreeingEpisodes: number;
  /** agreeingEpisodes / episodes. */
  agreement: number;
  /** Episodes whose recorded parts were compared (the rest kept none). */
  withComponents: number;
  /** Mean of the lines' rewards, those that say `not_scored` left out; null when none was scored. */
  recordedMeanReward: number | null;
  /** Mean of the replays' rewards, those not scored left out; null when none was scored. */
  meanReward: number | null;
  /** Replays not scored, and by reason. */
  notScored: number;
  notScoredByReason: Record<string, number>;
  /** Lines that say `not_scored`, and by reason. */
  recordedNotScored: number;
  recordedNotScoredByReason: Record<string, number>;
  disagreements: RescoredEpisode[];
}

/** Strategies are only asked for their scoring protocol here; none is ever given a turn. */
const NO_MODEL: ChatModel = {
  model: 'none',
  complete: () => Promise.reject(new ConfigError('rescore', 'replays recorded actions and never asks a model')),
};

/** What rescoring reads of the env: its name (checked against the file's), its prompts (strategies are built with them) and its every-step rule. */
export interface RescoredEnv extends EnvAgentFacts {
  name: string;
}

/** How episodes of `strategy` were scored (a file that names none: every-step, like `tools`). @throws ConfigError for an unknown strategy. */
export function protocolOf(strategy: string | null, prompt: EnvPrompt): EvalProtocol {
  return createStrategy(strategy ?? 'tools', { model: NO_MODEL, prompt }).protocol;
}

const close = (a: number, b: number) => Math.abs(a - b) <= REWARD_TOLERANCE + 1e-9;

function sameComponents(recorded: Record<string, number>, now: Record<string, number>): boolean {
  const keys = Object.keys(recorded);
  return keys.length === Object.keys(now).length && keys.every((k) => now[k] !== undefined && close(recorded[k]!, now[k]!));
}

/** Both scored and equal within the tolerance (parts too, where recorded), or both not scored for the same reason. */
function agree(recorded: EpisodeTurns, reward: number, components: Record<string, number>, notScored: Unscored | null): boolean {
  if (recorded.notScored !== null || notScored !== null) return recorded.notScored?.reason === notScored?.reason;
  return close(reward, recorded.reward) && (recorded.rewardComponents === null || sameComponents(recorded.rewardComponents, components));
}

/**
 * Replays one episode on `env` (reset to `task`): executed turns run in order; each is
 * scored as the episode's protocol scored it (a submit by the env, every-step by
 * peekScore after the action); turns that never ran (a reply without an action) score 0.
 * A step that ends truncated ends the replay, not scored.
 */
export async function rescoreEpisode(env: TaskEnv, rescored: RescoredEnv, episode: EpisodeTurns, task: Task): Promise<RescoredEpisode> {
  const { scoring, stopWhenSolved } = protocolOf(episode.strategy, rescored.prompt);
  await env.reset({ task });
  const rewards: number[] = [];
  const parts: (Record<string, number> | null)[] = [];
  let notScored: Unscored | null = null;
  for (const turn of episode.turns) {
    if (!turn.executed) {
      rewards.push(0);
      parts.push(null);
      continue;
    }
    const result = await env.step(turn.action);
    if (result.truncated) {
      notScored = { reason: result.info.truncation?.reason ?? 'truncated', message: result.info.truncation?.message ?? 'truncated' };
      break;
    }
    const byEnv = result.terminated || scoring === 'on-submit';
    const score = byEnv ? (result.info.score ?? null) : await stepScore(env, rescored.stepScoring, turn.action);
    const reward = byEnv ? result.reward : (score?.reward ?? 0);
    rewards.push(reward);
    parts.push(score?.parts ?? null);
    if (result.terminated || (stopWhenSolved && isSolved(reward))) break;
  }
  const reward = scoring === 'on-submit' ? (rewards.at(-1) ?? 0) : Math.max(0, ...rewards);
  const at = rewards.indexOf(reward);
  const components = notScored === null && at >= 0 ? (parts[at] ?? {}) : {};
  return {
    sessionId: episode.sessionId,
    taskIndex: episode.taskIndex,
    sampleIndex: episode.sampleIndex,
    recordedReward: episode.notScored === null ? episode.reward : null,
    reward: notScored === null ? reward : null,
    recordedComponents: episode.rewardComponents,
    components,
    recordedNotScored: episode.notScored,
    notScored,
    agrees: agree(episode, reward, components, notScored),
  };
}

/**
 * Re-scores `episodes` on the executor's envs, one new episode each.
 * @throws ConfigError naming `--env` when an episode is of another env, or the line whose
 *   task index is not in `tasks` or whose query is not that task's (a file from another dataset).
 */
export async function rescoreEpisodes(
  executor: EpisodeExecutor,
  rescored: RescoredEnv,
  tasks: readonly Task[],
  episodes: readonly EpisodeTurns[],
  onEpisode?: (done: number) => void,
): Promise<RescoreReport> {
  episodes.forEach((e, i) => {
    if (e.env !== rescored.name) throw new ConfigError('--env', `is ${rescored.name}, but episode ${i + 1} of the file is of the ${e.env} env`);
    const task = tasks[e.taskIndex];
    if (!task || task.query.trim() !== e.query.trim()) {
      throw new ConfigError('--data', `episode ${i + 1} is of task ${e.taskIndex}, whose query in this dataset is ${task ? JSON.stringify(task.query.slice(0, 80)) : 'missing'}, not ${JSON.stringify(e.query.slice(0, 80))} (give the --data the rollouts were collected on)`);
    }
  });
  const results: RescoredEpisode[] = new Array(episodes.length);
  let done = 0;
  await executor.forEach([...episodes.keys()], async (env, i) => {
    const episode = episodes[i]!;
    results[i] = await rescoreEpisode(env, rescored, episode, tasks[episode.taskIndex]!);
    onEpisode?.(++done);
  });
  const n = results.length;
  const agreeing = results.filter((r) => r.agrees).length;
  const notScored = results.flatMap((r) => (r.notScored ? [r.notScored] : []));
  const recordedNotScored = results.flatMap((r) => (r.recordedNotScored ? [r.recordedNotScored] : []));
  return {
    episodes: n,
    agreeingEpisodes: agreeing,
    agreement: n ? agreeing / n : 1,
    withComponents: results.filter((r) => r.recordedComponents !== null).length,
    recordedMeanReward: meanOfScored(results.map((r) => ({ reward: r.recordedReward }))),
    meanReward: meanOfScored(results),
    notScored: notScored.length,
    notScoredByReason: countByReason(notScored),
    recordedNotScored: recordedNotScored.length,
    recordedNotScoredByReason: countByReason(recordedNotScored),
    disagreements: results.filter((r) => !r.agrees),
  };
}
