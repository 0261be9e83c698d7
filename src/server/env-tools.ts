import type { EpisodeSession } from './episode-session.js';
import { MAX_FORK, WireError, type ObservationReply, type StepData, type ToolAction, type ToolObservationReply } from './protocol.js';
import type { Lease, SessionLeases } from './sessions.js';

/**
 * The env's tools as OpenEnv's MCP dialect lists and calls them (its `/mcp` JSON-RPC and
 * its tool-calling `step` actions over `/ws`): `reset`, `execute`, `submit`, the same tools,
 * with the same input schemas, as standard MCP on `/mcp` serves (a test holds the two lists
 * equal). It knows nothing of transports.
 */

/** A tool as `tools/list` gives it. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** OpenEnv's `ToolErrorType` values this server uses. */
export type ToolErrorType = 'execution_error' | 'invalid_args' | 'tool_not_found';

/** A tool call refused before it ran (no such tool, arguments that do not fit). */
export class ToolCallError extends WireError {
  constructor(
    readonly errorType: Exclude<ToolErrorType, 'execution_error'>,
    message: string,
  ) {
    super('VALIDATION_ERROR', message, { error_type: errorType });
  }
}

const index = { type: 'integer', minimum: 0 };

/** Which tools a server lists: the checkpoint extension's too with `serve --checkpoint-tools`. */
export interface ToolsOptions {
  checkpointTools?: boolean;
}

/** The tools of an env named `envName`. */
export function envTools(envName: string, options: ToolsOptions = {}): ToolSpec[] {
  return [...episodeTools(envName), ...(options.checkpointTools ? CHECKPOINT_TOOLS : [])];
}

function episodeTools(envName: string): ToolSpec[] {
  return [
    {
      name: 'reset',
      description: `Start a new ${envName} episode in a clean sandbox. Returns the task's query. task_id: the dataset index (default: a random task, drawn from seed if given).`,
      inputSchema: schema({ task_id: index, seed: index }, []),
    },
    {
      name: 'execute',
      description: `Run code in the episode's ${envName} sandbox; returns its output and exit code.`,
      inputSchema: schema({ code: { type: 'string' } }, ['code']),
    },
    {
      name: 'submit',
      description: "End the episode and get its reward. answer: what the env's submit takes, if anything (the flag in CTF, the function name in Python).",
      inputSchema: schema({ answer: { type: 'string' } }, []),
    },
  ];
}

function schema(properties: Record<string, Record<string, unknown>>, required: string[]): Record<string, unknown> {
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' };
}

const checkpointId = { type: 'string', minLength: 1 };

/**
 * The checkpoint extension's tools (docs/server.md): the same work as the `/ws` messages of
 * those names, its reply as the tool's data. Every dialect lists them with these
 * descriptions and schemas (standard MCP with zod ones of the same shape).
 */
export const CHECKPOINT_TOOLS: readonly ToolSpec[] = [
  {
    name: 'checkpoint',
    description: 'Save the episode as it stands (it goes on unchanged). Returns {checkpoint_id, step_count, info}; the id restores it in this session.',
    inputSchema: schema({}, []),
  },
  {
    name: 'restore',
    description: 'Continue from a checkpoint of this session, as a new episode (the one under way is abandoned). Returns the state.',
    inputSchema: schema({ checkpoint_id: checkpointId }, ['checkpoint_id']),
  },
  {
    name: 'release',
    description: 'Release a checkpoint of this session (its files are removed).',
    inputSchema: schema({ checkpoint_id: checkpointId }, ['checkpoint_id']),
  },
  {
    name: 'fork',
    description: `Continue the episode in n new sessions (1–${MAX_FORK}; each counts against the server's capacity). Returns {sessions: [{session_id, episode_id}], step_count}: reach each over /ws?session_id=… or OpenEnv's tools/call with session_id.`,
    inputSchema: schema({ n: { type: 'integer', minimum: 1, maximum: MAX_FORK } }, ['n']),
  },
];

