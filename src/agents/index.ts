/** LLM agents: an OpenAI-compatible model client, action extraction, prompts and the prompting strategies. */
export type { ChatMessage, ChatModel, ChatReply, ChatRole, TokenUsage } from './model/chat-model.js';
export { OpenAiChatClient, CLIENT_DEFAULTS, type OpenAiClientOptions } from './model/openai-client.js';
export { knownPrices, parsePrices, sumUsage, emptyUsage, type EpisodeUsage, type TokenPrices } from './model/usage.js';
export { extractAction, cleanCode, type ActionSyntax, type Extraction } from './extract.js';
export { ENV_PROMPTS, envPrompt, type EnvPrompt } from './prompts/env-prompts.js';
export { stepScoring, type StepScoring } from './step-scoring.js';
export { ChatAgent } from './chat-agent.js';
export type { EvalProtocol, Move, Strategy, StrategyAgent, StrategyOptions } from './strategy.js';
export * from './strategies/index.js';
