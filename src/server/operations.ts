import type { EpisodeSession } from './episode-session.js';
import { MAX_FORK, WireError } from './protocol.js';
import type { Lease, SessionLeases } from './sessions.js';

/**
 * What a client may ask of its session, one entry per operation: its name, description,
 * arguments and what it runs. Every transport dispatches through this table (OpenEnv's MCP
 * dialect and tool-calling steps, standard MCP, whose input schemas are derived from the
 * same arguments), so an operation is added once and reaches every transport. It knows
 * nothing of transports.
 */

/** One argument of an operation: its JSON type and bounds, and whether it must be given. */
export type OperationArgument = { type: 'integer'; minimum: number; maximum?: number; required: boolean } | { type: 'string'; minLength?: number; required: boolean };

/** Where an operation runs: its session's env, and the server's sessions (a fork takes free ones). */
export interface OperationContext {
  /** Runs `work` on the session's env, in turn with the session's other requests. */
  onSession<T>(work: (session: EpisodeSession) => Promise<T>): Promise<T>;
  /** Continues the session's episode in `n` new sessions. */
  fork(n: number): Promise<unknown>;
}

/** The context of the session `lease` holds. */
export function leaseContext(leases: SessionLeases, lease: Lease): OperationContext {
  return { onSession: (work) => leases.run(lease, work), fork: (n) => leases.fork(lease, n) };
}

/** The context of a request already running on `session` (a stateless HTTP step): its session has no other requests and cannot fork. */
export function requestContext(session: EpisodeSession): OperationContext {
  return {
    onSession: (work) => work(session),
    fork: () => Promise.reject(new WireError('VALIDATION_ERROR', 'a stateless request has no session to fork: use /ws or an MCP session')),
  };
}

export interface Operation {
  readonly name: string;
  /** The checkpoint extension's (`serve --checkpoint-tools`): listed and callable only with it. */
  readonly checkpointExtension: boolean;
  description(envName: string): string;
  readonly arguments: Readonly<Record<string, OperationArgument>>;
  /** Runs with arguments already checked against {@link arguments}: an episode operation answers an ObservationReply, a checkpoint one its reply's data. */
  run(context: OperationContext, args: Readonly<Record<string, unknown>>): Promise<unknown>;
}

/** OpenEnv's `ToolErrorType` values this server uses. */
export type ToolErrorType = 'execution_error' | 'invalid_args' | 'tool_not_found';

/** A call refused before it ran (no such operation, arguments that do not fit). */
export class ToolCallError extends WireError {
  constructor(
    readonly errorType: Exclude<ToolErrorType, 'execution_error'>,
    message: string,
  ) {
    super('VALIDATION_ERROR', message, { error_type: errorType });
  }
}

const index = { type: 'integer', minimum: 0, required: false } as const;
const checkpointId = { type: 'string', minLength: 1, required: true } as const;
const onSession = (context: OperationContext, work: (session: EpisodeSession) => Promise<unknown>) => context.onSession(work);

/** Every operation, in the order tools are listed. */
export const OPERATIONS: readonly Operation[] = [
  {
    name: 'reset',
    checkpointExtension: false,
    description: (envName) => `Start a new ${envName} episode in a clean sandbox. Returns the task's query. task_id: the dataset index (default: a random task, drawn from seed if given).`,
    arguments: { task_id: index, seed: index },
    run: (context, { task_id, seed }) => onSession(context, (session) => session.reset({ ...(task_id === undefined ? {} : { task_id: task_id as number }), ...(seed === undefined ? {} : { seed: seed as number }) })),
  },
  {
    name: 'execute',
    checkpointExtension: false,
    description: (envName) => `Run code in the episode's ${envName} sandbox; returns its output and exit code.`,
    arguments: { code: { type: 'string', required: true } },
    run: (context, { code }) => onSession(context, (session) => session.step({ code: code as string })),
  },
  {
    name: 'submit',
    checkpointExtension: false,
    description: () => "End the episode and get its reward. answer: what the env's submit takes, if anything (the flag in CTF, the function name in Python).",
    arguments: { answer: { type: 'string', required: false } },
    run: (context, { answer }) => onSession(context, (session) => session.step({ code: answer ? `submit ${answer as string}` : 'submit' })),
  },
  {
    name: 'checkpoint',
    checkpointExtension: true,
    description: () => 'Save the episode as it stands (it goes on unchanged). Returns {checkpoint_id, step_count, info}; the id restores it in this session.',
    arguments: {},
    run: (context) => onSession(context, (session) => session.checkpoint()),
  },
  {
    name: 'restore',
    checkpointExtension: true,
    description: () => 'Continue from a checkpoint of this session, as a new episode (the one under way is abandoned). Returns the state.',
    arguments: { checkpoint_id: checkpointId },
    run: (context, { checkpoint_id }) => onSession(context, (session) => session.restore({ checkpoint_id: checkpoint_id as string })),
  },
  {
    name: 'release',
    checkpointExtension: true,
    description: () => 'Release a checkpoint of this session (its files are removed).',
    arguments: { checkpoint_id: checkpointId },
    run: (context, { checkpoint_id }) => onSession(context, async (session) => session.release({ checkpoint_id: checkpoint_id as string })),
  },
  {
    name: 'fork',
    checkpointExtension: true,
    description: () =>
      `Continue the episode in n new sessions (1–${MAX_FORK}; each counts against the server's capacity). Returns {sessions: [{session_id, episode_id}], step_count}: reach each over /ws?session_id=… or OpenEnv's tools/call with session_id.`,
    arguments: { n: { type: 'integer', minimum: 1, maximum: MAX_FORK, required: true } },
    run: (context, { n }) => context.fork(n as number),
  },
];

