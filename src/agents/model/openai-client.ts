import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, EpisodeCancelledError, ModelError } from '../../errors.js';
import type { ChatMessage, ChatModel, ChatReply, CompleteOptions } from './chat-model.js';
import { excerpt, parseCompletion, wireMessages, wireTools } from './wire.js';

export interface OpenAiClientOptions {
  /** e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1; `/chat/completions` is appended. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …` when given. */
  apiKey?: string;
  model: string;
  /** Sampling settings sent with every request (defaults: InterCode's, temperature 0, top_p 1, 512 tokens). */
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  /** Time limit of one attempt, in ms (default 60 s). */
  timeoutMs?: number;
  /** Attempts after the first for 429, 5xx, timeouts and connection failures (default 6). */
  retries?: number;
  /** First backoff in ms; doubles per attempt with full jitter, capped at `maxBackoffMs` (defaults 1 s, 60 s). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /**
   * What to ask about tokens: `none`; `logprobs` (`logprobs: true`: one log-probability per
   * completion token; OpenAI, vLLM, SGLang); `ids` (that and vLLM's `return_token_ids`: the
   * prompt's and completion's token ids; servers that do not know it may refuse it). What
   * comes back is recorded as it is, nothing is re-tokenized. Default `none`.
   */
  tokens?: TokenRequest;
  /** Random source for the jitter (tests pass a fixed one). */
  random?: () => number;
  /** Cancels the request in flight and every later one (EpisodeCancelledError): the rollout service's client went away. */
  signal?: AbortSignal;
}

/** Resolved settings: what the options default to. */
export const CLIENT_DEFAULTS = {
  baseUrl: 'https://api.openai.com/v1',
  model: 'gpt-3.5-turbo',
  temperature: 0,
  topP: 1,
  maxTokens: 512,
  timeoutMs: 60_000,
  retries: 6,
  backoffMs: 1_000,
  maxBackoffMs: 60_000,
  tokens: 'none',
} as const;

export type TokenRequest = 'none' | 'logprobs' | 'ids';
export const TOKEN_REQUESTS: readonly TokenRequest[] = ['none', 'logprobs', 'ids'];

/** A failed attempt that is worth another one, with the server's Retry-After when it gave one. */
class RetryableFailure extends Error {
  constructor(message: string, readonly retryAfterMs?: number, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * An OpenAI-compatible chat-completions client over plain `fetch` (no SDK: one endpoint,
 * one JSON shape). Retries 429, 5xx, timeouts and connection failures with exponential
 * backoff and full jitter, honouring `Retry-After`; anything else fails at once.
 */
export class OpenAiChatClient implements ChatModel {
  readonly model: string;
  private readonly url: string;
  private readonly settings: Required<Omit<OpenAiClientOptions, 'apiKey' | 'signal'>> & { apiKey?: string; signal?: AbortSignal };
  /** What the client asks about tokens (see {@link OpenAiClientOptions.tokens}). */
  get tokens(): TokenRequest {
    return this.settings.tokens;
  }

  /** @throws ConfigError when the base URL is not an http(s) URL. */
  constructor(options: OpenAiClientOptions) {
    let parsed: URL;
    try {
      parsed = new URL(options.baseUrl);
    } catch {
      throw new ConfigError('--base-url', `must be an http(s) URL, got "${options.baseUrl}"`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConfigError('--base-url', `must be an http(s) URL, got "${options.baseUrl}"`);
    }
    this.settings = { ...CLIENT_DEFAULTS, random: Math.random, ...options };
    this.model = options.model;
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  }

  async complete(messages: readonly ChatMessage[], options: CompleteOptions = {}): Promise<ChatReply> {
    const { retries } = this.settings;
    for (let attempt = 1; ; attempt++) {
      this.throwIfCancelled();
      try {
        return { ...(await this.attempt(messages, options)), attempts: attempt };
      } catch (error) {
        if (!(error instanceof RetryableFailure)) throw error;
        if (attempt > retries) {
          throw new ModelError('MODEL_UNAVAILABLE', `${this.url}: ${error.message} (gave up after ${attempt} attempts)`, {
            details: { url: this.url, attempts: attempt },
            cause: error,
          });
        }
        await sleep(error.retryAfterMs ?? this.backoff(attempt), undefined, this.settings.signal ? { signal: this.settings.signal } : {}).catch(() => this.throwIfCancelled());
      }
    }
  }

  /** @throws EpisodeCancelledError once the client's signal has aborted. */
  private throwIfCancelled(): void {
    if (this.settings.signal?.aborted) throw new EpisodeCancelledError('the model client was cancelled');
  }

  /** Full jitter: uniform in [0, min(max, base·2^(attempt-1))]. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.settings.maxBackoffMs, this.settings.backoffMs * 2 ** (attempt - 1));
    return Math.round(this.settings.random() * ceiling);
  }

  /** The request body: InterCode's sampling settings, plus tools, seed and token requests when asked. */
  private body(messages: readonly ChatMessage[], options: CompleteOptions): string {
    const { temperature, topP, maxTokens, tokens } = this.settings;
    return JSON.stringify({
      model: this.model,
      messages: wireMessages(messages),
      temperature,
      top_p: topP,
      max_tokens: maxTokens,
      n: 1,
      ...(options.tools && options.tools.length > 0 ? { tools: wireTools(options.tools), tool_choice: 'auto' } : {}),
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
      ...(tokens !== 'none' ? { logprobs: true } : {}),
      ...(tokens === 'ids' ? { return_token_ids: true } : {}),
    });
  }

  private async attempt(messages: readonly ChatMessage[], options: CompleteOptions): Promise<Omit<ChatReply, 'attempts'>> {
    const { timeoutMs, apiKey } = this.settings;
    let response: Response;
    let text: string;
    try {
      response = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
        body: this.body(messages, options),
        signal: this.settings.signal ? AbortSignal.any([AbortSignal.timeout(timeoutMs), this.settings.signal]) : AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      this.throwIfCancelled();
      const name = (error as Error).name;
      const why = name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : `request failed (${describeCause(error)})`;
      throw new RetryableFailure(why, undefined, { cause: error });
    }
    if (response.status === 429 || response.status >= 500) {
      throw new RetryableFailure(`HTTP ${response.status}: ${excerpt(text)}`, retryAfter(response.headers));
    }
    if (!response.ok) {
      throw new ModelError('MODEL_REQUEST_REJECTED', `${this.url}: HTTP ${response.status}: ${excerpt(text)}`, {
        details: { url: this.url, status: response.status },
      });
    }
    return parseCompletion(text, this.url);
  }
}

function describeCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}



/** `retry-after-ms` (OpenAI's), else `Retry-After` in seconds or as an HTTP date; capped at 2 minutes. */
function retryAfter(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.has('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return Math.min(ms, 120_000);
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  const seconds = Number(value);
  const wait = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(wait) ? Math.min(Math.max(0, wait), 120_000) : undefined;
}
