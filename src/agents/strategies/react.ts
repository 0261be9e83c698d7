import type { EpisodeContext, Turn } from '../../policy/index.js';
import { ChatAgent } from '../chat-agent.js';
import { cleanCode } from '../extract.js';
import { reactObservation, reactQuestion, reactRetry, reactSystem } from '../prompts/templates.js';
import type { EvalProtocol, Move, Strategy, StrategyOptions } from '../strategy.js';

/** Observations are cut to this many characters by default (InterCode's ReAct run did the same). */
const OBSERVATION_LIMIT = 350;

/** The part of a reply before any Observation the model wrote itself. */
const OWN_OBSERVATION = /\n\s*Observation\b/;
const ACTION_LINE = /(?:^|\n)\s*Action(?:\s*\d+)?\s*:\s*([\s\S]*)$/;

/**
 * ReAct: each reply is a Thought and an Action, `execute[code]` or `submit`; the
 * observation is fed back. Only `submit` is scored; at the turn limit the runner submits.
 */
export class ReactStrategy implements Strategy {
  readonly name = 'react';
  readonly protocol: EvalProtocol = { scoring: 'on-submit', stopWhenSolved: false };
  constructor(private readonly options: StrategyOptions) {}
  maxTurns(turns: number): number {
    return turns;
  }
  begin(context: EpisodeContext): ReactAgent {
    return new ReactAgent(context, this.options);
  }
}

/** The action of a ReAct reply: `execute[…]` (to the last `]`) or `submit…`, or null. */
export function parseReactAction(reply: string): { execute: string } | { submit: string } | null {
  const own = OWN_OBSERVATION.exec(reply);
  const text = own ? reply.slice(0, own.index) : reply;
  const line = ACTION_LINE.exec(text)?.[1]?.trim() ?? text.trim();
  if (/^submit\b/i.test(line)) return { submit: line.split('\n')[0]!.trim() };
  const open = line.indexOf('execute[');
  const close = line.lastIndexOf(']');
  if (open === -1 || close < open) return null;
  return { execute: line.slice(open + 'execute['.length, close) };
}

class ReactAgent extends ChatAgent {
  async move(history: readonly Turn[]): Promise<Move> {
    const fresh = this.unseen(history);
    let reply: string;
    if (this.messages.length === 0) {
      this.pin({ role: 'system', content: reactSystem(this.prompt) }, { role: 'user', content: reactQuestion(this.context.query) });
      reply = await this.ask();
    } else {
      const last = fresh.at(-1) ?? history.at(-1);
      reply = await this.ask({ role: 'user', content: reactObservation(last ? this.clip(last.observation, OBSERVATION_LIMIT) : '(no output)') });
    }
    const parsed = parseReactAction(reply);
    if (parsed === null) return { kind: 'invalid', reply, feedback: reactRetry() };
    if ('submit' in parsed) return { kind: 'action', action: parsed.submit, reply };
    const action = cleanCode(parsed.execute, this.prompt.syntax);
    if (action === '') return { kind: 'invalid', reply, feedback: reactRetry() };
    return { kind: 'action', action, reply };
  }
}
