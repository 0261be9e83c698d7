/** The env layer's barrel for the harness's own code: the registry, the env contract, the sandbox-backed base env, checkpoints (the public face is src/public/env.ts). */
export { make, registerEnv, registeredEnvIds, envSpec, type EnvSpec } from './registry.js';
export type { Env, ResetOptions, ResetResult, Score, StepInfo, StepOptions, StepResult, TaskEnv } from './types.js';
export { SandboxEnv } from './sandbox-env.js';
export type { EpisodeState, SandboxEnvConfig } from './sandbox-env-types.js';
export { isCheckpointable, isForkable, type CheckpointableEnv, type ForkableEnv } from './types.js';
export { CheckpointStore, DEFAULT_LAYER_LIMITS, type CheckpointInfo, type EpisodeCheckpoint, type SandboxEpisodeState, type ReplayedEpisodeState, type ReplayObserver } from './checkpoint/index.js';
