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
