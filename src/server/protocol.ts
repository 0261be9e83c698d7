/**
 * OpenEnv's wire protocol as data: the messages a client sends, the replies the server
 * sends, the fixed error codes, and the JSON Schemas `GET /schema` serves. Nothing here
 * touches a socket or an env; transports parse with {@link parseClientMessage} and reply
 * with the builders below. The facts are those of OpenEnv's `env_server/types.py` (see
 * docs/server.md).
 */

/** OpenEnv's WebSocket error codes, the only ones the server sends. */
export const WIRE_ERROR_CODES = [
  'INVALID_JSON',
  'UNKNOWN_TYPE',
  'VALIDATION_ERROR',
  'EXECUTION_ERROR',
  'CAPACITY_REACHED',
  'FACTORY_ERROR',
  'SESSION_ERROR',
] as const;
export type WireErrorCode = (typeof WIRE_ERROR_CODES)[number];

/** Whether retrying the same request later can succeed (infrastructure), or the request itself was wrong. */
const RETRYABLE: Record<WireErrorCode, boolean> = {
  INVALID_JSON: false,
  UNKNOWN_TYPE: false,
  VALIDATION_ERROR: false,
  EXECUTION_ERROR: true,
  CAPACITY_REACHED: true,
  FACTORY_ERROR: true,
  SESSION_ERROR: false,
};

/**
 * A request the server refuses, with its wire code: thrown by the session and message
 * parsing code, turned into an `error` reply (WebSocket), an HTTP status, or an MCP tool
 * error by the transport. The session stays usable after any of them.
 */
export class WireError extends Error {
  readonly retryable: boolean;
  constructor(
    readonly code: WireErrorCode,
    message: string,
    readonly extra: Readonly<Record<string, unknown>> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
    this.retryable = RETRYABLE[code];
  }
}

/** What a client asks for `reset`: every field optional; unknown extra fields are ignored (OpenEnv passes them on). */
export interface ResetData {
  seed?: number;
  episode_id?: string;
  task_id?: number;
}

/** An action: one required string field, so trainers can map raw model text to it. */
export interface ActionData {
  code: string;
}

export type ClientMessage =
  | { type: 'reset'; data: ResetData }
  | { type: 'step'; data: ActionData }
  | { type: 'state' }
  | { type: 'close' }
  | { type: 'mcp'; data: unknown };

export const MESSAGE_TYPES = ['reset', 'step', 'state', 'close', 'mcp'] as const;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The longest `episode_id` accepted (OpenEnv's limit). */
export const MAX_EPISODE_ID = 255;

/**
 * Checks `reset` data. @throws WireError VALIDATION_ERROR naming the field.
 */
export function parseResetData(data: unknown): ResetData {
  if (data === undefined || data === null) return {};
  if (!isObject(data)) throw new WireError('VALIDATION_ERROR', 'reset data must be a JSON object');
  const out: ResetData = {};
  if (data.seed !== undefined && data.seed !== null) {
    if (typeof data.seed !== 'number' || !Number.isSafeInteger(data.seed) || data.seed < 0) {
      throw new WireError('VALIDATION_ERROR', `seed must be an integer ≥ 0, got ${JSON.stringify(data.seed)}`);
    }
    out.seed = data.seed;
  }
  if (data.episode_id !== undefined && data.episode_id !== null) {
    if (typeof data.episode_id !== 'string' || data.episode_id.length > MAX_EPISODE_ID) {
      throw new WireError('VALIDATION_ERROR', `episode_id must be a string of at most ${MAX_EPISODE_ID} characters`);
    }
    out.episode_id = data.episode_id;
  }
  if (data.task_id !== undefined && data.task_id !== null) {
    if (typeof data.task_id !== 'number' || !Number.isSafeInteger(data.task_id) || data.task_id < 0) {
      throw new WireError('VALIDATION_ERROR', `task_id must be an integer ≥ 0, got ${JSON.stringify(data.task_id)}`);
    }
    out.task_id = data.task_id;
  }
  return out;
}

/** Checks an action. @throws WireError VALIDATION_ERROR. */
export function parseAction(data: unknown): ActionData {
  if (!isObject(data) || typeof data.code !== 'string') {
    throw new WireError('VALIDATION_ERROR', 'an action is {"code": string}: the "code" field is missing or not a string');
  }
  return { code: data.code };
}

/**
 * Parses one WebSocket text message.
 * @throws WireError INVALID_JSON (not JSON, or not an object), UNKNOWN_TYPE, VALIDATION_ERROR.
 */
export function parseClientMessage(text: string): ClientMessage {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new WireError('INVALID_JSON', 'the message is not valid JSON');
  }
  if (!isObject(value)) throw new WireError('INVALID_JSON', 'a message must be a JSON object {"type": ..., "data": ...}');
  const type = value.type;
  switch (type) {
    case 'reset':
      return { type, data: parseResetData(value.data) };
    case 'step':
      return { type, data: parseAction(value.data) };
    case 'state':
    case 'close':
      return { type };
    case 'mcp':
      return { type, data: value.data };
    default:
      throw new WireError('UNKNOWN_TYPE', `unknown message type ${JSON.stringify(type)}; expected one of ${MESSAGE_TYPES.join(', ')}`);
  }
}

/** The task an observation names. */
export interface WireTask {
  task_id: number | null;
  query: string;
}

/** What the env returned, in OpenEnv's shape: the observation, with reward and done beside it. */
export interface ObservationReply {
  observation: {
    output: string;
    exit_code: number | null;
    task: WireTask | null;
    info: Record<string, unknown>;
  };
  reward: number | null;
  done: boolean;
}

export interface StateReply {
  episode_id: string | null;
  step_count: number;
  env: string;
  task_id: number | null;
}

export type ServerMessage =
  | { type: 'observation'; data: ObservationReply }
  | { type: 'state'; data: StateReply }
  | { type: 'error'; data: { message: string; code: WireErrorCode; retryable: boolean } & Record<string, unknown> };

export function errorMessage(error: WireError): ServerMessage {
  return { type: 'error', data: { ...error.extra, message: error.message, code: error.code, retryable: error.retryable } };
}

/** JSON Schemas of the action, observation and state (`GET /schema`). */
export const SCHEMAS = {
  action: {
    type: 'object',
    title: 'Action',
    description: 'A command for the env (a shell command, a SQL query, Python code…), or "submit" / "skip" to end the episode.',
    properties: { code: { type: 'string', description: 'The action text, as an agent would type it.' } },
    required: ['code'],
    additionalProperties: false,
  },
  observation: {
    type: 'object',
    title: 'Observation',
    properties: {
      output: { type: 'string', description: 'What the action printed (after reset: the task\'s query).' },
      exit_code: { type: ['integer', 'null'], description: 'The action\'s exit status; null after reset and when nothing ran.' },
      task: {
        type: ['object', 'null'],
        properties: { task_id: { type: ['integer', 'null'] }, query: { type: 'string' } },
        required: ['task_id', 'query'],
      },
      info: { type: 'object', description: 'action_executed, duration_ms, events; score on submit; truncation {reason, message} when cut off.' },
      reward: { type: ['number', 'null'] },
      done: { type: 'boolean' },
    },
    required: ['output', 'exit_code', 'task', 'info'],
  },
  state: {
    type: 'object',
    title: 'State',
    properties: {
      episode_id: { type: ['string', 'null'] },
      step_count: { type: 'integer', minimum: 0 },
      env: { type: 'string' },
      task_id: { type: ['integer', 'null'] },
    },
    required: ['episode_id', 'step_count', 'env', 'task_id'],
  },
} as const;
