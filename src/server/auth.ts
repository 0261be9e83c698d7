import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * Checks a request's `Authorization: Bearer <token>` against `token` in constant time:
 * both sides are hashed first, so neither the length nor any prefix of the token leaks
 * through timing. With no token configured, every request passes.
 */
export function authorized(request: IncomingMessage, token: string | undefined): boolean {
  if (token === undefined) return true;
  const header = request.headers.authorization ?? '';
  const match = /^Bearer (.+)$/i.exec(header);
  const given = createHash('sha256').update(match?.[1] ?? '').digest();
  const expected = createHash('sha256').update(token).digest();
  // Compared even when the header is malformed, so that case takes as long as a wrong token.
  return timingSafeEqual(given, expected) && match !== null;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Whether `host` only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * The hostname of a Host header (`[::1]:8000` → `::1`) or an Origin (`http://localhost:3000`
 * → `localhost`); undefined when it has none. A Host is never parsed as a URL of its own:
 * `localhost:8000` would read as scheme `localhost:` with no hostname.
 */
function hostnameOf(value: string, kind: 'host' | 'origin'): string | undefined {
  const text = kind === 'host' ? `http://${value}` : value;
  return URL.canParse(text) ? new URL(text).hostname.replace(/^\[(.*)\]$/, '$1') : undefined;
}

/**
 * Whether a request comes from a client on this machine rather than from a web page the
 * user's browser is showing: its `Host` names a loopback address (a DNS-rebinding page sends
 * its own name) and its `Origin`, when a browser sent one, is a loopback page too. What a
 * server without a token asks of every request (a browser sends no bearer token to a
 * WebSocket, so with a token such a page gets 401 anyway).
 */
export function fromThisMachine(request: IncomingMessage): boolean {
  const host = hostnameOf(request.headers.host ?? '', 'host');
  if (host === undefined || !isLoopback(host)) return false;
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  const page = hostnameOf(origin, 'origin');
  return page !== undefined && isLoopback(page);
}
