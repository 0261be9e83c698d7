/** LLM rollouts for RL: rollout records (dialogue, tokens, groups), trainer formats (hf-messages, ATIF) and the way back to InterCode's logs. */
export { buildRecord, ROLLOUT_FORMAT, type GroupInfo, type PolicyVersion, type RecordInput, type RolloutRecord, type SampleInfo, type WireMessage } from './record.js';
export { tokenRecord, type EpisodeTokens, type TokenRecord, type TokenTurn } from './token-record.js';
export { groupAdvantages, type GroupStats } from './groups.js';
export { toHfMessages, type HfMessagesLine } from './hf-messages.js';
export { ATIF_VERSION, toAtif, type AtifStep, type AtifToolCall, type AtifTrajectory, type AtifTurn } from './atif.js';
export { formatRecord, parseRolloutFormat, readRolloutRecords, ROLLOUT_FORMATS, type RolloutFormat } from './formats.js';
export { FLOAT_KEYS, jsonLine } from './json-line.js';
export { readEpisodeTurns, toIntercodeLayout, type EpisodeTurns } from './intercode-layout.js';
export { sampleGroups, type SampleOptions } from './sampler.js';
export { RolloutFile, type RolloutSettings } from './rollout-file.js';
export { BranchingModel, sampleBranchedGroups, type BranchedRecord, type BranchInfo, type BranchSampleOptions } from './branch-sampler.js';
