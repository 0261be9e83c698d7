/**
 * intercode-ts: interactive coding tasks as RL environments. The root entry holds what a
 * user of the library needs: making envs (by id, or with each env's options), stepping
 * them alone or as a batch, driving episodes, choosing where sandboxes run, and the typed
 * errors. The rest a user imports is under six subpaths, one per kind of work:
 * `intercode-ts/env` (wrappers, checkpoints, an env of one's own), `/server`, `/rollouts`,
 * `/sandbox`, `/agents` and `/eval` (src/public/; the list and the reasons:
 * docs/architecture.md).
 *
 * Importing the package registers the built-in environments, so `make('intercode/bash-v1')`
 * works; it touches no Docker engine until an env is created.
 */
export * from './errors.js';
export { make, registerEnv, registeredEnvIds, envSpec, type EnvSpec } from './env/registry.js';
export type { Env, ResetOptions, ResetResult, Score, StepInfo, StepOptions, StepResult, TaskEnv } from './env/types.js';
export { VecEnv, VecStepError, pooledVecEnv, vecEnvFor, VecEpisodeDriver, type AutoresetMode, type EnvStep, type PooledVecEnvOptions, type VecEnvOptions, type VecStepInfo } from './vec/index.js';
export { loadDataset, type Task } from './datasets/index.js';
export { EpisodeScheduler, type EpisodeSchedulerOptions } from './scheduler/index.js';
export { EngineSet, type EngineSetOptions } from './sandbox/backends/engine-set.js';
export type { ResourceLimits, SandboxSettings } from './sandbox/types.js';
export * from '../envs/library.js';
