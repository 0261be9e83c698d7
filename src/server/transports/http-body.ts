import type { IncomingMessage, ServerResponse } from 'node:http';
import { WireError } from '../protocol.js';

/** A request body larger than the server's message limit. */
export class BodyTooLargeError extends WireError {
  constructor(limit: number) {
    super('VALIDATION_ERROR', `the request body exceeds the limit of ${limit} bytes (--max-message-bytes)`, { limit_bytes: limit });
  }
}

/**
 * Reads a JSON request body of at most `limit` bytes (an empty body is `{}`).
 * @throws BodyTooLargeError past the limit (the rest is not read); WireError INVALID_JSON.
 */
export async function readJsonBody(request: IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > limit) throw new BodyTooLargeError(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLargeError(limit);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new WireError('INVALID_JSON', 'the request body is not valid JSON');
  }
}

/** Sends `body` as JSON with `status`. */
export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}
