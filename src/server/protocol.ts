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
  // The checkpoint extension's (docs/server.md#checkpoint-and-fork-an-extension): sent only in reply to its messages.
  'CHECKPOINT_UNSUPPORTED',
  'CHECKPOINT_REFUSED',
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
  CHECKPOINT_UNSUPPORTED: false,
  CHECKPOINT_REFUSED: false,
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

/**
 * An action: one required string field, so trainers can map raw model text to it, and
 * OpenEnv's `metadata` (every OpenEnv `Action` has it; the env does not read it).
 */
export interface ActionData {
  code: string;
  metadata?: Record<string, unknown>;
}

/**
 * OpenEnv's tool-calling actions (`ListToolsAction`, `CallToolAction`): what its
 * `MCPToolClient` sends as `step` data over `/ws` in its default mode.
 */
export type ToolAction = { type: 'list_tools' } | { type: 'call_tool'; tool_name: string; arguments: Record<string, unknown> };

/** What a `step` carries: an action, or a tool call standing for one. */
export type StepData = ActionData | ToolAction;

export type ClientMessage =
  | { type: 'reset'; data: ResetData }
  | { type: 'step'; data: StepData }
  | { type: 'state' }
  | { type: 'close' }
  | { type: 'mcp'; data: unknown }
  | { type: 'checkpoint' }
  | { type: 'restore'; data: CheckpointRef }
  | { type: 'release'; data: CheckpointRef }
  | { type: 'fork'; data: ForkData };

export const MESSAGE_TYPES = ['reset', 'step', 'state', 'close', 'mcp', 'checkpoint', 'restore', 'release', 'fork'] as const;

/** A checkpoint of this session, by the id its `checkpoint` reply gave. */
export interface CheckpointRef {
  checkpoint_id: string;
}

/** How many sessions a `fork` makes. */
export interface ForkData {
  n: number;
}

/** The most sessions one `fork` makes (each is a sandbox; the server's capacity bounds them too). */
export const MAX_FORK = 64;

/** Checks `restore` / `release` data. @throws WireError VALIDATION_ERROR. */
export function parseCheckpointRef(data: unknown): CheckpointRef {
  if (!isObject(data) || typeof data.checkpoint_id !== 'string' || data.checkpoint_id === '') {
    throw new WireError('VALIDATION_ERROR', 'restore and release take {"checkpoint_id": string}, the id a checkpoint reply gave');
  }
  refuseOthers(data, ['checkpoint_id'], 'checkpoint data');
  return { checkpoint_id: data.checkpoint_id };
}

/** Checks `fork` data. @throws WireError VALIDATION_ERROR. */
export function parseForkData(data: unknown): ForkData {
  if (!isObject(data) || typeof data.n !== 'number' || !Number.isSafeInteger(data.n) || data.n < 1 || data.n > MAX_FORK) {
    throw new WireError('VALIDATION_ERROR', `fork takes {"n": integer 1–${MAX_FORK}}, the number of sessions to continue this episode in`);
  }
  refuseOthers(data, ['n'], 'fork data');
  return { n: data.n };
}

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

/** Checks an action: `code`, and `metadata` if given; any other field is refused, as /schema says. @throws WireError VALIDATION_ERROR. */
export function parseAction(data: unknown): ActionData {
  if (!isObject(data) || typeof data.code !== 'string') {
    throw new WireError('VALIDATION_ERROR', 'an action is {"code": string}: the "code" field is missing or not a string');
  }
  refuseOthers(data, ['code', 'metadata'], 'an action');
  if (data.metadata === undefined) return { code: data.code };
  if (!isObject(data.metadata)) throw new WireError('VALIDATION_ERROR', 'an action\'s "metadata" must be a JSON object');
  return { code: data.code, metadata: data.metadata };
}

/**
 * Checks `step` data: OpenEnv's tool actions (`{"type": "list_tools"}`, `{"type":
 * "call_tool", "tool_name", "arguments"}`), else an action ({@link parseAction}).
 * @throws WireError VALIDATION_ERROR.
 */
export function parseStepData(data: unknown): StepData {
  if (!isObject(data) || data.type === undefined) return parseAction(data);
  switch (data.type) {
    case 'list_tools':
      refuseOthers(data, ['type', 'metadata'], 'a list_tools action');
      return { type: 'list_tools' };
    case 'call_tool': {
      refuseOthers(data, ['type', 'tool_name', 'arguments', 'metadata'], 'a call_tool action');
      if (typeof data.tool_name !== 'string') throw new WireError('VALIDATION_ERROR', 'a call_tool action needs "tool_name": string');
      const args = data.arguments ?? {};
      if (!isObject(args)) throw new WireError('VALIDATION_ERROR', 'a call_tool action\'s "arguments" must be a JSON object');
      return { type: 'call_tool', tool_name: data.tool_name, arguments: args };
    }
    default:
      throw new WireError('VALIDATION_ERROR', `unknown action type ${JSON.stringify(data.type)}; an action is {"code": string}, {"type": "list_tools"} or {"type": "call_tool", ...}`);
  }
}

