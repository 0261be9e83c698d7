/**
 * The token-level part of a rollout record, from what the server returned per model turn
 * (never re-tokenized): per turn the prompt and completion ids and one log-probability per
 * completion token; for the episode one sequence with a loss mask (1 = model tokens, 0 =
 * prompt, env and tool text), when every turn has ids and each prompt extends the tokens
 * before it.
 */

import type { ModelTurn } from '../agents/index.js';

export interface TokenTurn {
  /** Index in the record's `messages` of the assistant message this request produced. */
  message: number;
  prompt_ids: number[] | null;
  completion_ids: number[] | null;
  /** One per completion token (when both are given, the lengths are equal: checked). */
  logprobs: number[] | null;
  finish_reason: string | null;
  /** The policy version the inference server stamped on this reply (null: it gave none). */
  policy_version: string | number | null;
  prompt_tokens: number;
  completion_tokens: number;
}

export interface EpisodeTokens {
  /** The last prompt's ids followed by the last completion's: every turn's completion is inside. */
  token_ids: number[];
  /** 1 where the model produced the token, 0 elsewhere; as long as `token_ids`. */
  loss_mask: number[];
  /** The completion logprobs at mask-1 positions, 0.0 elsewhere; null when a turn has none. */
  logprobs: number[] | null;
}

export interface TokenRecord {
  /** Whether every model turn has the part (false when any turn lacks it, or there was no turn). */
  has_prompt_ids: boolean;
  has_completion_ids: boolean;
  has_logprobs: boolean;
  /** Why something is missing, in words; null when all is present. */
  absent: string | null;
  turns: TokenTurn[];
  episode: EpisodeTokens | null;
}

/** The token record of an episode's model turns. */
export function tokenRecord(modelTurns: readonly ModelTurn[]): TokenRecord {
  const turns: TokenTurn[] = modelTurns.map((t) => ({
    message: t.message,
    prompt_ids: t.promptIds,
    completion_ids: t.completionIds,
    logprobs: t.logprobs,
    finish_reason: t.finishReason,
    policy_version: t.policyVersion,
    prompt_tokens: t.promptTokens,
    completion_tokens: t.completionTokens,
  }));
  const all = (part: 'prompt_ids' | 'completion_ids' | 'logprobs') => turns.length > 0 && turns.every((t) => t[part] !== null);
  const has = { has_prompt_ids: all('prompt_ids'), has_completion_ids: all('completion_ids'), has_logprobs: all('logprobs') };
  const missing = [
    !has.has_prompt_ids ? 'prompt token ids' : null,
    !has.has_completion_ids ? 'completion token ids' : null,
    !has.has_logprobs ? 'logprobs' : null,
  ].filter((x) => x !== null);
  const misaligned = turns.findIndex((t) => t.completion_ids !== null && t.logprobs !== null && t.completion_ids.length !== t.logprobs.length);
  let absent: string | null = turns.length === 0 ? 'no model turn' : missing.length > 0 ? `the server gave no ${missing.join(', ')} (for at least one turn)` : null;
  if (misaligned >= 0) absent = `${absent ? `${absent}; ` : ''}turn ${misaligned} has ${turns[misaligned]!.completion_ids!.length} completion ids but ${turns[misaligned]!.logprobs!.length} logprobs`;
  let episode: EpisodeTokens | null = null;
  if (has.has_prompt_ids && has.has_completion_ids && misaligned < 0) {
    const built = episodeSequence(turns);
    if (typeof built === 'string') absent = built;
    else episode = built;
  }
  return { ...has, absent, turns, episode };
}

/** One sequence over all turns, or why there is none (a prompt that does not extend the tokens before it). */
function episodeSequence(turns: readonly TokenTurn[]): EpisodeTokens | string {
  const ids: number[] = [];
  const mask: number[] = [];
  const logprobs: number[] = [];
  const withLogprobs = turns.every((t) => t.logprobs !== null);
  for (const [k, turn] of turns.entries()) {
    const prompt = turn.prompt_ids!;
    if (prompt.length < ids.length || ids.some((id, i) => prompt[i] !== id)) {
      return `no episode loss mask: turn ${k}'s prompt does not begin with the tokens of the turns before it (the chat template re-renders earlier turns, or the dialogue limit dropped messages); per-turn ids are kept`;
    }
    for (const id of prompt.slice(ids.length)) {
      ids.push(id);
      mask.push(0);
      logprobs.push(0);
    }
    turn.completion_ids!.forEach((id, i) => {
      ids.push(id);
      mask.push(1);
      logprobs.push(withLogprobs ? turn.logprobs![i]! : 0);
    });
  }
  return { token_ids: ids, loss_mask: mask, logprobs: withLogprobs ? logprobs : null };
}
