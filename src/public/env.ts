/**
 * `intercode-ts/env`: writing a wrapper or an env of one's own, and using checkpoints and
 * forks. The env contract itself (TaskEnv, reset/step results, make) is the root entry's.
 */
export { TaskEnvWrapper, ForkingTaskEnvWrapper, unwrapped } from '../env/task-env-wrapper.js';
export { EpisodeLogWriter, writeEpisodeLogs, type EpisodeRecordingEnv } from '../env/episode-log-writer.js';
export type { EndedEpisode, EpisodeStep } from '../env/episode-ledger.js';
export { SandboxEnv } from '../env/sandbox-env.js';
export type { EpisodeState, SandboxEnvConfig } from '../env/sandbox-env-types.js';
export { isCheckpointable, isForkable, type CheckpointableEnv, type ForkableEnv } from '../env/types.js';
export { forkEpisode, type CheckpointInfo, type EpisodeCheckpoint } from '../env/checkpoint/index.js';
