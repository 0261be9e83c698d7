import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A reply of the scripted model: text, and function calls `[name, argumentsObject]`. */
export interface ScriptedReply {
  content?: string | null;
  calls?: [string, Record<string, unknown>][];
  /** Extra fields merged into the choice (logprobs, token_ids…). */
  choice?: Record<string, unknown>;
  /** Extra top-level fields (prompt_token_ids…). */
  top?: Record<string, unknown>;
}

/** An OpenAI-compatible endpoint on 127.0.0.1 answering request n with replies[n] (the last repeats); keeps every request body. */
export async function scriptedServer(replies: ScriptedReply[]): Promise<{ baseUrl: string; bodies: any[]; close: () => Promise<void> }> {
  const bodies: any[] = [];
  const server: Server = createServer((request, response) => {
    let text = '';
    request.on('data', (c) => (text += c));
    request.on('end', () => {
      bodies.push(JSON.parse(text));
      const reply = replies[Math.min(bodies.length - 1, replies.length - 1)]!;
      const n = bodies.length;
      const message = {
        role: 'assistant',
        content: reply.content ?? null,
        ...(reply.calls ? { tool_calls: reply.calls.map(([name, args], i) => ({ id: `c${n}_${i}`, type: 'function', function: { name, arguments: JSON.stringify(args) } })) } : {}),
      };
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ ...reply.top, choices: [{ index: 0, message, finish_reason: reply.calls ? 'tool_calls' : 'stop', ...reply.choice }], usage: { prompt_tokens: 10, completion_tokens: 2 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