/** Whether `name` is one of {@link CHECKPOINT_TOOLS}. */
export function isCheckpointTool(name: string): boolean {
  return CHECKPOINT_TOOLS.some((tool) => tool.name === name);
}

/** A checkpoint tool's description, as every dialect gives it. */
export function checkpointToolDescription(name: 'checkpoint' | 'restore' | 'release' | 'fork'): string {
  return CHECKPOINT_TOOLS.find((tool) => tool.name === name)!.description;
}

/**
 * Runs checkpoint tool `name` with `args` for the session `lease` holds: the work of the
 * `/ws` message of that name (a fork takes free sessions of the server's capacity).
 * @returns the reply's data. @throws ToolCallError (tool_not_found, invalid_args) before anything runs; the session's WireErrors.
 */
export async function callCheckpointTool(leases: SessionLeases, lease: Lease, name: string, args: Record<string, unknown>): Promise<unknown> {
  const spec = CHECKPOINT_TOOLS.find((tool) => tool.name === name);
  if (!spec) throw new ToolCallError('tool_not_found', `no tool ${JSON.stringify(name.slice(0, 64))}`);
  const allowed = Object.keys((spec.inputSchema as { properties: Record<string, unknown> }).properties);
  const extra = Object.keys(args).filter((key) => !allowed.includes(key));
  if (extra.length > 0) throw new ToolCallError('invalid_args', `${name} takes ${allowed.join(', ') || 'no arguments'}; got ${extra.map((key) => JSON.stringify(key.slice(0, 64))).join(', ')}`);
  const id = (): string => {
    const value = args['checkpoint_id'];
    if (typeof value !== 'string' || value === '') throw new ToolCallError('invalid_args', `${name}: checkpoint_id must be a non-empty string`);
    return value;
  };
  switch (name) {
    case 'checkpoint':
      return leases.run(lease, (session) => session.checkpoint());
    case 'restore': {
      const checkpoint_id = id();
      return leases.run(lease, (session) => session.restore({ checkpoint_id }));
    }
    case 'release': {
      const checkpoint_id = id();
      return leases.run(lease, async (session) => session.release({ checkpoint_id }));
    }
    default: {
      const n = args['n'];
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1 || n > MAX_FORK) throw new ToolCallError('invalid_args', `fork: n must be an integer 1–${MAX_FORK}`);
      return leases.fork(lease, n);
    }
  }
}

/** A checkpoint tool's result as OpenEnv's dialect returns it: the reply as JSON text, and as `data`. */
export function checkpointToolResult(data: unknown): Record<string, unknown> {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], isError: false, data };
}

/**
 * A checkpoint tool called as a `step` action over `/ws` (OpenEnv's tool-calling mode), for
 * the session `lease` holds; a failed call is an observation with `error`, as {@link runStep}'s.
 */
export async function runCheckpointToolAction(leases: SessionLeases, lease: Lease, action: Extract<ToolAction, { type: 'call_tool' }>): Promise<ToolObservationReply> {
  try {
    const data = await callCheckpointTool(leases, lease, action.tool_name, action.arguments);
    return { observation: { tool_name: action.tool_name, result: checkpointToolResult(data), error: null, metadata: {} }, reward: null, done: false };
  } catch (error) {
    return { observation: { tool_name: action.tool_name, result: null, error: toolError(error), metadata: {} }, reward: null, done: false };
  }
}

/** Whether a step's data is a call of a checkpoint tool. */
export function isCheckpointToolCall(data: StepData): data is Extract<ToolAction, { type: 'call_tool' }> {
  return isToolAction(data) && data.type === 'call_tool' && isCheckpointTool(data.tool_name);
}

/** Each tool's argument names. */
const TOOL_ARGUMENTS: ReadonlyMap<string, readonly string[]> = new Map([
  ['reset', ['task_id', 'seed']],
  ['execute', ['code']],
  ['submit', ['answer']],
]);

/**
 * Runs tool `name` with `args` on `session` (what each tool does: the same as the standard
 * MCP tools).
 * @throws ToolCallError (tool_not_found, invalid_args) before anything runs; the session's WireErrors.
 */
