import type { Command } from 'commander';
import { CLIENT_DEFAULTS, knownPrices, OpenAiChatClient, parsePrices, TOKEN_REQUESTS, type TokenPrices, type TokenRequest } from '../agents/index.js';
import { ConfigError } from '../errors.js';

/** The model flags `collect --policy llm:MODEL` shares with `eval`, plus sampling and token requests. */
export interface ModelFlags {
  baseUrl?: string;
  apiKey?: string;
  prices?: string;
  requestTimeout: string;
  retries: string;
  temperature: string;
  tokens: string;
}

/** Adds the model client's flags to `command`; `temperature` is the command's default. */
export function addModelFlags(command: Command, temperature: string): Command {
  return command
    .option('--base-url <url>', `OpenAI-compatible API base URL (default: $OPENAI_BASE_URL, else ${CLIENT_DEFAULTS.baseUrl})`)
    .option('--api-key <key>', 'API key (default: $OPENAI_API_KEY; prefer the variable, flags show in process lists)')
    .option('--prices <in,out>', 'USD per million input and output tokens (default: list prices of known OpenAI models)')
    .option('--request-timeout <seconds>', 'time limit of one model request', '60')
    .option('--retries <n>', 'retries of a request after 429, 5xx, timeouts and connection failures (exponential backoff)', '6')
    .option('--temperature <t>', 'sampling temperature sent with every request (recorded with each sample)', temperature)
    .option(
      '--tokens <what>',
      'token data to ask the server for: none; logprobs (logprobs: true — OpenAI, vLLM, SGLang); ids (also vLLM\'s return_token_ids: prompt and completion ids; others may refuse it)',
      'logprobs',
    );
}

export interface ResolvedModel {
  client: OpenAiChatClient;
  prices: TokenPrices | undefined;
  temperature: number;
  tokens: TokenRequest;
}

/** @throws ConfigError naming the flag that is out of range. */
export function modelFromFlags(modelName: string, flags: ModelFlags): ResolvedModel {
  const retries = nonNegativeInteger('--retries', flags.retries);
  const timeoutSec = Number(flags.requestTimeout);
  if (!(timeoutSec > 0)) throw new ConfigError('--request-timeout', `must be a positive number of seconds, got "${flags.requestTimeout}"`);
  const temperature = Number(flags.temperature);
  if (!Number.isFinite(temperature) || temperature < 0 || temperature > 2) throw new ConfigError('--temperature', `must be a number 0–2, got "${flags.temperature}"`);
  if (!(TOKEN_REQUESTS as readonly string[]).includes(flags.tokens)) throw new ConfigError('--tokens', `must be one of ${TOKEN_REQUESTS.join(', ')}, got "${flags.tokens}"`);
  const tokens = flags.tokens as TokenRequest;
  const { baseUrl, apiKey } = modelEndpoint(flags, process.env);
  const prices = flags.prices ? parsePrices(flags.prices) : knownPrices(modelName);
  const client = new OpenAiChatClient({ baseUrl, model: modelName, timeoutMs: timeoutSec * 1000, retries, temperature, tokens, ...(apiKey ? { apiKey } : {}) });
  return { client, prices, temperature, tokens };
}

/** @throws ConfigError naming `flag` when `value` is not an integer ≥ 0. */
export function nonNegativeInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(flag, `must be a non-negative integer, got "${value}"`);
  return n;
}

/**
 * The endpoint a model command talks to: `--base-url` (else $OPENAI_BASE_URL, else OpenAI's
 * API) and `--api-key` (else $OPENAI_API_KEY). OpenAI's API refuses every request without a
 * key, so that case is refused here, before any sandbox starts, instead of after the client's
 * retries; a base URL that was given (a local server, `intercode mock-llm`) may need no key.
 * @throws ConfigError naming --api-key when neither a key nor a base URL is given.
 */
export function modelEndpoint(flags: { baseUrl?: string; apiKey?: string }, env: Readonly<Record<string, string | undefined>>): { baseUrl: string; apiKey?: string } {
  const baseUrl = flags.baseUrl ?? (env.OPENAI_BASE_URL || undefined);
  const apiKey = flags.apiKey ?? (env.OPENAI_API_KEY || undefined);
  if (baseUrl === undefined && apiKey === undefined) {
    throw new ConfigError(
      '--api-key',
      `is missing, and so is --base-url: ${CLIENT_DEFAULTS.baseUrl} needs a key (set OPENAI_API_KEY or give --api-key), ` +
        'or give --base-url for a server that needs none (a local model server, or `intercode mock-llm`: docs/quickstart-llm.md)',
    );
  }
  return { baseUrl: baseUrl ?? CLIENT_DEFAULTS.baseUrl, ...(apiKey === undefined ? {} : { apiKey }) };
}
