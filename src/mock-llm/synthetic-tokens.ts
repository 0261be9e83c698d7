/**
 * SYNTHETIC token ids and log-probabilities for the recorded model: no real tokenizer, just a
 * deterministic byte-level one, so that the token paths of clients (ids, logprobs, loss masks)
 * are tested over HTTP. Not any real model's tokens.
 *
 * A message renders as `<start> role <sep> text <end>`, with `text` the UTF-8 bytes of the
 * content followed, for each tool call, by `\n<call>name(arguments)`. Byte b is id b + 3; ids
 * 0, 1, 2 are start, end and sep. The prompt is every message rendered, then `<start>
 * assistant <sep>`; the completion is the reply's text and `<end>`. So a later turn's prompt
 * begins with the earlier prompt plus completion, as with a real chat template.
 */

const START = 0;
const END = 1;
const SEP = 2;
const encoder = new TextEncoder();

const bytes = (text: string) => [...encoder.encode(text)].map((b) => b + 3);

/** A message's content and calls as the request or the reply carries them. */
export interface WireMessage {
  role: string;
  content?: string | null;
  tool_calls?: { function?: { name?: string; arguments?: string } }[];
}

const text = (m: WireMessage) => (m.content ?? '') + (m.tool_calls ?? []).map((c) => `\n<call>${c.function?.name ?? ''}(${c.function?.arguments ?? ''})`).join('');

/** The prompt's ids: every message, then the assistant header. */
export function promptIds(messages: readonly WireMessage[]): number[] {
  const ids: number[] = [];
  for (const m of messages) ids.push(START, ...bytes(m.role), SEP, ...bytes(text(m)), END);
  ids.push(START, ...bytes('assistant'), SEP);
  return ids;
}

/** The completion's ids: the reply's text and calls, then end. */
export const completionIds = (reply: WireMessage): number[] => [...bytes(text(reply)), END];

/** One deterministic log-probability per token, in (-1, 0). */
export const logprobsOf = (ids: readonly number[]): number[] => ids.map((id, i) => -(((id * 31 + i * 7) % 97) + 1) / 100);
