import { envTools, toolCallResult } from '../env-tools.js';
import { findOperation, leaseContext, runOperation } from '../operations.js';
import { WireError } from '../protocol.js';
import type { Lease, SessionLeases } from '../sessions.js';

export interface OpenEnvRpcOptions {
  leases: SessionLeases;
  envName: string;
  /** Also list and call the checkpoint extension's tools (`serve --checkpoint-tools`). */
  checkpointTools: boolean;
}

/** JSON-RPC 2.0 error codes OpenEnv's server uses. */
export const RPC_ERRORS = { parse: -32700, invalidRequest: -32600, methodNotFound: -32601, invalidParams: -32602, internal: -32603, server: -32000 } as const;

export type RpcResponse = { jsonrpc: '2.0'; id: string | number | null } & ({ result: unknown } | { error: { code: number; message: string; data?: unknown } });

/**
 * OpenEnv's MCP JSON-RPC dialect, as its server answers it on `POST /mcp` and in `/ws`
 * `{"type": "mcp"}` messages: `tools/list` and `tools/call` with no `initialize`, and the
 * session methods `openenv/session/create` / `openenv/session/close` (each HTTP session is a
 * lease of its own, named by its id in `params.session_id`). A `tools/call` without a session
 * runs on a lease taken for that call alone, as OpenEnv's runs on a fresh env. Every answer is
 * a JSON-RPC response (errors too: OpenEnv sends them with HTTP 200).
 */
export class OpenEnvRpc {
  private readonly sessions = new Map<string, Lease>();

  constructor(private readonly options: OpenEnvRpcOptions) {}

  /**
   * Answers one request. `bound`: the lease of the `/ws` session the request came on, if any.
   * Never throws.
   */
  async answer(body: unknown, bound?: Lease): Promise<RpcResponse> {
    const request = parseRequest(body);
    if ('error' in request) return request;
    const { id, method, params } = request;
    const fail = (code: number, message: string, data?: unknown): RpcResponse => ({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } });
    const ok = (result: unknown): RpcResponse => ({ jsonrpc: '2.0', id, result });
    const { leases, envName } = this.options;
    switch (method) {
      case 'openenv/session/create': {
        if (bound) return ok({ session_id: bound.id });
        try {
          const lease = leases.open('openenv-mcp', () => this.sessions.delete(lease.id));
          this.sessions.set(lease.id, lease);
          return ok({ session_id: lease.id });
        } catch (error) {
          return fail(RPC_ERRORS.server, ...wireFailure(error));
        }
      }
      case 'openenv/session/close': {
        const target = params.session_id;
        if (typeof target !== 'string' || target === '') return fail(RPC_ERRORS.invalidParams, "Invalid params - 'session_id' is required");
        if (bound && target === bound.id) return fail(RPC_ERRORS.invalidRequest, 'Cannot close active WebSocket-managed session via MCP method');
        const lease = this.sessions.get(target);
        if (!lease) return fail(RPC_ERRORS.invalidParams, `Unknown session_id: ${target.slice(0, 64)}`);
        this.sessions.delete(target);
        await leases.end(lease, 'close');
        return ok({ session_id: target, closed: true });
      }
      case 'tools/list':
        return ok({ tools: envTools(envName, { checkpointTools: this.options.checkpointTools }) });
      case 'tools/call': {
        const name = params.name;
        if (typeof name !== 'string' || name === '') return fail(RPC_ERRORS.invalidParams, "Missing 'name' in params");
        const args = params.arguments ?? {};
        if (typeof args !== 'object' || args === null || Array.isArray(args)) return fail(RPC_ERRORS.invalidParams, "'arguments' must be an object");
        let lease = bound;
        let own = false;
        if (!lease && params.session_id !== undefined && params.session_id !== null) {
          lease = typeof params.session_id === 'string' ? (this.sessions.get(params.session_id) ?? this.adoptFork(params.session_id)) : undefined;
          if (!lease) return fail(RPC_ERRORS.invalidParams, `Unknown session_id: ${String(params.session_id).slice(0, 64)}`);
        }
        try {
          const operation = findOperation(name, { checkpointTools: this.options.checkpointTools });
          // A checkpoint lives in its session: one made for this call alone would die with it.
          if (operation.checkpointExtension && !lease) return fail(RPC_ERRORS.invalidParams, `${name} needs a session: call openenv/session/create and pass its session_id`);
          if (!lease) {
            lease = leases.open('openenv-mcp call', () => undefined);
            own = true;
          }
          return ok(toolCallResult(operation, await runOperation(leaseContext(leases, lease), operation, args as Record<string, unknown>)));
        } catch (error) {
          return fail(RPC_ERRORS.server, ...wireFailure(error));
        } finally {
          if (own && lease) await leases.end(lease, 'close');
        }
      }
      default:
        return fail(RPC_ERRORS.methodNotFound, `Method not found: ${method.slice(0, 64)}`);
    }
  }

  /** A session a fork made and nobody has taken yet becomes one of this dialect's HTTP sessions; undefined when there is none by that id. */
  private adoptFork(id: string): Lease | undefined {
    try {
      const lease = this.options.leases.attach(id, () => this.sessions.delete(id));
      this.sessions.set(id, lease);
      return lease;
    } catch {
      return undefined;
    }
  }

  /** Forgets every HTTP session (their leases end with the server's shutdown). */
  close(): void {
    this.sessions.clear();
  }
}

/** A refusal as a JSON-RPC error's message (its cause and wire code, as OpenEnv's client shows only the message) and data. */
function wireFailure(error: unknown): [string, Record<string, unknown>] {
  const wire = error instanceof WireError ? error : new WireError('EXECUTION_ERROR', error instanceof Error ? error.message : String(error));
  return [`${wire.message} (${wire.code})`, { ...wire.extra, code: wire.code, retryable: wire.retryable }];
}

type ParsedRequest = { id: string | number | null; method: string; params: Record<string, unknown> } | (RpcResponse & { error: unknown });

/** Checks a JSON-RPC request as OpenEnv's `JsonRpcRequest` model does (no other fields; params an object). */
function parseRequest(body: unknown): ParsedRequest {
  const invalid = (message: string, id: string | number | null = null) => ({ jsonrpc: '2.0' as const, id, error: { code: RPC_ERRORS.invalidRequest, message: `Invalid request: ${message}` } });
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return invalid('a request is a JSON object');
  const { jsonrpc, method, params, id, ...rest } = body as Record<string, unknown>;
  const goodId = typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
  if (id !== undefined && id !== null && goodId === null) return invalid('id must be a string or an integer');
  if (jsonrpc !== '2.0') return invalid('jsonrpc must be "2.0"', goodId);
  if (typeof method !== 'string') return invalid('method must be a string', goodId);
  const extra = Object.keys(rest);
  if (extra.length > 0) return invalid(`unexpected fields ${extra.map((key) => JSON.stringify(key.slice(0, 64))).join(', ')}`, goodId);
  if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) {
    return { jsonrpc: '2.0', id: goodId, error: { code: RPC_ERRORS.invalidParams, message: 'Params must be an object' } };
  }
  return { id: goodId, method, params: (params ?? {}) as Record<string, unknown> };
}
