import type { EpisodeContext, Turn } from '../../policy/index.js';
import { ChatAgent } from '../chat-agent.js';
import { extractAction } from '../extract.js';
import { retryMessage, taskMessage, tryAgainFeedback, tryAgainSystem } from '../prompts/templates.js';
import type { EvalProtocol, Move, Strategy, StrategyOptions } from '../strategy.js';

/** Observations are cut to this many characters by default (InterCode's chat policy did the same). */
const OBSERVATION_LIMIT = 1000;

/**
 * Try Again: up to n turns; after each action the model sees its output and, where the
 * env allows, the reward the episode would get if submitted then. The episode ends at
 * reward 1 or at the turn limit.
 */
export class TryAgainStrategy implements Strategy {
  readonly name = 'try-again';
  readonly protocol: EvalProtocol = { scoring: 'every-step', stopWhenSolved: true };
  constructor(private readonly options: StrategyOptions) {}
  maxTurns(turns: number): number {
    return turns;
  }
  begin(context: EpisodeContext): TryAgainAgent {
    return new TryAgainAgent(context, this.options);
  }
}

class TryAgainAgent extends ChatAgent {
  async move(history: readonly Turn[]): Promise<Move> {
    const fresh = this.unseen(history);
    let reply: string;
    if (this.messages.length === 0) {
      this.pin({ role: 'system', content: tryAgainSystem(this.prompt, this.context.turnLimit) }, { role: 'user', content: taskMessage(this.context.query) });
      reply = await this.ask();
    } else {
      const last = fresh.at(-1) ?? history.at(-1);
      const observation = last ? this.clip(last.observation, OBSERVATION_LIMIT) : '(no output)';
      const reward = this.prompt.feedsReward ? (last?.reward ?? 0) : null;
      reply = await this.ask({ role: 'user', content: tryAgainFeedback(this.prompt, observation, reward, this.context.task.query) });
    }
    const extracted = extractAction(reply, this.prompt.syntax);
    if (extracted.action === null) return { kind: 'invalid', reply, feedback: retryMessage(this.prompt, extracted.problem) };
    return { kind: 'action', action: extracted.action, reply };
  }
}
