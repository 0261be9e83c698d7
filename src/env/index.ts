/** `intercode-ts/env`: the env API — the registry (`make`, `registerEnv`), the env contract and the sandbox-backed base env. */
export { make, registerEnv, registeredEnvIds, envSpec, type EnvSpec } from './registry.js';
export type { Env, ResetOptions, ResetResult, Score, StepInfo, StepOptions, StepResult, TaskEnv } from './types.js';
export { SandboxEnv } from './sandbox-env.js';
export type { EpisodeState, SandboxEnvConfig } from './sandbox-env-types.js';
export { isCheckpointable, isForkable, type CheckpointableEnv, type ForkableEnv } from './types.js';
export { CheckpointStore, DEFAULT_LAYER_LIMITS, type CheckpointInfo, type EpisodeCheckpoint, type SandboxEpisodeState, type ReplayedEpisodeState, type ReplayObserver } from './checkpoint/index.js';
