import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, ModelError } from '../../errors.js';
import type { ChatMessage, ChatModel, ChatReply } from './chat-model.js';

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
  /** Random source for the jitter (tests pass a fixed one). */
  random?: () => number;
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
} as const;

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
  private readonly settings: Required<Omit<OpenAiClientOptions, 'apiKey'>> & { apiKey?: string };

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

  async complete(messages: readonly ChatMessage[]): Promise<ChatReply> {
    const { retries } = this.settings;
    for (let attempt = 1; ; attempt++) {
      try {
        return { ...(await this.attempt(messages)), attempts: attempt };
      } catch (error) {
        if (!(error instanceof RetryableFailure)) throw error;
        if (attempt > retries) {
          throw new ModelError('MODEL_UNAVAILABLE', `${this.url}: ${error.message} (gave up after ${attempt} attempts)`, {
            details: { url: this.url, attempts: attempt },
            cause: error,
          });
        }
        await sleep(error.retryAfterMs ?? this.backoff(attempt));
      }
    }
  }

  /** Full jitter: uniform in [0, min(max, base·2^(attempt-1))]. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.settings.maxBackoffMs, this.settings.backoffMs * 2 ** (attempt - 1));
    return Math.round(this.settings.random() * ceiling);
  }

  private async attempt(messages: readonly ChatMessage[]): Promise<Omit<ChatReply, 'attempts'>> {
    const { temperature, topP, maxTokens, timeoutMs, apiKey } = this.settings;
    let response: Response;
    let text: string;
    try {
      response = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
        body: JSON.stringify({ model: this.model, messages, temperature, top_p: topP, max_tokens: maxTokens, n: 1 }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (error) {
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

const excerpt = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text).replace(/\s+/g, ' ').trim();

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

function parseCompletion(text: string, url: string): Omit<ChatReply, 'attempts'> {
  const reject = (problem: string): never => {
    throw new ModelError('MODEL_REQUEST_REJECTED', `${url}: the answer is not a chat completion: ${problem}`, { details: { url } });
  };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return reject(`not JSON: ${excerpt(text)}`);
  }
  const choices = (body as { choices?: unknown }).choices;
  if (!Array.isArray(choices) || choices.length === 0) return reject('no "choices"');
  const message = (choices[0] as { message?: { content?: unknown } }).message;
  if (!message || typeof message !== 'object') return reject('"choices[0].message" missing');
  const content = message.content ?? '';
  if (typeof content !== 'string') return reject('"choices[0].message.content" is not a string');
  const usage = (body as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } }).usage;
  const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) ? n : 0);
  return { content, usage: { promptTokens: count(usage?.prompt_tokens), completionTokens: count(usage?.completion_tokens) } };
}
