import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { ConfigError } from '../errors.js';
import type { EnvAgentFacts } from '../agents/index.js';
import { authorized, fromThisMachine, isLoopback } from './auth.js';
import type { EnvSlots } from './env-slots.js';
import { ROLLOUTS_PATH_ITEM, RolloutService } from './rollouts/index.js';
import { METRICS_CONTENT_TYPE } from './metrics.js';
import { openApiDocument } from './openapi.js';
import { listenError } from './port-reservation.js';
import { ServerMetrics } from './server-metrics.js';
import { SessionLeases } from './sessions.js';
import { sendJson } from './transports/http-body.js';
import { HttpRoutes, type ServerMetadata } from './transports/http-routes.js';
import type { McpTransport } from './transports/mcp.js';
import { OpenEnvRpc } from './transports/openenv-rpc.js';
import { WebSocketTransport } from './transports/websocket.js';

export interface EnvServerOptions {
  slots: EnvSlots;
  /** The env's prompts and step scoring, for the strategies `POST /rollouts` plays. */
  agentFacts: EnvAgentFacts;
  /** Any host that is not loopback needs a `token` (`serve`'s default: {@link SERVER_DEFAULTS}, as for the fields below). */
  host: string;
  /** 8000 is OpenEnv's; 0 picks a free port. */
  port: number;
  /** Bearer token required on every route but /health (HTTP, WebSocket upgrade, MCP). */
  token?: string;
  /** A session idle this long is ended and its sandbox returned. */
  idleTimeoutMs: number;
  /** WebSocket ping interval; a connection that missed the previous ping is dropped. */
  heartbeatMs: number;
  /** Largest message or request body accepted, and largest frame sent: an observation's output is cut so its reply fits ({@link replyCap}). */
  maxMessageBytes: number;
  metadata: ServerMetadata;
  log: (line: string) => void;
  /** Serve the MCP tools checkpoint, restore, release and fork on `/mcp` (default off; the `/ws` messages are always there). */
  checkpointTools?: boolean;
}

/** The smallest `maxMessageBytes`: room for a reply of 1 KiB twice over, and its envelope. */
export const MIN_MESSAGE_BYTES = 4096;

export const SERVER_DEFAULTS = { host: '127.0.0.1', port: 8000, idleTimeoutMs: 300_000, heartbeatMs: 15_000, maxMessageBytes: 1024 * 1024 } as const;

/**
 * Refuses a host beyond loopback without a token, and a token too short to guess-proof.
 * @throws ConfigError naming --host or --token.
 */
export function checkListening(host: string, token: string | undefined): void {
  if (!isLoopback(host) && !token) {
    throw new ConfigError('--host', `listening on ${host} (not loopback) needs --token: anyone who reaches the port could run code in the sandboxes`);
  }
  if (token !== undefined && token.length < 8) throw new ConfigError('--token', 'must be at least 8 characters');
}

/**
 * `intercode serve`: one node:http server with OpenEnv's routes, its `/ws` sessions and
 * MCP on `/mcp`, all over the same {@link SessionLeases} of one {@link EnvSlots}. It
 * knows nothing of any env's kind.
 */
export class EnvServer {
  readonly leases: SessionLeases;
  /** `POST /rollouts` (see {@link RolloutService}). */
  readonly rollouts: RolloutService;
  /** What `GET /metrics` reports; other parts of the server count into its registry. */
  readonly metrics: ServerMetrics;
  private readonly http: Server;
  private readonly routes: HttpRoutes;
  private readonly ws: WebSocketTransport;
  private readonly mcp: McpTransport;
  private readonly rpc: OpenEnvRpc;
  private readonly openapi: Record<string, unknown>;
  private closing: Promise<void> | undefined;
  private listeningPort = 0;

