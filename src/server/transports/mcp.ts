import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { EpisodeSession } from '../episode-session.js';
import { checkpointToolDescription } from '../env-tools.js';
import { MAX_FORK, WireError, type ObservationReply } from '../protocol.js';
import type { Lease, SessionLeases } from '../sessions.js';
import { readJsonBody, sendJson } from './http-body.js';

export interface McpTransportOptions {
  leases: SessionLeases;
  envName: string;
  version: string;
  maxMessageBytes: number;
  /** Also serve the tools `checkpoint`, `restore`, `release` and `fork` (off by default: they let a model search with the env's reward). */
  checkpointTools: boolean;
  /**
   * Answers a POST that is neither an `initialize` nor in an MCP session: OpenEnv's JSON-RPC
   * dialect (tools/list and tools/call with no initialize), served on the same path.
   */
  otherDialect: (request: IncomingMessage, response: ServerResponse, body: unknown) => Promise<void>;
}

interface McpSession {
  transport: StreamableHTTPServerTransport;
  lease: Lease;
}

/**
 * MCP on `/mcp` (streamable HTTP, the official TypeScript SDK): each MCP session holds one
 * lease — one env and sandbox — from its `initialize` until the client deletes the session,
 * it idles out, or the server stops. Tools: `reset(task_id?, seed?)`, `execute(code)`,
 * `submit(answer?)`; each answers with the output text and a JSON line
 * `{"reward","done","exit_code",...}`. A refused call (step before reset…) is a tool result
 * with `isError` and the wire code, so a model sees it.
 */
export class McpTransport {
  private readonly sessions = new Map<string, McpSession>();

  constructor(private readonly options: McpTransportOptions) {}