/** Which operations a server offers: the checkpoint extension's too with `serve --checkpoint-tools`. */
export interface OperationsOptions {
  checkpointTools?: boolean;
}

/** The operations a server with `options` offers, in listing order. */
export function offeredOperations(options: OperationsOptions = {}): Operation[] {
  return OPERATIONS.filter((operation) => !operation.checkpointExtension || options.checkpointTools === true);
}

/**
 * The operation `name` among those offered.
 * @throws ToolCallError tool_not_found for a name not offered (a name every object has, `constructor`, is none).
 */
export function findOperation(name: string, options: OperationsOptions = {}): Operation {
  const offered = offeredOperations(options);
  const operation = offered.find((candidate) => candidate.name === name);
  if (!operation) throw new ToolCallError('tool_not_found', `no tool ${JSON.stringify(name.slice(0, 64))}; the tools are ${offered.map((o) => o.name).join(', ')}`);
  return operation;
}

/**
 * `args` checked against the operation's arguments (absent optional ones left out).
 * @throws ToolCallError invalid_args for an argument it does not take, or one that does not fit.
 */
export function checkedArguments(operation: Operation, args: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { name } = operation;
  const extra = Object.keys(args).filter((key) => !Object.hasOwn(operation.arguments, key));
  if (extra.length > 0) throw new ToolCallError('invalid_args', `${name} takes ${Object.keys(operation.arguments).join(', ') || 'no arguments'}; got ${extra.map((key) => JSON.stringify(key.slice(0, 64))).join(', ')}`);
  const checked: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(operation.arguments)) {
    const value = checkedArgument(name, key, spec, args[key]);
    if (value !== undefined) checked[key] = value;
  }
  return checked;
}

/** Runs `operation` with `args` (checked first) in `context`. @throws ToolCallError before anything runs; the session's WireErrors. */
export function runOperation(context: OperationContext, operation: Operation, args: Readonly<Record<string, unknown>>): Promise<unknown> {
  let checked: Record<string, unknown>;
  try {
    checked = checkedArguments(operation, args);
  } catch (error) {
    return Promise.reject(error);
  }
  return operation.run(context, checked);
}

function checkedArgument(operation: string, key: string, spec: OperationArgument, value: unknown): unknown {
  if (spec.type === 'integer') {
    if ((value === undefined || value === null) && !spec.required) return undefined;
    const inRange = typeof value === 'number' && Number.isSafeInteger(value) && value >= spec.minimum && (spec.maximum === undefined || value <= spec.maximum);
    if (!inRange) throw new ToolCallError('invalid_args', `${operation}: ${key} must be an integer ${spec.maximum === undefined ? `≥ ${spec.minimum}` : `${spec.minimum}–${spec.maximum}`}`);
    return value;
  }
  if (value === undefined && !spec.required) return undefined;
  if (typeof value !== 'string' || value.length < (spec.minLength ?? 0)) throw new ToolCallError('invalid_args', `${operation}: ${key} must be a ${spec.minLength ? 'non-empty ' : ''}string`);
  return value;
}

/** An operation's arguments as a JSON Schema object (what `tools/list` gives). */
export function inputSchema(operation: Operation): Record<string, unknown> {
  const properties = Object.fromEntries(
    Object.entries(operation.arguments).map(([key, spec]) => {
      const { required: _required, ...schema } = spec;
      return [key, schema];
    }),
  );
  const required = Object.entries(operation.arguments).filter(([, spec]) => spec.required).map(([key]) => key);
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' };
}
