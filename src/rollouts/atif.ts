/**
 * Harbor's Agent Trajectory Interchange Format, v1.4 (RFC 0001): one trajectory object per
 * episode. The dialogue becomes steps (`system`, `user`, `agent`); a `tool` message becomes
 * the `observation` of the agent step whose call it answers; the server's tokens go in the
 * agent step's `metrics`; what ATIF has no field for (per-step reward, the env's actions and
 * observations, group and sample, why an episode was not scored) goes in `extra`.
 */

import type { RolloutRecord } from './record.js';

export const ATIF_VERSION = 'ATIF-v1.4';

export interface AtifToolCall {
  tool_call_id: string;
  function_name: string;
  arguments: Record<string, unknown>;
}

/** One turn of the env, as kept in an agent step's `extra.turns`. */
export interface AtifTurn {
  action: string;
  observation: string;
  reward: number;
  /** The reward's named parts; null where the turn was not scored. */
  components: Record<string, number> | null;
  valid_action: boolean;
  executed: boolean;
}

export interface AtifStep {
  step_id: number;
  source: 'system' | 'user' | 'agent';
  message: string;
  model_name?: string;
  tool_calls?: AtifToolCall[];
  observation?: { results: { source_call_id: string; content: string }[] };
  metrics?: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_token_ids?: number[];
    completion_token_ids?: number[];
    logprobs?: number[];
  };
  extra?: { turns: AtifTurn[]; reward: number | null };
}

export interface AtifTrajectory {
  schema_version: typeof ATIF_VERSION;
  session_id: string;
  agent: { name: string; version: string; model_name: string };
  steps: AtifStep[];
  final_metrics: { total_prompt_tokens: number; total_completion_tokens: number; total_steps: number };
  extra: {
    env: string;
    task_id: string;
    task_index: number;
    query: string;
    reward: number;
    reward_components: Record<string, number>;
    terminated: boolean;
    truncated: boolean;
    truncation: string | null;
    /** Why the episode has no score (its `reward` 0 is none), as in a record; null when it was scored. */
    not_scored: RolloutRecord['not_scored'];
    strategy: string;
    policy: string;
    sample: RolloutRecord['sample'];
    group: RolloutRecord['group'];
    tokens_absent: string | null;
    policy_version: RolloutRecord['policy_version'];
    episode_tokens: RolloutRecord['tokens']['episode'];
    /** Turns no model reply made (ReAct's submit by the runner at the turn limit). */
    runner_turns: AtifTurn[];
  };
}

const parseArguments = (text: string): Record<string, unknown> => {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };
  } catch {
    return { raw: text };
  }
};

/** A record as an ATIF v1.4 trajectory; `version` is intercode-ts's. */
export function toAtif(record: RolloutRecord, version: string): AtifTrajectory {
  const turn = (i: number): AtifTurn => ({
    action: record.actions[i]!,
    observation: record.observations[i]!,
    reward: record.rewards[i]!,
    components: record.step_components[i] ?? null,
    valid_action: record.valid_action[i]!,
    executed: record.executed[i]!,
  });
  const turnsOf = new Map<number, AtifTurn[]>();
  record.turn_messages.forEach((message, i) => turnsOf.set(message, [...(turnsOf.get(message) ?? []), turn(i)]));
  const tokensOf = new Map(record.tokens.turns.map((t) => [t.message, t]));
  const steps: AtifStep[] = [];
  const byCall = new Map<string, AtifStep>();
  record.messages.forEach((m, index) => {
    if (m.role === 'tool') {
      const owner = byCall.get(m.tool_call_id ?? '') ?? steps.findLast((s) => s.source === 'agent');
      if (owner) {
        owner.observation ??= { results: [] };
        owner.observation.results.push({ source_call_id: m.tool_call_id ?? '', content: m.content ?? '' });
        return;
      }
    }
    const step: AtifStep = { step_id: steps.length + 1, source: m.role === 'assistant' ? 'agent' : m.role === 'system' ? 'system' : 'user', message: m.content ?? '' };
    if (m.role === 'assistant') {
      step.model_name = record.model;
      if (m.tool_calls && m.tool_calls.length > 0) {
        step.tool_calls = m.tool_calls.map((c) => ({ tool_call_id: c.id, function_name: c.function.name, arguments: parseArguments(c.function.arguments) }));
        for (const c of m.tool_calls) byCall.set(c.id, step);
      }
      const tokens = tokensOf.get(index);
      if (tokens) {
        step.metrics = {
          prompt_tokens: tokens.prompt_tokens,
          completion_tokens: tokens.completion_tokens,
          ...(tokens.prompt_ids ? { prompt_token_ids: tokens.prompt_ids } : {}),
          ...(tokens.completion_ids ? { completion_token_ids: tokens.completion_ids } : {}),
          ...(tokens.logprobs ? { logprobs: tokens.logprobs } : {}),
        };
      }
      const turns = turnsOf.get(index) ?? [];
      step.extra = { turns, reward: turns.at(-1)?.reward ?? null };
    }
    steps.push(step);
  });
  const runnerTurns = record.actions.slice(record.turn_messages.length).map((_, k) => turn(record.turn_messages.length + k));
  return {
    schema_version: ATIF_VERSION,
    session_id: record.session_id,
    agent: { name: 'intercode-ts', version, model_name: record.model },
    steps,
    final_metrics: { total_prompt_tokens: record.usage.prompt_tokens, total_completion_tokens: record.usage.completion_tokens, total_steps: steps.length },
    extra: {
      env: record.env,
      task_id: record.task_id,
      task_index: record.task_index,
      query: record.query,
      reward: record.reward,
      reward_components: record.reward_components,
      terminated: record.terminated,
      truncated: record.truncated,
      truncation: record.truncation,
      not_scored: record.not_scored ?? null,
      strategy: record.strategy,
      policy: record.policy,
      sample: record.sample,
      group: record.group,
      tokens_absent: record.tokens.absent,
      policy_version: record.policy_version,
      episode_tokens: record.tokens.episode,
      runner_turns: runnerTurns,
    },
  };
}
