/**
 * The chat-completions JSON shapes: our messages and tools as the API takes them, and a
 * completion (text, tool calls, usage, token ids, log-probabilities) parsed back.
 */

import { ModelError } from '../../errors.js';
import type { ChatMessage, ChatReply, ToolCall, ToolSpec, TurnTokens } from './chat-model.js';

export const excerpt = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text).replace(/\s+/g, ' ').trim();

/** Messages in the API's shape: `tool_calls` on assistant messages, `tool_call_id` on tool ones. */
export function wireMessages(messages: readonly ChatMessage[]): Record<string, unknown>[] {
  return messages.map((m) => {
    if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length > 0) {
      return { role: 'assistant', content: m.content === '' ? null : m.content, tool_calls: m.toolCalls.map(wireToolCall) };
    }
    if (m.role === 'tool') return { role: 'tool', tool_call_id: m.toolCallId ?? '', content: m.content };
    return { role: m.role, content: m.content };
  });
}

export const wireToolCall = (call: ToolCall) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } });

export const wireTools = (tools: readonly ToolSpec[]) =>
  tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));

const isIntList = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => Number.isInteger(x));

/**
 * The tokens of a completion, each part null when the server did not give it: per-token
 * log-probabilities from `logprobs.content`; completion ids from `choices[0].token_ids`
 * (vLLM `return_token_ids`), else from logprob tokens of the form `token_id:<n>` (vLLM
 * `--return-tokens-as-token-ids`); prompt ids from `prompt_token_ids` (top level or on the choice).
 */
export function parseTokens(body: Record<string, unknown>, choice: Record<string, unknown>): TurnTokens {
  const content = (choice.logprobs as { content?: unknown } | null | undefined)?.content;
  const entries = Array.isArray(content) ? (content as { token?: unknown; logprob?: unknown }[]) : null;
  const logprobs = entries && entries.every((e) => typeof e?.logprob === 'number') ? entries.map((e) => e.logprob as number) : null;
  let completionIds = isIntList(choice.token_ids) ? [...choice.token_ids] : null;
  if (completionIds === null && entries && entries.length > 0 && entries.every((e) => typeof e?.token === 'string' && /^token_id:\d+$/.test(e.token))) {
    completionIds = entries.map((e) => Number((e.token as string).slice('token_id:'.length)));
  }
  const prompt = body.prompt_token_ids ?? choice.prompt_token_ids;
  return { promptIds: isIntList(prompt) ? [...prompt] : null, completionIds, logprobs };
}

/** @throws ModelError (MODEL_REQUEST_REJECTED) naming the URL when `text` is not a chat completion. */
export function parseCompletion(text: string, url: string): Omit<ChatReply, 'attempts'> {
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
  const choice = choices[0] as Record<string, unknown>;
  const message = choice.message as { content?: unknown; tool_calls?: unknown } | undefined;
  if (!message || typeof message !== 'object') return reject('"choices[0].message" missing');
  const content = message.content ?? '';
  if (typeof content !== 'string') return reject('"choices[0].message.content" is not a string');
  const toolCalls: ToolCall[] = [];
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    if (!Array.isArray(message.tool_calls)) return reject('"choices[0].message.tool_calls" is not a list');
    message.tool_calls.forEach((call: { id?: unknown; function?: { name?: unknown; arguments?: unknown } }, i) => {
      const name = call?.function?.name;
      const args = call?.function?.arguments;
      if (typeof name !== 'string') return reject(`"choices[0].message.tool_calls[${i}].function.name" is not a string`);
      toolCalls.push({
        id: typeof call.id === 'string' && call.id !== '' ? call.id : `call_${i}`,
        name,
        arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
      });
    });
  }
  const usage = (body as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } }).usage;
  const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) ? n : 0);
  return {
    content,
    toolCalls,
    usage: { promptTokens: count(usage?.prompt_tokens), completionTokens: count(usage?.completion_tokens) },
    tokens: parseTokens(body as Record<string, unknown>, choice),
    finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null,
    policyVersion: policyVersionOf(body as Record<string, unknown>, choice),
  };
}

/** The policy version a server stamped on a completion: `policy_version` or `weight_version`, at the top, in `meta_info`, or on the choice. */
function policyVersionOf(body: Record<string, unknown>, choice: Record<string, unknown>): string | number | null {
  for (const holder of [body, body.meta_info, choice, choice.meta_info]) {
    if (holder === null || typeof holder !== 'object') continue;
    for (const key of ['policy_version', 'weight_version']) {
      const value = (holder as Record<string, unknown>)[key];
      if ((typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && value !== '')) return value;
    }
  }
  return null;
}
