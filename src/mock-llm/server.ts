import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatMessage } from '../agents/index.js';
import type { RecordedModel } from './recorded-model.js';

export interface MockServerStats {
  requests: number;
  /** Requests answered past the end of their recording (the last reply repeated). */
  beyondRecording: number;
  /** Requests no recorded episode matched (answered 404). */
  unmatched: number;
}

export interface MockServer {
  /** e.g. http://127.0.0.1:8123/v1 */
  readonly baseUrl: string;
  readonly stats: MockServerStats;
  close(): Promise<void>;
}

/** Token counts the mock reports: about four characters a token (it has no tokenizer). */
const tokens = (text: string) => Math.ceil(text.length / 4);

/**
 * Serves `model` as an OpenAI-compatible endpoint on 127.0.0.1 (`port` 0: any free port):
 * `POST /v1/chat/completions` (also `/chat/completions`) and `GET /v1/models`. Errors use
 * OpenAI's `{"error": {"message", "type"}}` shape: 400 for a malformed request, 404 when no
 * recorded episode matches.
 */
export async function startMockServer(model: RecordedModel, port: number): Promise<MockServer> {
  const stats: MockServerStats = { requests: 0, beyondRecording: 0, unmatched: 0 };
  const server: Server = createServer((request, response) => {
    handle(model, stats, request, response).catch((error: unknown) => send(response, 500, errorBody(String(error), 'server_error')));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${address.port}/v1`,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function handle(model: RecordedModel, stats: MockServerStats, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const path = (request.url ?? '').split('?')[0];
  if (request.method === 'GET' && (path === '/v1/models' || path === '/models')) {
    return send(response, 200, { object: 'list', data: [{ id: 'recorded', object: 'model', owned_by: 'intercode-ts' }] });
  }
  if (request.method !== 'POST' || (path !== '/v1/chat/completions' && path !== '/chat/completions')) {
    return send(response, 404, errorBody(`no route ${request.method} ${path}`, 'invalid_request_error'));
  }
  let body: { model?: unknown; messages?: unknown };
  try {
    body = JSON.parse(await readBody(request)) as typeof body;
  } catch {
    return send(response, 400, errorBody('the body is not JSON', 'invalid_request_error'));
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || !messages.every((m) => typeof m?.role === 'string' && typeof m?.content === 'string')) {
    return send(response, 400, errorBody('"messages" must be a list of {role, content} strings', 'invalid_request_error'));
  }
  stats.requests += 1;
  const answer = model.answer(messages as ChatMessage[]);
  if ('error' in answer) {
    stats.unmatched += 1;
    return send(response, 404, errorBody(answer.error, 'invalid_request_error'));
  }
  if (answer.beyondRecording) stats.beyondRecording += 1;
  const prompt = (messages as ChatMessage[]).reduce((n, m) => n + tokens(m.content), 0);
  const completion = tokens(answer.reply);
  send(response, 200, {
    id: `chatcmpl-recorded-${answer.episode}-${answer.turn}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: typeof body.model === 'string' ? body.model : 'recorded',
    choices: [{ index: 0, message: { role: 'assistant', content: answer.reply }, finish_reason: 'stop' }],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  });
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

const errorBody = (message: string, type: string) => ({ error: { message, type } });

function send(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}
