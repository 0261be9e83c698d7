import { findOperation, inputSchema, offeredOperations, runOperation, ToolCallError, type Operation, type OperationContext, type OperationsOptions, type ToolErrorType } from './operations.js';
import { WireError, type ObservationReply, type StepData, type ToolAction, type ToolObservationReply } from './protocol.js';

/**
 * The env's operations ({@link OPERATIONS}) as OpenEnv's MCP dialect lists and calls them (its
 * `/mcp` JSON-RPC and its tool-calling `step` actions): the same tools, with the same input
 * schemas, as standard MCP on `/mcp` serves (a test holds the two lists equal). It knows
 * nothing of transports.
 */

/** A tool as `tools/list` gives it. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The tools of an env named `envName`. */
export function envTools(envName: string, options: OperationsOptions = {}): ToolSpec[] {
  return offeredOperations(options).map((operation) => ({ name: operation.name, description: operation.description(envName), inputSchema: inputSchema(operation) }));
}

/**
 * An operation's result as OpenEnv's dialect returns it. An episode operation: the output as
 * MCP content, and `data` (what OpenEnv's `MCPToolClient.call_tool` returns): the output,
 * reward, done, exit code, task and the step's info. A checkpoint operation: its reply as
 * JSON text, and as `data`.
 */
export function toolCallResult(operation: Operation, value: unknown): Record<string, unknown> {
  if (operation.checkpointExtension) return { content: [{ type: 'text', text: JSON.stringify(value) }], isError: false, data: value };
  const { observation, reward, done } = value as ObservationReply;
  const { output, exit_code, task, info } = observation;
  return {
    content: [{ type: 'text', text: output }],
    isError: false,
    data: { output, reward, done, exit_code, task_id: task?.task_id ?? null, query: task?.query ?? null, info },
  };
}

/**
 * Runs a step's data in `context`: an action as {@link EpisodeSession.step}, a tool action
 * as OpenEnv's MCP environments answer it (a failed call is an observation with `error`,
 * not an error message, as OpenEnv's server sends it).
 * @throws the session's WireErrors for an action (never for a tool action).
 */
export async function runStep(context: OperationContext, envName: string, data: StepData, options: OperationsOptions = {}): Promise<ObservationReply | ToolObservationReply> {
  if (!isToolAction(data)) return context.onSession((session) => session.step(data));
  if (data.type === 'list_tools') {
    const tools = envTools(envName, options).map(({ name, description, inputSchema: schema }) => ({ name, description, input_schema: schema }));
    return context.onSession(async () => ({ observation: { tools, metadata: {} }, reward: null, done: false }));
  }
  try {
    const operation = findOperation(data.tool_name, options);
    const value = await runOperation(context, operation, data.arguments);
    const reply = operation.checkpointExtension ? { reward: null, done: false } : { reward: (value as ObservationReply).reward, done: (value as ObservationReply).done };
    return { observation: { tool_name: data.tool_name, result: toolCallResult(operation, value), error: null, metadata: {} }, ...reply };
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
