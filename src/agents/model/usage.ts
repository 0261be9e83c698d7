import { ConfigError } from '../../errors.js';
import type { ChatReply } from './chat-model.js';

/** USD per million tokens, input and output. */
export interface TokenPrices {
  input: number;
  output: number;
}

/**
 * Published list prices (USD per million tokens) of a few OpenAI chat models, used when
 * `--prices` is not given. A model missing here costs `null` (unknown), never 0.
 */
const KNOWN_PRICES: Record<string, TokenPrices> = {
  'gpt-3.5-turbo': { input: 0.5, output: 1.5 },
  'gpt-4o-mini': { input: 0.15, output: 0.6 },
  'gpt-4o': { input: 2.5, output: 10 },
};

/** The prices of `model` (a dated variant such as gpt-4o-2024-08-06 takes its family's), or undefined. */
export function knownPrices(model: string): TokenPrices | undefined {
  const family = Object.keys(KNOWN_PRICES)
    .filter((name) => model === name || model.startsWith(`${name}-`))
    .sort((a, b) => b.length - a.length)[0];
  return family ? KNOWN_PRICES[family] : undefined;
}

/**
 * Parses `--prices IN,OUT` (USD per million input and output tokens).
 * @throws ConfigError naming the flag when it is not two non-negative numbers.
 */
export function parsePrices(value: string): TokenPrices {
  const parts = value.split(',').map((p) => Number(p.trim()));
  if (parts.length !== 2 || parts.some((p) => !Number.isFinite(p) || p < 0)) {
    throw new ConfigError('--prices', `must be two non-negative numbers "IN,OUT" (USD per million tokens), got "${value}"`);
  }
  return { input: parts[0]!, output: parts[1]! };
}

/** What one episode (or a whole run) spent on the model. Field names are those of the result logs. */
export interface EpisodeUsage {
  requests: number;
  /** Attempts beyond the first, over all requests (429/5xx/timeouts that were retried). */
  retries: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** USD, or null when the model's prices are unknown. */
  cost_usd: number | null;
}

export const emptyUsage = (): EpisodeUsage => ({ requests: 0, retries: 0, prompt_tokens: 0, completion_tokens: 0, cost_usd: null });

/** Adds one reply's usage to `usage` (in place) and prices it. */
export function addReply(usage: EpisodeUsage, reply: ChatReply, prices: TokenPrices | undefined): void {
  usage.requests += 1;
  usage.retries += reply.attempts - 1;
  usage.prompt_tokens += reply.usage.promptTokens;
  usage.completion_tokens += reply.usage.completionTokens;
  usage.cost_usd = prices ? costOf(usage, prices) : null;
}

/** The sum of several usages; the cost is null when any of them is. */
export function sumUsage(usages: readonly EpisodeUsage[]): EpisodeUsage {
  const total = emptyUsage();
  let cost: number | null = 0;
  for (const u of usages) {
    total.requests += u.requests;
    total.retries += u.retries;
    total.prompt_tokens += u.prompt_tokens;
    total.completion_tokens += u.completion_tokens;
    cost = cost === null || u.cost_usd === null ? null : cost + u.cost_usd;
  }
  total.cost_usd = usages.length === 0 ? null : cost;
  return total;
}

const costOf = (usage: EpisodeUsage, prices: TokenPrices) =>
  (usage.prompt_tokens * prices.input + usage.completion_tokens * prices.output) / 1e6;