  async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let body: unknown;
    try {
      body = request.method === 'POST' ? await readJsonBody(request, this.options.maxMessageBytes) : undefined;
    } catch (error) {
      if (!(error instanceof WireError)) throw error;
      sendJson(response, error.code === 'INVALID_JSON' ? 400 : 413, rpcError(error.code === 'INVALID_JSON' ? -32700 : -32600, error.message, error.code, error.extra));
      return;
    }
    const id = request.headers['mcp-session-id'];
    const known = typeof id === 'string' ? this.sessions.get(id) : undefined;
    if (known) {
      await known.transport.handleRequest(request, response, body);
      return;
    }
    if (typeof id === 'string') {
      sendJson(response, 404, rpcError(-32001, 'unknown or ended MCP session; initialize a new one', 'SESSION_ERROR'));
      return;
    }
    if (request.method !== 'POST') {
      sendJson(response, 400, rpcError(-32000, 'no MCP session: send an initialize request first (without Mcp-Session-Id)', 'SESSION_ERROR'));
      return;
    }
    if (!isInitializeRequest(body)) {
      await this.options.otherDialect(request, response, body);
      return;
    }
    await this.start(request, response, body);
  }

  private async start(request: IncomingMessage, response: ServerResponse, body: unknown): Promise<void> {
    const { leases } = this.options;
    let transport: StreamableHTTPServerTransport | undefined;
    let lease: Lease;
    try {
      lease = leases.open(`mcp ${request.socket.remoteAddress ?? '?'}`, () => {
        const sessionId = transport?.sessionId;
        if (sessionId) this.sessions.delete(sessionId);
        void transport?.close();
      });
    } catch (error) {
      // The MCP SDKs read no body of an HTTP error (Python's raises "503 Service Unavailable"
      // alone), so the refusal answers the initialize as a JSON-RPC error with HTTP 200: its
      // message (cause and code) is what the SDK's caller gets.
      const wire = error as WireError;
      const id = (body as { id?: string | number }).id ?? null;
      sendJson(response, 200, { ...rpcError(-32000, `${wire.message} (${wire.code})`, wire.code, wire.extra), id }, wire.retryable ? { 'retry-after': '1' } : {});
      return;
    }
    const current = lease;
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (sessionId) => void this.sessions.set(sessionId, { transport: transport!, lease: current }),
    });
    transport.onclose = () => void leases.end(current, 'close');
    try {
      await this.server(current).connect(transport);
      await transport.handleRequest(request, response, body);
    } finally {
      // An initialize that did not make a session (a malformed one, or one that failed) frees its lease at once.
      if (!transport.sessionId) await leases.end(current, 'close');
    }
  }

  private server(lease: Lease): McpServer {
    const { leases, envName, version } = this.options;
    const server = new McpServer({ name: `intercode-${envName}`, version });
    const call = async (request: (session: EpisodeSession) => Promise<ObservationReply>): Promise<CallToolResult> => {
      try {
        return toolResult(await leases.run(lease, request));
      } catch (error) {
        const wire = error instanceof WireError ? error : new WireError('EXECUTION_ERROR', String(error));
        return { isError: true, content: [{ type: 'text', text: `${wire.code}: ${wire.message}` }] };
      }
    };
    server.registerTool(
      'reset',
      {
        description: `Start a new ${envName} episode in a clean sandbox. Returns the task's query. task_id: the dataset index (default: a random task, drawn from seed if given).`,
        inputSchema: { task_id: z.number().int().min(0).optional(), seed: z.number().int().min(0).optional() },
      },
      ({ task_id, seed }) => call((session) => session.reset({ ...(task_id === undefined ? {} : { task_id }), ...(seed === undefined ? {} : { seed }) })),
    );
    server.registerTool(
      'execute',
      { description: `Run code in the episode's ${envName} sandbox; returns its output and exit code.`, inputSchema: { code: z.string() } },
      ({ code }) => call((session) => session.step({ code })),
    );
    server.registerTool(
      'submit',
      {
        description: 'End the episode and get its reward. answer: what the env\'s submit takes, if anything (the flag in CTF, the function name in Python).',
        inputSchema: { answer: z.string().optional() },
      },
      ({ answer }) => call((session) => session.step({ code: answer ? `submit ${answer}` : 'submit' })),
    );
    if (this.options.checkpointTools) this.registerCheckpointTools(server, lease);
    return server;
  }

  /** The checkpoint extension's tools: each answers one JSON text item (the same data as its `/ws` reply). */
  private registerCheckpointTools(server: McpServer, lease: Lease): void {
    const { leases } = this.options;
    const call = async (request: () => Promise<unknown>): Promise<CallToolResult> => {
      try {
        return { content: [{ type: 'text', text: JSON.stringify(await request()) }] };
      } catch (error) {
        const wire = error instanceof WireError ? error : new WireError('EXECUTION_ERROR', String(error));
        return { isError: true, content: [{ type: 'text', text: `${wire.code}: ${wire.message}` }, { type: 'text', text: JSON.stringify({ ...wire.extra, code: wire.code, retryable: wire.retryable }) }] };
      }
    };
    server.registerTool(
      'checkpoint',
      { description: checkpointToolDescription('checkpoint'), inputSchema: {} },
      () => call(() => leases.run(lease, (session) => session.checkpoint())),
    );
    server.registerTool(
      'restore',
      { description: checkpointToolDescription('restore'), inputSchema: { checkpoint_id: z.string().min(1) } },
      ({ checkpoint_id }) => call(() => leases.run(lease, (session) => session.restore({ checkpoint_id }))),
    );
    server.registerTool(
      'release',
      { description: checkpointToolDescription('release'), inputSchema: { checkpoint_id: z.string().min(1) } },
      ({ checkpoint_id }) => call(() => leases.run(lease, async (session) => session.release({ checkpoint_id }))),
    );
    server.registerTool(
      'fork',
      {
        description: checkpointToolDescription('fork'),
        inputSchema: { n: z.number().int().min(1).max(MAX_FORK) },
      },
      ({ n }) => call(() => leases.fork(lease, n)),
    );
  }

  /** Ends every MCP session's transport (their leases end with the server's shutdown). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.sessions.values()].map(({ transport }) => transport.close()));
    this.sessions.clear();
  }
}

function toolResult(reply: ObservationReply): CallToolResult {
  const { output, exit_code, task, info } = reply.observation;
  const summary = { reward: reply.reward, done: reply.done, exit_code, task_id: task?.task_id ?? null, ...('reward_components' in info ? { reward_components: info.reward_components } : {}), ...('truncation' in info ? { truncation: info.truncation } : {}) };
  return { content: [{ type: 'text', text: output }, { type: 'text', text: JSON.stringify(summary) }] };
}

function rpcError(code: number, message: string, wireCode: string, extra: Readonly<Record<string, unknown>> = {}) {
  return { jsonrpc: '2.0', error: { code, message, data: { ...extra, code: wireCode } }, id: null };
}
