/**
 * The one thing a prompting strategy needs from a language model: a chat completion.
 */

export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

/** Tokens one request used, as the endpoint reported them (0 when it reported none). */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface ChatReply {
  /** The first choice's text ('' when the endpoint returned no content). */
  content: string;
  usage: TokenUsage;
  /** How many attempts the request took (1 when the first one answered). */
  attempts: number;
}

export interface ChatModel {
  /** The model name sent with every request (and used for pricing). */
  readonly model: string;
  /**
   * One chat completion.
   * @throws ModelError when the endpoint cannot be reached or keeps failing after retries, or rejects the request.
   */
  complete(messages: readonly ChatMessage[]): Promise<ChatReply>;
}
