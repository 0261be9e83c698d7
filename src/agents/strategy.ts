/**
 * The contract of a prompting strategy. A strategy is a {@link Policy} (anything that
 * acts in an env); what it adds is `move()`, which says when a reply held no action, and
 * the evaluation protocol the paper ran it under. A new strategy is one file: a class
 * implementing {@link Strategy} whose agents extend {@link ChatAgent}.
 */

import type { Agent, EpisodeContext, Policy, Turn } from '../policy/index.js';
import type { ChatMessage, ChatModel, ToolSpec, TurnTokens } from './model/chat-model.js';
import type { EpisodeUsage, TokenPrices } from './model/usage.js';
import type { EnvPrompt } from './prompts/env-prompts.js';
import type { StepScoringRule } from './step-scoring.js';

/** What an agent does next. */
export type Move =
  /** Run this action (a command, a query, `submit`, `submit <answer>`, `skip`). */
  | { kind: 'action'; action: string; reply: string }
  /** The reply held no action; `feedback` is what the model is told (the turn's observation). */
  | { kind: 'invalid'; reply: string; feedback: string }
  /** The strategy has nothing more to do (a plan carried out, a single turn taken). */
  | { kind: 'stop' };

/**
 * How episodes are scored, as InterCode's evaluation scripts did it.
 * - `every-step` (single turn, Try Again, Plan & Solve): after every action the episode is
 *   scored as if submitted then, without ending it; that reward is fed back and the
 *   episode's reward is the best of them.
 * - `on-submit` (ReAct): only `submit` is scored; at the turn limit the runner submits.
 */
export interface EvalProtocol {
  scoring: 'every-step' | 'on-submit';
  /** End the episode as soon as a step scores 1 (Try Again). */
  stopWhenSolved: boolean;
}

/** One model request of an episode: which transcript message it produced, and the server's tokens (null parts: not given). */
export interface ModelTurn extends TurnTokens {
  /** Index in {@link AgentRecord.messages} of the assistant message this request produced. */
  message: number;
  finishReason: string | null;
  /** The policy version the server stamped on the reply (null: none). */
  policyVersion: string | number | null;
  /** The request's token counts as the endpoint reported them. */
  promptTokens: number;
  completionTokens: number;
}

/** What an agent said and heard over an episode: for trainer formats (hf-messages, ATIF, token records). */
export interface AgentRecord {
  /** The whole dialogue in order (the dialogue limit drops nothing here). */
  messages: ChatMessage[];
  /** The function tools offered ([] for text strategies). */
  tools: ToolSpec[];
  /** One entry per model request, in order. */
  modelTurns: ModelTurn[];
  /** For each turn the agent produced (action or invalid reply), in order: the index in `messages` of the assistant message it came from. */
  turnMessages: number[];
  /** For the same turns: whether the env ran it (false: an invalid reply, nothing ran). */
  turnRan: boolean[];
}

export interface StrategyAgent extends Agent {
  move(history: readonly Turn[]): Promise<Move>;
  /** Model requests, tokens and cost of this episode so far. */
  readonly usage: EpisodeUsage;
  /** The dialogue and token data so far. */
  record(): AgentRecord;
}

export interface Strategy extends Policy {
  readonly protocol: EvalProtocol;
  /** Most turns an episode can take with a turn limit of `turns` (Plan & Solve adds refinement turns). */
  maxTurns(turns: number): number;
  begin(context: EpisodeContext): StrategyAgent;
}

/** What strategies and the evaluation read of an env (EnvPlugin.agent): what the model is told, and what is scored after each action. */
export interface EnvAgentFacts {
  prompt: EnvPrompt;
  stepScoring: StepScoringRule;
}

/** What every strategy is built from. */
export interface StrategyOptions {
  model: ChatModel;
  /** What the model is told about the env it acts in (the env's own facts). */
  prompt: EnvPrompt;
  /** Prices of the model's tokens; omitted: costs are unknown (null). */
  prices?: TokenPrices;
  /** Keep only this many most recent messages after the opening ones (InterCode's dialogue_limit); omitted: all. */
  dialogueLimit?: number;
  /** Observations longer than this many characters are cut before they reach the model (default per strategy). */
  observationLimit?: number;
  /** Plan & Solve: refinement turns after the plan when it did not solve the task (default 0). */
  refineTurns?: number;
}
