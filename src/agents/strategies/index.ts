import { ConfigError } from '../../errors.js';
import type { Strategy, StrategyOptions } from '../strategy.js';
import { PlanSolveStrategy } from './plan-solve.js';
import { ReactStrategy } from './react.js';
import { SingleTurnStrategy } from './single-turn.js';
import { ToolsStrategy } from './tools.js';
import { TryAgainStrategy } from './try-again.js';

/** Every strategy by the name `--strategy` takes. */
export const STRATEGIES: Readonly<Record<string, (options: StrategyOptions) => Strategy>> = {
  'single-turn': (o) => new SingleTurnStrategy(o),
  'try-again': (o) => new TryAgainStrategy(o),
  react: (o) => new ReactStrategy(o),
  'plan-solve': (o) => new PlanSolveStrategy(o),
  tools: (o) => new ToolsStrategy(o),
};

/** @throws ConfigError naming `--strategy` and the known strategies. */
export function createStrategy(name: string, options: StrategyOptions): Strategy {
  const make = STRATEGIES[name];
  if (!make) throw new ConfigError('--strategy', `must be one of ${Object.keys(STRATEGIES).join(', ')}, got "${name}"`);
  return make(options);
}

export { PlanSolveStrategy, parsePlan } from './plan-solve.js';
export { ReactStrategy, parseReactAction } from './react.js';
export { SingleTurnStrategy } from './single-turn.js';
export { TryAgainStrategy } from './try-again.js';
export { ToolsStrategy, toolCallAction } from './tools.js';
