import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenAiChatClient } from '../../src/agents/index.js';
import { ConfigError, ModelError } from '../../src/errors.js';

type Handler = (body: any, request: IncomingMessage, response: ServerResponse) => void;
let server: Server | undefined;

/** A local endpoint answering request n with handlers[n] (the last one repeats). */
async function serve(handlers: Handler[]): Promise<{ url: string; requests: { body: any; headers: IncomingMessage['headers']; at: number }[] }> {
  const requests: { body: any; headers: IncomingMessage['headers']; at: number }[] = [];
  server = createServer((request, response) => {
    let text = '';
    request.on('data', (c) => (text += c));
    request.on('end', () => {
      const body = JSON.parse(text);
      requests.push({ body, headers: request.headers, at: Date.now() });
      handlers[Math.min(requests.length - 1, handlers.length - 1)]!(body, request, response);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests };
}

afterEach(async () => {
  const running = server;
  server = undefined;
  if (!running) return;
  running.closeAllConnections();
  await new Promise((resolve) => running.close(resolve));
});

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Handler => (_b, _r, response) => {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
};
const completion = (content: string | null, usage = { prompt_tokens: 12, completion_tokens: 3 }) =>
  json(200, { choices: [{ index: 0, message: { role: 'assistant', content } }], usage });

const fast = { backoffMs: 10, maxBackoffMs: 50, random: () => 1 };

describe('OpenAiChatClient', () => {
  it('posts the chat request with the key and sampling settings, and reads content and usage', async () => {
    const { url, requests } = await serve([completion('```bash\nls\n```')]);
    const client = new OpenAiChatClient({ baseUrl: `${url}/`, apiKey: 'sk-test', model: 'm1', ...fast });
    const reply = await client.complete([{ role: 'user', content: 'hi' }]);
    expect(reply).toEqual({
      content: '```bash\nls\n```',
      toolCalls: [],
      usage: { promptTokens: 12, completionTokens: 3 },
      attempts: 1,
      tokens: { promptIds: null, completionIds: null, logprobs: null },
      finishReason: null,
      policyVersion: null,
    });
    expect(requests[0]!.headers.authorization).toBe('Bearer sk-test');
    expect(requests[0]!.body).toMatchObject({ model: 'm1', messages: [{ role: 'user', content: 'hi' }], temperature: 0, top_p: 1, max_tokens: 512, n: 1 });
  });

  it('retries a 429 and then succeeds, after the backoff', async () => {
    const { url, requests } = await serve([json(429, { error: { message: 'slow down' } }), completion('ok')]);
    const client = new OpenAiChatClient({ baseUrl: url, model: 'm', backoffMs: 200, maxBackoffMs: 200, random: () => 1 });
    const reply = await client.complete([{ role: 'user', content: 'x' }]);
    expect(reply.content).toBe('ok');
    expect(reply.attempts).toBe(2);
    expect(requests).toHaveLength(2);
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(190);
  });

  it('honours Retry-After and retries 5xx', async () => {
    const { url, requests } = await serve([json(503, {}, { 'retry-after': '0.3' }), json(500, {}), completion('fine')]);
    const client = new OpenAiChatClient({ baseUrl: url, model: 'm', ...fast });
    const reply = await client.complete([{ role: 'user', content: 'x' }]);
    expect(reply).toMatchObject({ content: 'fine', attempts: 3 });
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(280);
  });

  it('gives up after the retries with MODEL_UNAVAILABLE', async () => {
    const { url, requests } = await serve([json(429, { error: { message: 'quota' } })]);
    const client = new OpenAiChatClient({ baseUrl: url, model: 'm', retries: 2, ...fast });
    const error = await client.complete([{ role: 'user', content: 'x' }]).catch((e) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect(error.code).toBe('MODEL_UNAVAILABLE');
    expect(error.message).toContain('HTTP 429');
    expect(error.message).toContain('gave up after 3 attempts');
    expect(requests).toHaveLength(3);
  });

  it('retries a request that times out', async () => {
    const hang: Handler = () => undefined;
    const { url, requests } = await serve([hang, completion('late but fine')]);
    const client = new OpenAiChatClient({ baseUrl: url, model: 'm', timeoutMs: 200, ...fast });
    const reply = await client.complete([{ role: 'user', content: 'x' }]);
    expect(reply).toMatchObject({ content: 'late but fine', attempts: 2 });
    expect(requests).toHaveLength(2);
  });

  it('fails at once on a 4xx other than 429, with the status and the body', async () => {
    const { url, requests } = await serve([json(401, { error: { message: 'bad key' } })]);
    const client = new OpenAiChatClient({ baseUrl: url, model: 'm', ...fast });
    const error = await client.complete([{ role: 'user', content: 'x' }]).catch((e) => e);
    expect(error).toMatchObject({ code: 'MODEL_REQUEST_REJECTED' });
    expect(error.message).toContain('HTTP 401');
    expect(error.message).toContain('bad key');
    expect(requests).toHaveLength(1);
  });

  it('rejects an answer that is not a chat completion, and reads null content as empty', async () => {
    const { url } = await serve([json(200, { nothing: true }), json(200, { choices: [{ message: { role: 'assistant', content: null } }] })]);
    const client = new OpenAiChatClient({ baseUrl: url, model: 'm', ...fast });
    await expect(client.complete([])).rejects.toMatchObject({ code: 'MODEL_REQUEST_REJECTED' });
    expect(await client.complete([])).toMatchObject({ content: '', toolCalls: [], usage: { promptTokens: 0, completionTokens: 0 }, attempts: 1 });
  });

  it('retries a refused connection and then reports it', async () => {
    const { url } = await serve([completion('never')]);
    const running = server!;
    server = undefined;
    running.closeAllConnections();
    await new Promise((resolve) => running.close(resolve));
    const client = new OpenAiChatClient({ baseUrl: url, model: 'm', retries: 1, ...fast });
    const error = await client.complete([]).catch((e) => e);
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' });
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('refuses a base URL that is not http(s)', () => {
    expect(() => new OpenAiChatClient({ baseUrl: 'ftp://x', model: 'm' })).toThrow(ConfigError);
  });
});
