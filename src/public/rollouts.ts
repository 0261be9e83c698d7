/**
 * `intercode-ts/rollouts`: an RL trainer's data. K samples per task as records with token
 * ids, groups and their advantages, branching from one episode's prefix, and the formats
 * records are written in.
 */
export { sampleGroups, type SampleOptions } from '../rollouts/sampler.js';
export { sampleBranchedGroups, type BranchedRecord, type BranchSampleOptions } from '../rollouts/branch-sampler.js';
export type { RolloutRecord } from '../rollouts/record.js';
export type { TokenRecord, TokenTurn } from '../rollouts/token-record.js';
export { groupAdvantages, type GroupStats } from '../rollouts/groups.js';
export { formatRecord, readRolloutRecords, ROLLOUT_FORMATS, type RolloutFormat } from '../rollouts/formats.js';
export { toAtif, type AtifTrajectory } from '../rollouts/atif.js';
export { toHfMessages, type HfMessagesLine } from '../rollouts/hf-messages.js';