function refuseOthers(data: Record<string, unknown>, allowed: readonly string[], what: string): void {
  const extra = Object.keys(data).filter((key) => !allowed.includes(key));
  if (extra.length > 0) {
    throw new WireError('VALIDATION_ERROR', `${what} admits only ${allowed.map((key) => `"${key}"`).join(', ')}; got ${extra.map((key) => JSON.stringify(key.slice(0, 64))).join(', ')}`);
  }
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
      return { type, data: parseStepData(value.data) };
    case 'state':
    case 'close':
      return { type };
    case 'mcp':
      return { type, data: value.data };
    case 'checkpoint':
      return { type };
    case 'restore':
    case 'release':
      return { type, data: parseCheckpointRef(value.data) };
    case 'fork':
      return { type, data: parseForkData(value.data) };
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

/** OpenEnv's `ListToolsObservation` / `CallToolObservation` in a step reply (a tool action's answer). */
export interface ToolObservationReply {
  observation: Record<string, unknown>;
  reward: number | null;
  done: boolean;
}

/**
 * `reply` cut to at most `limit` bytes of JSON: when the whole would be larger, the
 * observation's `output` is cut (at a character boundary) until it fits, and
 * `info.output_truncated` says how many bytes it had. Reward, done and every other field
 * are kept. The cap on every frame the server sends (`--max-message-bytes`).
 */
export function capReply(reply: ObservationReply, limit: number): ObservationReply {
  const { output } = reply.observation;
  // Fast path without serializing the output: a character takes at most 6 bytes of JSON.
  const rest = Buffer.byteLength(JSON.stringify({ ...reply, observation: { ...reply.observation, output: '' } }));
  if (rest + 6 * output.length <= limit) return reply;
  if (rest + Buffer.byteLength(JSON.stringify(output)) - 2 <= limit) return reply;
  const outputBytes = Buffer.byteLength(output);
  const marker = { original_bytes: outputBytes, limit_bytes: limit };
  const withOutput = (text: string): ObservationReply => ({ ...reply, observation: { ...reply.observation, output: text, info: { ...reply.observation.info, output_truncated: marker } } });
  // A prefix that fits has at most `limit` characters; JSON escaping can make one take up to 6
  // bytes, so the longest prefix that fits is searched for (log2(limit) tries).
  let low = 0;
  let high = Math.min(output.length, limit);
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (Buffer.byteLength(JSON.stringify(withOutput(output.slice(0, mid)))) <= limit) low = mid;
    else high = mid - 1;
  }
  // Never end on half a surrogate pair.
  const end = low > 0 && /[\uD800-\uDBFF]/.test(output[low - 1]!) ? low - 1 : low;
  return withOutput(output.slice(0, end));
}

export interface StateReply {
  episode_id: string | null;
  step_count: number;
  env: string;
  task_id: number | null;
}

/** A checkpoint made: its id (for restore and release, in this session only), the step it saved, and what it carries and dropped. */
export interface CheckpointReply {
  checkpoint_id: string;
  episode_id: string | null;
  step_count: number;
  info: {
    layer: { paths: number; bytes: number; archive_bytes: number };
    dropped: { processes: string[]; shell_values: readonly string[] };
    duration_ms: number;
    /** An episode carried by replay (python): the actions a restore replays (its `layer` is then all zeros). */
    replay?: { actions: number };
    /** An embedded SQLite episode's database held by the handle, in bytes. */
    database?: { bytes: number };
  };
}

/** The sessions a fork made, each continuing the episode from the step it was forked at. */
export interface ForkReply {
  /** Reach each with `/ws?session_id=…` (or OpenEnv's `session_id` on `/mcp`) before the idle timeout. */
  sessions: { session_id: string; episode_id: string }[];
  step_count: number;
}

export type ServerMessage =
  | { type: 'observation'; data: ObservationReply | ToolObservationReply }
  | { type: 'checkpoint'; data: CheckpointReply }
  | { type: 'released'; data: CheckpointRef }
  | { type: 'fork'; data: ForkReply }
  | { type: 'mcp'; data: unknown }
  | { type: 'state'; data: StateReply }
  | { type: 'error'; data: { message: string; code: WireErrorCode; retryable: boolean } & Record<string, unknown> };

export function errorMessage(error: WireError): ServerMessage {
  return { type: 'error', data: { ...error.extra, message: error.message, code: error.code, retryable: error.retryable } };
}

/** JSON Schemas of the action, observation and state (`GET /schema`). */
export const SCHEMAS = {
  action: {
    title: 'Action',
    description: 'What a step carries: a command, or one of OpenEnv\'s tool-calling actions (MCPToolClient\'s default mode).',
    oneOf: [
      {
        type: 'object',
        title: 'CodeAction',
        description: 'A command for the env (a shell command, a SQL query, Python code…), or "submit" / "skip" to end the episode.',
        properties: {
          code: { type: 'string', description: 'The action text, as an agent would type it.' },
          metadata: { type: 'object', description: 'OpenEnv\'s Action metadata: accepted, not read by the env.' },
        },
        required: ['code'],
        additionalProperties: false,
      },
      {
        type: 'object',
        title: 'ListToolsAction',
        properties: { type: { const: 'list_tools' }, metadata: { type: 'object' } },
        required: ['type'],
        additionalProperties: false,
      },
      {
        type: 'object',
        title: 'CallToolAction',
        properties: {
          type: { const: 'call_tool' },
          tool_name: { type: 'string', description: 'reset, execute or submit (see the MCP tools).' },
          arguments: { type: 'object' },
          metadata: { type: 'object' },
        },
        required: ['type', 'tool_name'],
        additionalProperties: false,
      },
    ],
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
