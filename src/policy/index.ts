export type { Agent, EpisodeContext, Policy, Turn } from './types.js';
export { rollout, type Rollout, type RolloutOptions } from './rollout.js';
export { GoldPolicy } from './gold-policy.js';
export { unscoredRollout, countByReason, describeUnscored, meanOfScored, TURN_LIMIT_REASON, type Unscored } from './unscored.js';
