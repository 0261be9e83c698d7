/**
 * Hugging Face conversational format (TRL's dataset formats): one episode per line,
 * `{"messages", "tools", …extra columns}`, every column present on every line (null when
 * it has no value) so `datasets.load_dataset("json", …)` infers one schema.
 */

import type { RolloutRecord } from './record.js';

/** The record's own columns, as the record has them. */
type RecordColumns = Pick<
  RolloutRecord,
  'messages' | 'tools' | 'reward' | 'reward_components' | 'step_components' | 'task_id' | 'task_index' | 'env' | 'query' | 'actions' | 'observations' | 'rewards' | 'valid_action' | 'executed' | 'terminated' | 'truncated' | 'not_scored' | 'policy' | 'strategy' | 'model' | 'session_id'
>;

export interface HfMessagesLine extends RecordColumns {
  sample_index: number;
  seed: number;
  temperature: number;
  group_id: string | null;
  group_size: number | null;
  group_rewards: number[] | null;
  advantage: number | null;
  /** Per model turn (null when the server gave none for some turn). */
  prompt_ids: number[][] | null;
  completion_ids: number[][] | null;
  logprobs: number[][] | null;
  /** The episode as one sequence (null when there is none: see `tokens_absent`). */
  token_ids: number[] | null;
  loss_mask: number[] | null;
  token_logprobs: number[] | null;
  /** Why token data is missing; null when all is there. */
  tokens_absent: string | null;
  policy_version: RolloutRecord['policy_version'];
}

const perTurn = (record: RolloutRecord, part: 'prompt_ids' | 'completion_ids' | 'logprobs') => {
  const lists = record.tokens.turns.map((t) => t[part]);
  return lists.length > 0 && lists.every((l) => l !== null) ? (lists as number[][]) : null;
};

/** A record as one hf-messages line. */
export function toHfMessages(record: RolloutRecord): HfMessagesLine {
  const episode = record.tokens.episode;
  return {
    messages: record.messages,
    tools: record.tools,
    reward: record.reward,
    reward_components: record.reward_components,
    step_components: record.step_components,
    task_id: record.task_id,
    task_index: record.task_index,
    env: record.env,
    query: record.query,
    actions: record.actions,
    observations: record.observations,
    rewards: record.rewards,
    valid_action: record.valid_action,
    executed: record.executed,
    terminated: record.terminated,
    truncated: record.truncated,
    not_scored: record.not_scored ?? null,
    policy: record.policy,
    strategy: record.strategy,
    model: record.model,
    session_id: record.session_id,
    sample_index: record.sample.index,
    seed: record.sample.seed,
    temperature: record.sample.temperature,
    group_id: record.group?.id ?? null,
    group_size: record.group?.size ?? null,
    group_rewards: record.group?.rewards ?? null,
    advantage: record.group?.advantage ?? null,
    prompt_ids: perTurn(record, 'prompt_ids'),
    completion_ids: perTurn(record, 'completion_ids'),
    logprobs: perTurn(record, 'logprobs'),
    token_ids: episode?.token_ids ?? null,
    loss_mask: episode?.loss_mask ?? null,
    token_logprobs: episode?.logprobs ?? null,
    tokens_absent: record.tokens.absent,
    policy_version: record.policy_version,
  };
}
