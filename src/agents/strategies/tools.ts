import type { EpisodeContext, Turn } from '../../policy/index.js';
import { ChatAgent } from '../chat-agent.js';
import { cleanCode } from '../extract.js';
import type { ToolCall } from '../model/chat-model.js';
import { taskMessage, toolCallError, toolResult, toolSpecs, toolsRetry, toolsSystem } from '../prompts/templates.js';
import type { EvalProtocol, Move, Strategy, StrategyOptions } from '../strategy.js';

/** Observations are cut to this many characters by default (as Try Again). */
const OBSERVATION_LIMIT = 1000;

/**
 * Function calling: the model gets the tools `execute(code)` and `submit(answer?)` through
 * the chat API's `tools` parameter; each call is one turn, run in the order the reply made
 * them; its result goes back as a `tool` message (output, and the reward where the env
 * feeds it back, as Try Again). A reply without a call is an invalid turn answered by a
 * retry message. Scored as Try Again (after every action, ends at reward 1); the turn
 * limit ends the episode (truncated).
 */
export class ToolsStrategy implements Strategy {
  readonly name = 'tools';
  readonly protocol: EvalProtocol = { scoring: 'every-step', stopWhenSolved: true };
  constructor(private readonly options: StrategyOptions) {}
  maxTurns(turns: number): number {
    return turns;
  }
  begin(context: EpisodeContext): ToolsAgent {
    return new ToolsAgent(context, this.options);
  }
}

/** A tool call as the action it stands for, or why it cannot run. */
export function toolCallAction(call: ToolCall, syntax: Parameters<typeof cleanCode>[1]): { action: string } | { problem: string } {
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch {
    return { problem: `the arguments of ${call.name} are not JSON` };
  }
  const record = (args !== null && typeof args === 'object' && !Array.isArray(args) ? args : {}) as Record<string, unknown>;
  if (call.name === 'submit') {
    const answer = typeof record.answer === 'string' ? record.answer.trim() : '';
    return { action: answer === '' ? 'submit' : `submit ${answer}` };
  }
  if (call.name !== 'execute') return { problem: `there is no function "${call.name}"` };
  if (typeof record.code !== 'string') return { problem: 'execute needs a "code" string' };
  const action = cleanCode(record.code, syntax);
  return action === '' ? { problem: 'the code is empty' } : { action };
}

/** What the last turn answered: a tool call (a `tool` message follows) or a reply without one (a user message). */
type Awaiting = { kind: 'call'; id: string; ran: boolean } | { kind: 'retry' } | null;

class ToolsAgent extends ChatAgent {
  private queue: ToolCall[] = [];
  private awaiting: Awaiting = null;

  constructor(context: EpisodeContext, options: StrategyOptions) {
    super(context, options);
    this.tools = toolSpecs(this.prompt);
  }

  async move(history: readonly Turn[]): Promise<Move> {
    this.unseen(history);
    const last = history.at(-1);
    const answers = [];
    if (this.awaiting && last) {
      const reward = this.prompt.feedsReward ? last.reward : null;
      if (this.awaiting.kind === 'call') {
        const output = this.awaiting.ran ? toolResult(this.clip(last.observation, OBSERVATION_LIMIT), reward) : last.observation;
        answers.push({ role: 'tool' as const, toolCallId: this.awaiting.id, content: output });
      } else {
        answers.push({ role: 'user' as const, content: last.observation });
      }
      this.awaiting = null;
    }
    if (this.queue.length > 0) {
      this.tell(...answers);
      return this.next('');
    }
    let reply;
    if (history.length === 0 && answers.length === 0) {
      this.pin({ role: 'system', content: toolsSystem(this.prompt, this.context.turnLimit) }, { role: 'user', content: taskMessage(this.context.query) });
      reply = await this.askReply();
    } else {
      reply = await this.askReply(...answers);
    }
    if (reply.toolCalls.length === 0) {
      this.awaiting = { kind: 'retry' };
      return { kind: 'invalid', reply: reply.content, feedback: toolsRetry() };
    }
    this.queue = [...reply.toolCalls];
    return this.next(reply.content);
  }

  /** The next queued call as a move; a call that cannot run is an invalid turn answered in its own tool message. */
  private next(text: string): Move {
    const call = this.queue.shift()!;
    const reply = `${text}${text ? '\n' : ''}${call.name}(${call.arguments})`;
    const parsed = toolCallAction(call, this.prompt.syntax);
    this.awaiting = { kind: 'call', id: call.id, ran: !('problem' in parsed) };
    if ('problem' in parsed) return { kind: 'invalid', reply, feedback: toolCallError(parsed.problem) };
    return { kind: 'action', action: parsed.action, reply };
  }
}
