import type { EpisodeContext, Turn } from '../../policy/index.js';
import { isSolved } from '../../scoring/solved.js';
import { ChatAgent } from '../chat-agent.js';
import { extractAction } from '../extract.js';
import { planExecuteSystem, planRefineSystem, planStep, planSystem, reactQuestion, retryMessage } from '../prompts/templates.js';
import type { EvalProtocol, Move, Strategy, StrategyOptions } from '../strategy.js';

/** Observations are cut to this many characters by default while executing the plan, and while refining. */
const OBSERVATION_LIMIT = 1000;
const REFINE_OBSERVATION_LIMIT = 250;

/**
 * Plan & Solve: the model first writes a numbered plan; then each step is sent to it and
 * its code is run and scored (every step, as InterCode did, without stopping at 1 while
 * the plan runs); when the plan ends without a reward of 1, up to `refineTurns` more turns
 * with the output fed back, stopping at 1. At most `turns` plan steps are carried out.
 */
export class PlanSolveStrategy implements Strategy {
  readonly name = 'plan-solve';
  readonly protocol: EvalProtocol = { scoring: 'every-step', stopWhenSolved: false };
  constructor(private readonly options: StrategyOptions) {}
  maxTurns(turns: number): number {
    return turns + (this.options.refineTurns ?? 0);
  }
  begin(context: EpisodeContext): PlanSolveAgent {
    return new PlanSolveAgent(context, this.options);
  }
}

/** The steps of a numbered plan ("1. …" or "1) …"); lines that follow a step (up to the next) belong to it. */
export function parsePlan(reply: string): string[] {
  const steps: string[] = [];
  let current: string[] | null = null;
  for (const line of reply.split('\n')) {
    const item = /^\s*\d+[.)]\s+(.*)$/.exec(line);
    if (item) {
      if (current) steps.push(current.join('\n').trim());
      current = [item[1]!];
    } else if (current) {
      current.push(line);
    }
  }
  if (current) steps.push(current.join('\n').trim());
  return steps.filter((s) => s !== '');
}

class PlanSolveAgent extends ChatAgent {
  private plan: string[] = [];
  private refining = 0;

  async move(history: readonly Turn[]): Promise<Move> {
    this.unseen(history);
    const last = history.at(-1);
    if (this.messages.length === 0) {
      this.pin({ role: 'system', content: planSystem(this.prompt) }, { role: 'user', content: reactQuestion(this.context.query) });
      this.plan = parsePlan(await this.ask()).slice(0, this.context.turnLimit);
      this.pin({ role: 'system', content: planExecuteSystem(this.prompt) });
    }
    const done = history.length;
    if (done < this.plan.length) {
      const observation = last ? this.clip(last.observation, OBSERVATION_LIMIT) : null;
      return this.code(await this.ask({ role: 'user', content: planStep(this.plan[done]!, observation) }));
    }
    const refineTurns = this.options.refineTurns ?? 0;
    if (!last || this.refining >= refineTurns || isSolved(last.reward)) return { kind: 'stop' };
    const intro = this.refining === 0 ? [{ role: 'system' as const, content: planRefineSystem(this.prompt) }] : [];
    this.refining += 1;
    return this.code(await this.ask(...intro, { role: 'user', content: this.clip(last.observation, REFINE_OBSERVATION_LIMIT) }));
  }

  private code(reply: string): Move {
    const extracted = extractAction(reply, this.prompt.syntax);
    if (extracted.action === null) return { kind: 'invalid', reply, feedback: retryMessage(this.prompt, extracted.problem) };
    return { kind: 'action', action: extracted.action, reply };
  }
}
