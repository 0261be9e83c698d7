import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { leaseContext, offeredOperations, runOperation, type Operation } from '../operations.js';
import { WireError, type ObservationReply } from '../protocol.js';
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
    const { leases, envName, version, checkpointTools } = this.options;
    const server = new McpServer({ name: `intercode-${envName}`, version });
    const context = leaseContext(leases, lease);
    for (const operation of offeredOperations({ checkpointTools })) {
      server.registerTool(operation.name, { description: operation.description(envName), inputSchema: zodShape(operation) }, async (args: Record<string, unknown>) => {
        try {
          return toolResult(operation, await runOperation(context, operation, args));
        } catch (error) {
          return errorResult(operation, error instanceof WireError ? error : new WireError('EXECUTION_ERROR', String(error)));
        }
      });
    }
    return server;
  }

  /** Ends every MCP session's transport (their leases end with the server's shutdown). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.sessions.values()].map(({ transport }) => transport.close()));
    this.sessions.clear();
  }
}

/**
 * An operation's answer as MCP content. An episode operation: the output text, then a JSON
 * line `{"reward","done","exit_code","task_id",…}`; a checkpoint operation: its reply as one
 * JSON text (the same data as its `/ws` reply).
 */
function toolResult(operation: Operation, value: unknown): CallToolResult {
  if (operation.checkpointExtension) return { content: [{ type: 'text', text: JSON.stringify(value) }] };
  const reply = value as ObservationReply;
  const { output, exit_code, task, info } = reply.observation;
  const summary = { reward: reply.reward, done: reply.done, exit_code, task_id: task?.task_id ?? null, ...('reward_components' in info ? { reward_components: info.reward_components } : {}), ...('truncation' in info ? { truncation: info.truncation } : {}) };
  return { content: [{ type: 'text', text: output }, { type: 'text', text: JSON.stringify(summary) }] };
}

/** A refused call as a tool result with `isError` and the wire code, so a model sees it (a checkpoint operation's with its details as JSON too). */
function errorResult(operation: Operation, wire: WireError): CallToolResult {
  const content: CallToolResult['content'] = [{ type: 'text', text: `${wire.code}: ${wire.message}` }];
  if (operation.checkpointExtension) content.push({ type: 'text', text: JSON.stringify({ ...wire.extra, code: wire.code, retryable: wire.retryable }) });
  return { isError: true, content };
}

/** An operation's arguments as the SDK's zod shape (the SDK checks a call against it before it runs). */
function zodShape(operation: Operation): Record<string, z.ZodTypeAny> {
  return Object.fromEntries(
    Object.entries(operation.arguments).map(([key, spec]) => {
      let schema: z.ZodTypeAny;
      if (spec.type === 'integer') {
        const integer = z.number().int().min(spec.minimum);
        schema = spec.maximum === undefined ? integer : integer.max(spec.maximum);
      } else schema = spec.minLength ? z.string().min(spec.minLength) : z.string();
      return [key, spec.required ? schema : schema.optional()];
    }),
  );
}

function rpcError(code: number, message: string, wireCode: string, extra: Readonly<Record<string, unknown>> = {}) {
  return { jsonrpc: '2.0', error: { code, message, data: { ...extra, code: wireCode } }, id: null };
}
