import type { IncomingMessage, ServerResponse } from 'node:http';
import { runStep } from '../env-tools.js';
import { requestContext } from '../operations.js';
import { parseResetData, parseStepData, SCHEMAS, WireError, type WireErrorCode } from '../protocol.js';
import type { SessionLeases } from '../sessions.js';
import type { EpisodeSession } from '../episode-session.js';
import { BodyTooLargeError, readJsonBody, sendJson } from './http-body.js';

export interface ServerMetadata {
  name: string;
  description: string;
  version: string;
  documentation_url?: string;
}

export interface HttpRoutesOptions {
  leases: SessionLeases;
  envName: string;
  metadata: ServerMetadata;
  maxMessageBytes: number;
  /** Sandboxes alive now, for /health (undefined when the env's source cannot tell). */
  sandboxes: () => number | undefined;
}

/** The HTTP status each wire error maps to (OpenEnv answers an invalid action with 422). */
const STATUS: Record<WireErrorCode, number> = {
  INVALID_JSON: 422,
  UNKNOWN_TYPE: 422,
  VALIDATION_ERROR: 422,
  SESSION_ERROR: 409,
  CAPACITY_REACHED: 503,
  FACTORY_ERROR: 503,
  EXECUTION_ERROR: 500,
  // Never raised on these routes (no checkpoint here); a status for completeness.
  CHECKPOINT_UNSUPPORTED: 501,
  CHECKPOINT_REFUSED: 409,
};

/**
 * OpenEnv's HTTP endpoints. `/health`, `/schema`, `/metadata` describe the server.
 * `/reset`, `/step` and `/state` are stateless, as in OpenEnv's reference server: each
 * request leases an env for itself and gives it back before answering — `/reset` returns
 * a new episode's first observation, `/step` resets (to `task_id`/`seed` if the body names
 * them) and runs one action, `/state` is the state of a fresh env. Episodes of several
 * steps use `/ws`.
 */
export class HttpRoutes {
  constructor(private readonly options: HttpRoutesOptions) {}

  /** Whether `path` is one of these routes. */
  handles(path: string): boolean {
    return ['/health', '/schema', '/metadata', '/reset', '/step', '/state'].includes(path);
  }

  async handle(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    const method = request.method ?? 'GET';
    const want = path === '/reset' || path === '/step' ? 'POST' : 'GET';
    if (method !== want) {
      sendJson(response, 405, { detail: `${path} takes ${want}`, code: 'VALIDATION_ERROR' }, { allow: want });
      return;
    }
    try {
      sendJson(response, 200, await this.answer(request, path));
    } catch (error) {
      const wire = error instanceof WireError ? error : new WireError('EXECUTION_ERROR', error instanceof Error ? error.message : String(error));
      sendJson(response, wire instanceof BodyTooLargeError ? 413 : STATUS[wire.code], {
        ...wire.extra,
        detail: wire.message,
        code: wire.code,
        retryable: wire.retryable,
      });
    }
  }

  private async answer(request: IncomingMessage, path: string): Promise<unknown> {
    const { leases, envName, metadata, maxMessageBytes } = this.options;
    switch (path) {
      case '/health': {
        const stats = leases.stats();
        const sandboxes = this.options.sandboxes();
        return { status: 'healthy', active_sessions: stats.active, max_sessions: stats.max, ...(sandboxes === undefined ? {} : { sandboxes }) };
      }
      case '/schema':
        return SCHEMAS;
      case '/metadata':
        return metadata;
      case '/state':
        return { episode_id: null, step_count: 0, env: envName, task_id: null };
      case '/reset': {
        const data = parseResetData(await readJsonBody(request, maxMessageBytes));
        return this.once((session) => session.reset(data));
      }
      default: {
        const body = await readJsonBody(request, maxMessageBytes);
        const action = parseStepData(typeof body === 'object' && body !== null ? (body as { action?: unknown }).action : undefined);
        const data = parseResetData(body && typeof body === 'object' ? pick(body as Record<string, unknown>) : {});
        return this.once(async (session) => {
          await session.reset(data);
          return runStep(requestContext(session), envName, action);
        });
      }
    }
  }

  /** Runs `request` on a lease of its own, ended before the answer goes out. */
  private async once<T>(request: (session: EpisodeSession) => Promise<T>): Promise<T> {
    const { leases } = this.options;
    const lease = leases.open('http', () => undefined);
    try {
      return await leases.run(lease, request);
    } finally {
      await leases.end(lease, 'close');
    }
  }
}

/** The reset fields a stateless `/step` body may carry beside the action. */
function pick(body: Record<string, unknown>): Record<string, unknown> {
  return { seed: body.seed, task_id: body.task_id, episode_id: body.episode_id };
}