export async function callTool(session: EpisodeSession, name: string, args: Record<string, unknown>): Promise<ObservationReply> {
  // A Map, not an object: `constructor`, `__proto__`, `toString` are properties of every object.
  const names = TOOL_ARGUMENTS.get(name);
  if (!names) throw new ToolCallError('tool_not_found', `no tool ${JSON.stringify(name.slice(0, 64))}; the tools are ${[...TOOL_ARGUMENTS.keys()].join(', ')}`);
  const extra = Object.keys(args).filter((key) => !names.includes(key));
  if (extra.length > 0) throw new ToolCallError('invalid_args', `${name} takes ${names.join(', ')}; got ${extra.map((key) => JSON.stringify(key.slice(0, 64))).join(', ')}`);
  const integer = (key: string): number | undefined => {
    const value = args[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new ToolCallError('invalid_args', `${name}: ${key} must be an integer ≥ 0`);
    return value;
  };
  const text = (key: string, required: boolean): string | undefined => {
    const value = args[key];
    if (value === undefined && !required) return undefined;
    if (typeof value !== 'string') throw new ToolCallError('invalid_args', `${name}: ${key} must be a string`);
    return value;
  };
  switch (name) {
    case 'reset': {
      const task_id = integer('task_id');
      const seed = integer('seed');
      return session.reset({ ...(task_id === undefined ? {} : { task_id }), ...(seed === undefined ? {} : { seed }) });
    }
    case 'execute':
      return session.step({ code: text('code', true)! });
    case 'submit': {
      const answer = text('answer', false);
      return session.step({ code: answer ? `submit ${answer}` : 'submit' });
    }
    default:
      throw new ToolCallError('tool_not_found', `no tool ${JSON.stringify(name.slice(0, 64))}`);
  }
}

/**
 * A tool's result as OpenEnv's dialect returns it: the output as MCP content, and `data`
 * (what OpenEnv's `MCPToolClient.call_tool` returns): the output, reward, done, exit code,
 * task and the step's info.
 */
export function toolCallResult(reply: ObservationReply): Record<string, unknown> {
  const { output, exit_code, task, info } = reply.observation;
  return {
    content: [{ type: 'text', text: output }],
    isError: false,
    data: { output, reward: reply.reward, done: reply.done, exit_code, task_id: task?.task_id ?? null, query: task?.query ?? null, info },
  };
}


/**
 * Runs a step's data on `session`: an action as {@link EpisodeSession.step}, a tool action
 * as OpenEnv's MCP environments answer it (a failed call is an observation with `error`,
 * not an error message, as OpenEnv's server sends it).
 * @throws the session's WireErrors for an action (never for a tool action).
 */
export async function runStep(session: EpisodeSession, envName: string, data: StepData, options: ToolsOptions = {}): Promise<ObservationReply | ToolObservationReply> {
  if (!isToolAction(data)) return session.step(data);
  if (data.type === 'list_tools') {
    const tools = envTools(envName, options).map(({ name, description, inputSchema }) => ({ name, description, input_schema: inputSchema }));
    return { observation: { tools, metadata: {} }, reward: null, done: false };
  }
  try {
    const reply = await callTool(session, data.tool_name, data.arguments);
    return { observation: { tool_name: data.tool_name, result: toolCallResult(reply), error: null, metadata: {} }, reward: reply.reward, done: reply.done };
  } catch (error) {
    return { observation: { tool_name: data.tool_name, result: null, error: toolError(error), metadata: {} }, reward: null, done: false };
  }
}

/** A failed tool call as OpenEnv's observations carry it. */
function toolError(error: unknown): { error_type: ToolErrorType; message: string } {
  const wire = error instanceof WireError ? error : new WireError('EXECUTION_ERROR', error instanceof Error ? error.message : String(error));
  return { error_type: wire instanceof ToolCallError ? wire.errorType : 'execution_error', message: `${wire.message} (${wire.code})` };
}

function isToolAction(data: StepData): data is ToolAction {
  return 'type' in data;
}
