import type { EpisodeContext, Turn } from '../../policy/index.js';
import { ChatAgent } from '../chat-agent.js';
import { extractAction } from '../extract.js';
import { retryMessage, singleTurnSystem, taskMessage } from '../prompts/templates.js';
import type { EvalProtocol, Move, Strategy, StrategyOptions } from '../strategy.js';

/** Single turn: one reply, its action is run and scored, and the episode ends. */
export class SingleTurnStrategy implements Strategy {
  readonly name = 'single-turn';
  readonly protocol: EvalProtocol = { scoring: 'every-step', stopWhenSolved: true };
  constructor(private readonly options: StrategyOptions) {}
  maxTurns(): number {
    return 1;
  }
  begin(context: EpisodeContext): SingleTurnAgent {
    return new SingleTurnAgent(context, this.options);
  }
}

class SingleTurnAgent extends ChatAgent {
  async move(history: readonly Turn[]): Promise<Move> {
    if (history.length > 0) return { kind: 'stop' };
    const reply = await this.ask({ role: 'system', content: singleTurnSystem(this.prompt) }, { role: 'user', content: taskMessage(this.context.query) });
    const extracted = extractAction(reply, this.prompt.syntax);
    if (extracted.action === null) return { kind: 'invalid', reply, feedback: retryMessage(this.prompt, extracted.problem) };
    return { kind: 'action', action: extracted.action, reply };
  }
}
