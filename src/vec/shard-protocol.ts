import type { MessagePort } from 'node:worker_threads';
import { IntercodeError, type IntercodeErrorCode } from '../errors.js';

/**
 * The messages between a {@link ThreadedEnvs} and one env shard (a piscina worker thread
 * holding some of the envs), over a MessagePort, as structured clones (measured faster
 * than msgpackr for these small messages: docs/vec-and-pool.md). Requests name the env by
 * its index in the shard; every request gets exactly one answer with its `id`.
 */

/** Where a shard's envs come from: an export of a compiled module, called in the worker. */
export interface EnvFactorySpec {
  /** A path under dist/ (e.g. `src/vec/shard-factories.js`), or an absolute path. */
  module: string;
  /** The export: `(options, count, firstEnvId) => Promise<TaskEnv[]>`. */
  name: string;
  /** Plain data (structured-cloneable) the factory reads. */
  options: unknown;
}

/** What the main thread hands a worker (piscina's task). */
export interface ShardTask {
  port: MessagePort;
  factory: EnvFactorySpec;
  count: number;
  /** The VecEnv id of the shard's first env (seeds stay distinct across shards). */
  firstEnvId: number;
  /** Pool options for the shard's own warm pool (see vecEnvFor), plain data. */
  pool: { clean?: 'restore' | 'replace'; minIdle?: number; keepWarmMs?: number };
}

export type ShardRequest =
  | { id: number; op: 'reset'; env: number; options: unknown }
  | { id: number; op: 'step'; env: number; action: string }
  | { id: number; op: 'peekScore'; env: number; submission: string | undefined }
  /** The env's TaskEnv.goldDurationMs (undefined where it keeps none). */
  | { id: number; op: 'goldDurationMs'; env: number; task: unknown }
  /** Removes every sandbox of the shard (Ctrl-C); its envs fail from then on. */
  | { id: number; op: 'drain'; timeoutMs: number }
  | { id: number; op: 'close' };

/** A request before the shard's channel numbers it. */
export type ShardRequestBody = ShardRequest extends infer R ? (R extends ShardRequest ? Omit<R, 'id'> : never) : never;

export type ShardAnswer = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SerializedError };

/** The shard's first message: its envs are ready (or could not be made). */
export type ShardHello =
  | { kind: 'ready'; threadId: number; envIds: string[]; tasks: unknown[] }
  | { kind: 'failed'; error: SerializedError };

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  details?: Record<string, unknown>;
}

/** An error as plain data; an {@link IntercodeError} keeps its code and details. */
export function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const out: SerializedError = { name: error.name, message: error.message, ...(error.stack ? { stack: error.stack } : {}) };
  if (error instanceof IntercodeError) {
    out.code = error.code;
    out.details = structuredSafe(error.details);
  }
  return out;
}

/** Details that do not survive structured cloning (functions, class instances with handles) are dropped. */
function structuredSafe(details: Readonly<Record<string, unknown>>): Record<string, unknown> {
  try {
    return structuredClone(details) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/**
 * The error a worker threw, rebuilt on the main thread: an IntercodeError with the same
 * code, details and name where it was one (callers test `code`, never the class), else an
 * Error with the same name and message. The worker's stack is kept.
 */
export function reviveError(serialized: SerializedError): Error {
  const error = serialized.code
    ? new IntercodeError(serialized.code as IntercodeErrorCode, serialized.message, { details: serialized.details ?? {} })
    : new Error(serialized.message);
  error.name = serialized.name;
  if (serialized.stack) error.stack = serialized.stack;
  return error;
}
