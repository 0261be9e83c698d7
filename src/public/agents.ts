/**
 * `intercode-ts/agents`: policies and the agents that play them. The policy contract and
 * its rollout, the gold policy, LLM clients, and the prompting strategies (single-turn, Try
 * Again, ReAct, Plan & Solve, tools) built from an env's facts.
 */
export type { Agent, EpisodeContext, Policy, Turn } from '../policy/types.js';
export { rollout, type Rollout, type RolloutOptions } from '../policy/rollout.js';
export { GoldPolicy } from '../policy/gold-policy.js';
export type { ChatMessage, ChatModel, ChatReply, TokenUsage } from '../agents/model/chat-model.js';
export { OpenAiChatClient, type OpenAiClientOptions } from '../agents/model/openai-client.js';
export type { TokenPrices } from '../agents/model/usage.js';
export type { EnvPrompt } from '../agents/prompts/env-prompts.js';
export { SUBMIT_AS_IS, type StepScoringRule } from '../agents/step-scoring.js';
export type { EnvAgentFacts, Strategy, StrategyOptions } from '../agents/strategy.js';
export { createStrategy, STRATEGIES } from '../agents/strategies/index.js';
