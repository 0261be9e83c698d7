/** Replaying recorded trajectories in new sandboxes, and rescoring them. */
export { replayTrajectories, detectProtocol, REWARD_TOLERANCE, type ReplayOptions, type ReplayReport, type ReplayedStep, type RecordingProtocol } from './replay.js';
export { rescoreEpisodes, type RescoreReport, type RescoredEpisode } from './rescore.js';
