/** LLM agents: an OpenAI-compatible model client, action extraction, prompts and the prompting strategies. */
export type { ChatMessage, ChatModel, ChatReply, ChatRole, CompleteOptions, TokenUsage, ToolCall, ToolSpec, TurnTokens } from './model/chat-model.js';
export { NO_TOKENS } from './model/chat-model.js';
export { parseCompletion, parseTokens, wireMessages, wireTools, wireToolCall } from './model/wire.js';
export { OpenAiChatClient, CLIENT_DEFAULTS, TOKEN_REQUESTS, type OpenAiClientOptions, type TokenRequest } from './model/openai-client.js';
export { knownPrices, parsePrices, sumUsage, emptyUsage, type EpisodeUsage, type TokenPrices } from './model/usage.js';
export { extractAction, cleanCode, type ActionSyntax, type Extraction } from './extract.js';
export type { EnvPrompt } from './prompts/env-prompts.js';
export { SUBMIT_AS_IS, type StepScoring, type StepScoringRule } from './step-scoring.js';
export { ChatAgent } from './chat-agent.js';
export type { AgentRecord, EnvAgentFacts, EvalProtocol, ModelTurn, Move, Strategy, StrategyAgent, StrategyOptions } from './strategy.js';
export * from './strategies/index.js';
