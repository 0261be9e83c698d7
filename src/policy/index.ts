export type { Agent, EpisodeContext, Policy, Turn } from './types.js';
export { rollout, type Rollout, type RolloutOptions } from './rollout.js';
export { GoldPolicy } from './gold-policy.js';
