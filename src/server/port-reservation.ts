import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '../errors.js';

/**
 * The listen error `error` (from binding `host`:`port`) as the usage error it is, naming the
 * flag to change; undefined for an error that is not about the address.
 */
export function listenError(error: unknown, host: string, port: number): ConfigError | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (code === 'EADDRINUSE') return new ConfigError('--port', `${port}: ${where} is in use by another process; pick another port (--port 0 takes any free one)`);
  if (code === 'EACCES') return new ConfigError('--port', `${port}: binding ${where} is not permitted (ports below 1024 need privileges); pick another port`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new ConfigError('--host', `${host} is not an address of this machine (${code})`);
  return undefined;
}

/** A port held for `serve` while its sandboxes warm: requests meanwhile get 503 and Retry-After. */
export interface PortReservation {
  /** The port held (the one the system chose for port 0). */
  readonly port: number;
  /** Stops holding it, for the server to listen on it at once. */
  release(): Promise<void>;
}

/**
 * Binds `host`:`port` now, before sandboxes warm (which takes seconds to minutes), so a port
 * in use is said at once. Until {@link PortReservation.release}, every request is answered
 * 503 "warming up" with Retry-After, so a client polling /health sees the server coming.
 * @throws ConfigError naming --port (in use, not permitted) or --host (no such address).
 */
export async function reservePort(host: string, port: number): Promise<PortReservation> {
  const holder: Server = createServer((request, response) => {
    request.resume();
    const body = JSON.stringify({ detail: 'intercode serve is warming its sandboxes: try again shortly', code: 'WARMING_UP' });
    response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '2', 'content-length': Buffer.byteLength(body), connection: 'close' });
    response.end(body);
  });
  await new Promise<void>((resolve, reject) => {
    holder.once('error', (error) => reject(listenError(error, host, port) ?? error));
    holder.listen(port, host, () => resolve());
  });
  return {
    port: (holder.address() as AddressInfo).port,
    release: () =>
      new Promise<void>((resolve) => {
        holder.close(() => resolve());
        holder.closeAllConnections();
      }),
  };
}
