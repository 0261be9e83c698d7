import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatMessage } from '../agents/index.js';
import type { RecordedAnswer, RecordedModel } from './recorded-model.js';
import { completionIds, logprobsOf, promptIds, type WireMessage } from './synthetic-tokens.js';

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

export interface MockServerOptions {
  /** Stamped on every completion as `policy_version` (what a trainer's inference server reports after a weight update); called per request. Omitted: no stamp. */
  policyVersion?: () => string | number;
}

/** Token counts the mock reports: about four characters a token (it has no tokenizer). */
const tokens = (text: string) => Math.ceil(text.length / 4);

/**
 * Serves `model` as an OpenAI-compatible endpoint on 127.0.0.1 (`port` 0: any free port):
 * `POST /v1/chat/completions` (also `/chat/completions`) and `GET /v1/models`. Errors use
 * OpenAI's `{"error": {"message", "type"}}` shape: 400 for a malformed request, 404 when no
 * recorded episode matches.
 */
export async function startMockServer(model: RecordedModel, port: number, options: MockServerOptions = {}): Promise<MockServer> {
  const stats: MockServerStats = { requests: 0, beyondRecording: 0, unmatched: 0 };
  const server: Server = createServer((request, response) => {
    handle(model, stats, options, request, response).catch((error: unknown) => send(response, 500, errorBody(String(error), 'server_error')));
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

async function handle(model: RecordedModel, stats: MockServerStats, options: MockServerOptions, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const path = (request.url ?? '').split('?')[0];
  if (request.method === 'GET' && (path === '/v1/models' || path === '/models')) {
    return send(response, 200, { object: 'list', data: [{ id: 'recorded', object: 'model', owned_by: 'intercode-ts' }] });
  }
  if (request.method !== 'POST' || (path !== '/v1/chat/completions' && path !== '/chat/completions')) {
    return send(response, 404, errorBody(`no route ${request.method} ${path}`, 'invalid_request_error'));
  }
  let body: { model?: unknown; messages?: unknown; tools?: unknown; logprobs?: unknown; return_token_ids?: unknown };
  try {
    body = JSON.parse(await readBody(request)) as typeof body;
  } catch {
    return send(response, 400, errorBody('the body is not JSON', 'invalid_request_error'));
  }
  const messages = body.messages;
  const validMessage = (m: { role?: unknown; content?: unknown; tool_calls?: unknown }) =>
    typeof m?.role === 'string' && (typeof m.content === 'string' || (m.role === 'assistant' && m.content === null && Array.isArray(m.tool_calls)));
  if (!Array.isArray(messages) || !messages.every(validMessage)) {
    return send(response, 400, errorBody('"messages" must be a list of {role, content} (content a string, or null on an assistant message with tool_calls)', 'invalid_request_error'));
  }
  stats.requests += 1;
  const chat = (messages as WireMessage[]).map((m) => ({ role: m.role, content: m.content ?? '' })) as ChatMessage[];
  const answer = model.answer(chat);
  if ('error' in answer) {
    stats.unmatched += 1;
    return send(response, 404, errorBody(answer.error, 'invalid_request_error'));
  }
  if (answer.beyondRecording) stats.beyondRecording += 1;
  const message = replyMessage(answer, offersExecute(body.tools));
  const wantIds = body.return_token_ids === true;
  const wantLogprobs = body.logprobs === true;
  const prompt = wantIds || wantLogprobs ? promptIds(messages as WireMessage[]) : null;
  const completion = wantIds || wantLogprobs ? completionIds(message) : null;
  const promptTokens = prompt ? prompt.length : (messages as WireMessage[]).reduce((n, m) => n + tokens(m.content ?? ''), 0);
  const completionTokens = completion ? completion.length : tokens(answer.reply);
  send(response, 200, {
    id: `chatcmpl-recorded-${answer.episode}-${answer.turn}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: typeof body.model === 'string' ? body.model : 'recorded',
    ...(options.policyVersion ? { policy_version: options.policyVersion() } : {}),
    ...(wantIds ? { prompt_token_ids: prompt } : {}),
    choices: [
      {
        index: 0,
        message,
        finish_reason: message.tool_calls ? 'tool_calls' : 'stop',
        ...(wantLogprobs ? { logprobs: { content: logprobsOf(completion!).map((logprob, i) => ({ token: `token_id:${completion![i]}`, logprob, top_logprobs: [] })) } } : {}),
        ...(wantIds ? { token_ids: completion } : {}),
      },
    ],
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  });
}

/** Whether the request offers a function named `execute` (the `tools` strategy): then replies are function calls. */
function offersExecute(tools: unknown): boolean {
  return Array.isArray(tools) && tools.some((t: { function?: { name?: unknown } }) => t?.function?.name === 'execute');
}

/** The assistant message: the recorded action as a function call when tools are offered and it has one, else the text reply. */
function replyMessage(answer: Extract<RecordedAnswer, { reply: string }>, tools: boolean): WireMessage & { role: 'assistant' } {
  if (!tools || answer.call === null) return { role: 'assistant', content: answer.reply };
  const call = { id: `call_${answer.episode}_${answer.turn}`, type: 'function', function: { name: answer.call.name, arguments: JSON.stringify(answer.call.arguments) } };
  return { role: 'assistant', content: null, tool_calls: [call] } as WireMessage & { role: 'assistant' };
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
