/**
 * The one thing a prompting strategy needs from a language model: a chat completion,
 * optionally with function tools, and the server's token ids and log-probabilities when it
 * gives them.
 */

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

/** A function call the model made (OpenAI's `tool_calls[i]`, arguments as the JSON text it wrote). */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface ChatMessage {
  role: ChatRole;
  content: string;
  /** assistant: the function calls of this reply. */
  toolCalls?: ToolCall[];
  /** tool: the call this message answers. */
  toolCallId?: string;
}

/** One function the model may call, as the chat API's `tools` parameter describes it. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/** Tokens one request used, as the endpoint reported them (0 when it reported none). */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

/**
 * What the server said about the tokens of one request, each part null when it did not
 * give it (never re-tokenized here).
 */
export interface TurnTokens {
  /** The prompt's token ids (vLLM `prompt_token_ids`). */
  promptIds: number[] | null;
  /** The completion's token ids (vLLM `choices[0].token_ids`, or `token_id:<n>` logprob tokens). */
  completionIds: number[] | null;
  /** One log-probability per completion token (`choices[0].logprobs.content[i].logprob`). */
  logprobs: number[] | null;
}

export interface ChatReply {
  /** The first choice's text ('' when the endpoint returned no content). */
  content: string;
  /** The first choice's function calls, in order (omitted or [] when none). */
  toolCalls?: ToolCall[];
  usage: TokenUsage;
  /** How many attempts the request took (1 when the first one answered). */
  attempts: number;
  /** Token ids and log-probabilities, when they were asked for and the server gave any (omitted: none). */
  tokens?: TurnTokens;
  /** The choice's `finish_reason` (omitted or null when absent). */
  finishReason?: string | null;
  /** The policy (weights) version the server says produced the reply (`policy_version`, or SGLang's `weight_version`, in the body or its `meta_info`); omitted or null when it says none. */
  policyVersion?: string | number | null;
}

/** Per-request settings a strategy adds to the client's own. */
export interface CompleteOptions {
  /** Function tools offered to the model. */
  tools?: readonly ToolSpec[];
  /** Sampling seed sent with the request (servers that honour it sample repeatably). */
  seed?: number;
}

export interface ChatModel {
  /** The model name sent with every request (and used for pricing). */
  readonly model: string;
  /**
   * One chat completion.
   * @throws ModelError when the endpoint cannot be reached or keeps failing after retries, or rejects the request.
   */
  complete(messages: readonly ChatMessage[], options?: CompleteOptions): Promise<ChatReply>;
}

/** No token data: what a reply carries when the server gave none. */
export const NO_TOKENS: TurnTokens = Object.freeze({ promptIds: null, completionIds: null, logprobs: null }) as TurnTokens;
