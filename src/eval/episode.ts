import type { StepScoringRule, Strategy, StrategyAgent } from '../agents/index.js';
import type { Task } from '../datasets/index.js';
import type { Score, StepInfo, StepResult, TaskEnv } from '../env/types.js';
import type { Turn, Unscored } from '../policy/index.js';
import type { EvalEpisodeLog, TurnHistory } from './result-log.js';
import { isSolved } from '../scoring/solved.js';

export interface EpisodeSettings {
  envName: string;
  /** The env's every-step rule: what is scored after an action. */
  stepScoring: StepScoringRule;
  /** The data file's path, as written in the log's `dataset` field. */
  dataset: string;
  /** The turn limit the strategy is given (`--turns`). */
  turns: number;
  /** Sampling seed of the episode, sent with each model request (omitted: none). */
  seed?: number;
}

const NOT_RUN: StepInfo = { actionExecuted: false, exitCode: null, durationMs: 0, events: [] };

/**
 * Plays one evaluation episode of `strategy` on `task` the way InterCode's evaluation
 * scripts did (see {@link Strategy.protocol}):
 * - a reply without an action costs a turn: its observation is the strategy's retry
 *   message, its reward 0, and it is an invalid action; nothing runs;
 * - `every-step`: after each action the episode is scored as if submitted then (the env's
 *   `peekScore`, nothing is reset; what is submitted is the env's `stepScoring` rule's: for
 *   Python the function the action defines, and an action defining none scores 0) and that reward
 *   is fed back; the episode's reward is the best one; with `stopWhenSolved` the episode
 *   ends at reward 1;
 * - `on-submit`: only `submit` is scored; at the turn limit the runner submits (a turn of
 *   its own in the log, not counted in `turns_taken`);
 * - a lost sandbox ends the episode (`truncated`), keeping the rewards before it.
 * @throws whatever the model client or the env throws (ModelError, SandboxError on reset).
 */
export async function playEpisode(
  env: TaskEnv,
  strategy: Strategy,
  task: Task,
  settings: EpisodeSettings,
  /** Given the episode's agent when it starts (its dialogue and tokens are read from it after the episode). */
  onAgent?: (agent: StrategyAgent) => void,
): Promise<EvalEpisodeLog> {
  const { observation: first } = await env.reset({ task });
  const agent = strategy.begin({ envName: settings.envName, task, query: first, turnLimit: settings.turns, ...(settings.seed !== undefined ? { seed: settings.seed } : {}) });
  onAgent?.(agent);
  const { scoring, stopWhenSolved } = strategy.protocol;
  const cap = strategy.maxTurns(settings.turns);
  const turns: Turn[] = [];
  const history: TurnHistory = { actions: [], observations: [], rewards: [], valid_action: [], replies: [], reward_components: [] };
  const record = (turn: Turn, valid: boolean, reply: string, components: Record<string, number> | null = null) => {
    turns.push(turn);
    history.actions.push(turn.action);
    history.observations.push(turn.observation);
    history.rewards.push(turn.reward);
    history.valid_action.push(valid);
    history.replies.push(reply);
    history.reward_components.push(components);
  };
  let ended = false;
  let truncated: string | undefined;
  let cut: Unscored | undefined;
  // Turns whose reward the env computed (a step score, the submit's): a truncated episode with none is not scored.
  let scoredTurns = 0;
  const cutOff = (result: StepResult) => {
    truncated = result.info.truncation?.message ?? 'truncated';
    cut = { reason: result.info.truncation?.reason ?? 'truncated', message: truncated };
  };
  while (turns.length < cap && !ended) {
    const move = await agent.move(turns);
    if (move.kind === 'stop') break;
    if (move.kind === 'invalid') {
      record({ action: move.reply, observation: move.feedback, reward: 0, info: NOT_RUN }, false, move.reply);
      continue;
    }
    const result = await env.step(move.action);
    if (result.truncated) {
      cutOff(result);
      record({ action: move.action, observation: result.observation, reward: 0, info: result.info }, false, move.reply);
      break;
    }
    ended = result.terminated;
    const score = ended || scoring === 'on-submit' ? (result.info.score ?? null) : await stepScore(env, settings.stepScoring, move.action);
    const reward = ended || scoring === 'on-submit' ? result.reward : (score?.reward ?? 0);
    record({ action: move.action, observation: result.observation, reward, info: result.info }, result.info.actionExecuted, move.reply, score?.parts ?? null);
    if (ended || score !== null) scoredTurns += 1;
    if (stopWhenSolved && isSolved(reward)) break;
  }
  const turnsTaken = turns.length;
  if (scoring === 'on-submit' && !ended && truncated === undefined) {
    const result = await env.step('submit');
    if (result.truncated) cutOff(result);
    else scoredTurns += 1;
    record({ action: 'submit', observation: result.observation, reward: result.reward, info: result.info }, true, '', result.info.score?.parts ?? null);
  }
  const rewards = history.rewards;
  const maxReward = scoring === 'on-submit' ? (rewards.at(-1) ?? 0) : Math.max(0, ...rewards);
  return {
    environment: `ic_${settings.envName}`,
    dataset: settings.dataset,
    task_id: task.index,
    query: task.query,
    turn_history: history,
    summary: { max_reward: maxReward, max_reward_idx: rewards.indexOf(maxReward), turns_taken: turnsTaken, turns_max: cap },
    ...(typeof task.metadata.hardness === 'string' ? { hardness: task.metadata.hardness } : {}),
    usage: agent.usage,
    ...(truncated !== undefined ? { truncated } : {}),
    ...(cut !== undefined && scoredTurns === 0 ? { not_scored: cut } : {}),
  };
}

/** The score of submitting now, as InterCode's every-step scoring did after `action` (see {@link StepScoringRule}); null when the action is not scored (reward 0). */
export async function stepScore(env: TaskEnv, rule: StepScoringRule, action: string): Promise<Score | null> {
  const scoring = rule(action);
  if (scoring.kind === 'unscored') return null;
  return env.peekScore(scoring.submission);
}
