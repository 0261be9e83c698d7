import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { runStep } from '../env-tools.js';
import { leaseContext } from '../operations.js';
import { errorMessage, parseClientMessage, WireError, type ServerMessage } from '../protocol.js';
import type { EndReason, Lease, SessionLeases } from '../sessions.js';
import type { OpenEnvRpc } from './openenv-rpc.js';

export interface WebSocketTransportOptions {
  leases: SessionLeases;
  envName: string;
  /** Answers `{"type": "mcp"}` messages (OpenEnv's MCP JSON-RPC over the session's own env). */
  rpc: OpenEnvRpc;
  /** A text message longer than this gets VALIDATION_ERROR (the session stays open). */
  maxMessageBytes: number;
  /** Every this often each connection is pinged; one that has not answered the previous ping is dropped. */
  heartbeatMs: number;
  /** Step actions may also list and call the checkpoint extension's tools (`serve --checkpoint-tools`). */
  checkpointTools: boolean;
  log: (line: string) => void;
}

/** WebSocket close codes the server uses, besides 1000 (normal) and 1001 (going away). */
export const CLOSE_CODES = { capacity: 1013, idle: 4000, noSuchSession: 4004 } as const;

/**
 * OpenEnv's `/ws`: one connection is one session (one {@link Lease}). Messages are handled
 * in order; each gets exactly one reply (`close` gets none: the connection closes). A
 * connection that stops answering pings (half-open, its peer gone without a FIN) is
 * terminated, and any way a connection ends — close frame, TCP reset, missed heartbeat —
 * ends its lease, which returns the sandbox at once.
 */
export class WebSocketTransport {
  private readonly wss: WebSocketServer;
  /** Pings each connection has let pass unanswered (no pong, no message since). */
  private readonly unanswered = new WeakMap<WebSocket, number>();
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly options: WebSocketTransportOptions) {
    // Frames past 4× the limit are not even buffered: ws closes the connection with 1009.
    this.wss = new WebSocketServer({ noServer: true, maxPayload: options.maxMessageBytes * 4, perMessageDeflate: false });
    this.wss.on('connection', (ws, request: IncomingMessage) => this.accept(ws, request));
    this.heartbeat = setInterval(() => this.ping(), options.heartbeatMs);
    this.heartbeat.unref();
  }

  /** Takes over an HTTP upgrade request (already authorized) for `/ws`. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(request, socket, head, (ws) => this.wss.emit('connection', ws, request));
  }

  private accept(ws: WebSocket, request: IncomingMessage): void {
    const owner = `ws ${request.socket.remoteAddress ?? '?'}:${request.socket.remotePort ?? '?'}`;
    this.unanswered.set(ws, 0);
    ws.on('pong', () => this.unanswered.set(ws, 0));
    // `/ws?session_id=…` takes over a session a fork made; plain `/ws` opens a new one.
    const forked = new URLSearchParams((request.url ?? '').split('?')[1] ?? '').get('session_id');
    let lease: Lease;
    try {
      const onEnd = (reason: EndReason) => this.onEnd(ws, reason);
      lease = forked === null ? this.options.leases.open(owner, onEnd) : this.options.leases.attach(forked, onEnd);
    } catch (error) {
      const wire = error instanceof WireError ? error : new WireError('FACTORY_ERROR', String(error));
      send(ws, errorMessage(wire));
      ws.close(wire.code === 'CAPACITY_REACHED' ? CLOSE_CODES.capacity : forked !== null ? CLOSE_CODES.noSuchSession : 1001, wire.code);
      return;
    }
    const drop = () => void this.options.leases.end(lease, 'drop');
    ws.on('close', drop);
    ws.on('error', drop);
    ws.on('message', (data) => {
      this.unanswered.set(ws, 0);
      void this.handle(ws, lease, data);
    });
  }

  private async handle(ws: WebSocket, lease: Lease, data: RawData): Promise<void> {
    const leases = this.options.leases;
    try {
      const size = byteLength(data);
      if (size > this.options.maxMessageBytes) {
        throw new WireError('VALIDATION_ERROR', `the message is ${size} bytes; the limit is ${this.options.maxMessageBytes} (--max-message-bytes)`, {
          limit_bytes: this.options.maxMessageBytes,
        });
      }
      const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8');
      const message = parseClientMessage(text);
      switch (message.type) {
        case 'reset':
          send(ws, { type: 'observation', data: await leases.run(lease, (session) => session.reset(message.data)) });
          return;
        case 'step': {
          const { data } = message;
          const reply = await runStep(leaseContext(leases, lease), this.options.envName, data, { checkpointTools: this.options.checkpointTools });
          send(ws, { type: 'observation', data: reply });
          return;
        }
        case 'state':
          send(ws, { type: 'state', data: await leases.run(lease, async (session) => session.state()) });
          return;
        case 'close':
          await leases.end(lease, 'close');
          return;
        case 'mcp':
          send(ws, { type: 'mcp', data: await this.options.rpc.answer(message.data, lease) });
          return;
        case 'checkpoint':
          send(ws, { type: 'checkpoint', data: await leases.run(lease, (session) => session.checkpoint()) });
          return;
        case 'restore':
          send(ws, { type: 'state', data: await leases.run(lease, (session) => session.restore(message.data)) });
          return;
        case 'release':
          send(ws, { type: 'released', data: await leases.run(lease, async (session) => session.release(message.data)) });
          return;
        case 'fork':
          send(ws, { type: 'fork', data: await leases.fork(lease, message.data.n) });
          return;
      }
    } catch (error) {
      const wire = error instanceof WireError ? error : new WireError('EXECUTION_ERROR', error instanceof Error ? error.message : String(error));
      send(ws, errorMessage(wire));
    }
  }

  private onEnd(ws: WebSocket, reason: EndReason): void {
    switch (reason) {
      case 'close':
        ws.close(1000, 'closed');
        return;
      case 'idle':
        send(ws, errorMessage(new WireError('SESSION_ERROR', 'the session was idle too long (--idle-timeout); its sandbox was returned')));
        ws.close(CLOSE_CODES.idle, 'idle timeout');
        return;
      case 'shutdown':
        ws.close(1001, 'server shutting down');
        return;
      case 'drop':
        ws.terminate();
    }
  }

  /**
   * Pings every connection, and drops one that has answered neither of the last two pings:
   * a pong waiting unread while this process was busy past an interval is not taken for a
   * dead peer (the timer can run before the pong is read), so a live client on a loaded
   * host keeps its session; a half-open one is dropped within three intervals.
   */
  private ping(): void {
    for (const ws of this.wss.clients) {
      const unanswered = this.unanswered.get(ws) ?? 0;
      if (unanswered >= 2) {
        ws.terminate();
        continue;
      }
      this.unanswered.set(ws, unanswered + 1);
      ws.ping();
    }
  }

  /** Stops the heartbeat and terminates every connection still open (their leases end as drops). */
  close(): void {
    clearInterval(this.heartbeat);
    for (const ws of this.wss.clients) ws.terminate();
    this.wss.close();
  }
}

function send(ws: WebSocket, message: ServerMessage): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
}

function byteLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, chunk) => sum + chunk.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}