  private constructor(
    private readonly options: EnvServerOptions,
    Mcp: typeof McpTransport,
  ) {
    const { slots, idleTimeoutMs, maxMessageBytes, heartbeatMs, log, metadata } = options;
    // The metrics read the leases at each scrape; the leases tell the metrics of every episode.
    this.metrics = new ServerMetrics(() => this.leases.stats(), slots);
    this.leases = new SessionLeases(slots, { idleTimeoutMs, maxReplyBytes: replyCap(maxMessageBytes), observer: this.metrics });
    this.routes = new HttpRoutes({ leases: this.leases, envName: slots.envName, metadata, maxMessageBytes, sandboxes: () => slots.sandboxes() });
    const checkpointTools = options.checkpointTools ?? false;
    this.rpc = new OpenEnvRpc({ leases: this.leases, envName: slots.envName, checkpointTools });
    this.rollouts = new RolloutService({ slots, agentFacts: options.agentFacts, maxMessageBytes, version: metadata.version, log, onStreamed: (episodes) => this.metrics.rolloutsStreamed.inc({}, episodes) });
    this.ws = new WebSocketTransport({ leases: this.leases, envName: slots.envName, rpc: this.rpc, maxMessageBytes, heartbeatMs, checkpointTools, log });
    this.mcp = new Mcp({
      leases: this.leases,
      envName: slots.envName,
      version: metadata.version,
      maxMessageBytes,
      checkpointTools,
      otherDialect: async (_request, response, body) => sendJson(response, 200, await this.rpc.answer(body)),
    });
    this.openapi = openApiDocument({ title: metadata.name, description: metadata.description, version: metadata.version }, { '/rollouts': ROLLOUTS_PATH_ITEM });
    this.http = createServer((request, response) => void this.request(request, response));
    this.http.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(request, socket, head));
    this.http.on('clientError', (_error, socket) => socket.destroy());
  }

  /**
   * Starts listening.
   * @throws ConfigError when `host` is not loopback and no token is set, `maxMessageBytes` is
   *   under {@link MIN_MESSAGE_BYTES}, or the port is in use (naming --port).
   */
  static async start(options: EnvServerOptions): Promise<EnvServer> {
    checkListening(options.host, options.token);
    if (!(options.maxMessageBytes >= MIN_MESSAGE_BYTES)) throw new ConfigError('--max-message-bytes', `must be at least ${MIN_MESSAGE_BYTES}`);
    // The MCP SDK (with zod, ajv and hono) loads in ~0.1 s: only a command that serves pays for it.
    const { McpTransport: Mcp } = await import('./transports/mcp.js');
    const server = new EnvServer(options, Mcp);
    await new Promise<void>((resolve, reject) => {
      server.http.once('error', (error) => reject(listenError(error, options.host, options.port) ?? error));
      server.http.listen(options.port, options.host, () => {
        server.http.off('error', reject);
        server.listeningPort = (server.http.address() as AddressInfo).port;
        resolve();
      });
    });
    return server;
  }

  /** The port it listens (or listened) on. */
  get port(): number {
    return this.listeningPort;
  }

  /** `http://host:port` (what OpenEnv clients and `base_url` take). */
  get url(): string {
    const host = this.options.host.includes(':') ? `[${this.options.host}]` : this.options.host;
    return `http://${host}:${this.port}`;
  }

  private async request(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = pathOf(request);
    try {
      if (this.options.token === undefined && !fromThisMachine(request)) {
        sendJson(response, 403, { detail: 'without --token only clients on this machine are served (Host and Origin must be loopback)', code: 'FORBIDDEN' });
        return;
      }
      if (path !== '/health' && !authorized(request, this.options.token)) {
        sendJson(response, 401, { detail: 'missing or wrong bearer token', code: 'UNAUTHORIZED' }, { 'www-authenticate': 'Bearer' });
        return;
      }
      if (this.closing) {
        sendJson(response, 503, { detail: 'the server is shutting down', code: 'SESSION_ERROR' });
        return;
      }
      if (path === '/mcp') await this.mcp.handle(request, response);
      else if (path === '/openapi.json' || path === '/metrics') this.describe(request, response, path);
      else if (path === '/rollouts') await this.rollouts.handle(request, response);
      else if (this.routes.handles(path)) await this.routes.handle(request, response, path);
      else sendJson(response, 404, { detail: `no route ${path}; see GET /openapi.json, /schema, /metadata, /health, /metrics, WebSocket /ws, MCP /mcp, POST /rollouts`, code: 'NOT_FOUND' });
    } catch (error) {
      this.options.log(`intercode serve: ${request.method} ${path} failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!response.headersSent) sendJson(response, 500, { detail: 'internal error', code: 'EXECUTION_ERROR' });
      else response.destroy();
    }
  }

  /** `GET /openapi.json` (the routes) and `GET /metrics` (Prometheus text). */
  private describe(request: IncomingMessage, response: ServerResponse, path: '/openapi.json' | '/metrics'): void {
    if (request.method !== 'GET') {
      sendJson(response, 405, { detail: `${path} takes GET`, code: 'VALIDATION_ERROR' }, { allow: 'GET' });
      return;
    }
    if (path === '/openapi.json') {
      sendJson(response, 200, this.openapi);
      return;
    }
    const text = this.metrics.registry.text();
    response.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE, 'content-length': Buffer.byteLength(text) });
    response.end(text);
  }

  private upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const path = pathOf(request);
    const refuse = (status: string) => {
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    if (path !== '/ws') return refuse('404 Not Found');
    if (this.options.token === undefined && !fromThisMachine(request)) return refuse('403 Forbidden');
    if (!authorized(request, this.options.token)) return refuse('401 Unauthorized');
    if (this.closing) return refuse('503 Service Unavailable');
    this.ws.upgrade(request, socket, head);
  }

  /**
   * Drains: stops accepting, ends every session (`shutdown`; the requests in flight finish),
   * then closes the env slots, which removes every sandbox. Later calls get the same promise.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new Promise<void>((resolve) => this.http.close(() => resolve()));
      await this.leases.shutdown();
      await this.rollouts.close();
      await this.mcp.close();
      this.rpc.close();
      this.ws.close();
      this.http.closeAllConnections();
      await closed;
      await this.options.slots.close();
    })();
    return this.closing;
  }
}

/**
 * The most bytes of JSON an observation reply may take: half the frame limit, less 1 KiB, so
 * that every frame carrying one stays within `maxMessageBytes` (OpenEnv's tool-call result
 * carries the output twice: as MCP content and in `data`).
 */
export function replyCap(maxMessageBytes: number): number {
  return Math.max(1024, Math.floor(maxMessageBytes / 2) - 1024);
}

/**
 * The path of a request's target, without its query. Never throws: the target is the
 * client's bytes (`GET http://[ HTTP/1.1` passes Node's parser but not `new URL`), and a
 * target that is no URL is simply a path no route has.
 */
function pathOf(request: IncomingMessage): string {
  const target = request.url ?? '/';
  if (target.startsWith('/')) return target.split(/[?#]/)[0]!;
  return URL.canParse(target) ? new URL(target).pathname : target;
}
